import type { Static, TObject } from '@sinclair/typebox'
import type {
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
} from 'fastify'
import { expressionBuilder } from 'kysely'
import type {
  Expression,
  ExpressionBuilder,
  Insertable,
  Kysely,
  SelectQueryBuilder,
  SqlBool,
  Transaction,
  Updateable,
} from 'kysely'
import { authHook, canVerifyTokens, checkAuth, checkProtectedRoutes } from './http/auth.js'
import type { ColumnInfo, UpsertElement } from './dialect/dialect.js'
import type { DatabaseFault } from './errors.js'
import type { AnyDatabase, Row } from './sql.js'
import { conflictKeyProblem, rowKeyProblem } from './dialect/shared/catalog.js'
import { containsPattern } from './sql.js'
import { dialectOf } from './dialect/pick-dialect.js'
import { invalidFields, ViewsetErrors } from './errors.js'
import { andThen } from './execution/eventually.js'
import type { Eventually } from './execution/eventually.js'
import type { FieldError } from './errors.js'
import { mergeDuplicates, prefersMergeDuplicates } from './http/prefer-header.js'
import type {
  CheckedSchema,
  ResolvedOptions,
  RowContext,
  ScopedMethod,
  ViewsetMethod,
  ViewsetOptions,
  ViewsetToken,
  WriteMethod,
} from './options.js'
import { checkMethods, resolveOptions } from './options.js'
import { viewsetPlugin } from './http/plugin.js'
import type { ViewsetScope } from './http/plugin.js'
import type { CursorPosition } from './query/cursor.js'
import { encodeCursor } from './query/cursor.js'
import { planFields } from './query/fields.js'
import type { Precondition } from './data/precondition.js'
import { parseListQuery } from './query/list-query.js'
import type { ListQuery } from './query/list-query.js'
import { scopeCondition } from './query/scope.js'
import type { ScopeCondition } from './query/scope.js'
import { createListPlan } from './query/list.js'
import type { ListPlan } from './query/list.js'
import { Statements } from './data/statements.js'
import type { RelatedConfig } from './relations/config.js'
import { checkDefaultRelations } from './relations/default-relations.js'
import { createRelationLoader, relatedConfigOf, relationFields } from './relations/loader.js'
import { carryCancellationThroughUserCode, currentCancellation, withCancellation } from './execution/cancellation.js'
import { TableGateway } from './data/table-gateway.js'
import { representationTag, versionTag } from './http/conditional-requests.js'
import { recordListPage, requestedFields, requestedPrecondition, viewsetRoutes } from './http/routes.js'
import type { RouteHandlers } from './http/routes.js'
import type { JsonSchema } from './schema/derive.js'
import { deriveEntity, deriveSerializerSchema, plain, propertiesOf, writableFields } from './schema/derive.js'
import { viewsetComponents } from './schema/components.js'
import { nameFromPrefix } from './schema/openapi.js'
import { sharedSerializer } from './schema/serializer.js'
import { isRecord } from './schema/object-schema.js'

/** The overridable handlers that run in a request and may await before a query. */
const userHandlers = [
  'list',
  'getElement',
  'createElement',
  'createElements',
  'updateElement',
  'deleteElement',
  'beforeWrite',
] as const

/** A row read through the schema's columns, as the schema types it: the response serializer writes it by that schema.
 * */
function served<S extends TObject> (row: Row): Static<S> {
  return row as Static<S> // selected by the schema's own columns; the driver's value types are coerced on the way out
}

/** {@link served} for a row's promise, or the row. */
function servedEventually<S extends TObject> (row: Eventually<Row>): Eventually<Static<S>> {
  return row as Eventually<Static<S>> // as served()
}

/** The `:id` of an element route: its params schema requires it. */
function idOf (request: FastifyRequest): unknown {
  return isRecord(request.params) ? request.params.id : undefined
}

/** {@link served} for a page (or its promise), without copying it. */
function servedRows<S extends TObject> (rows: Eventually<Row[]>): Eventually<Array<Static<S>>> {
  return rows as Eventually<Array<Static<S>>> // as served(): the schema's own columns
}

/** Kysely's Insertable/Updateable of a table, as the plain row the data layer writes. */
function rowOf (values: object): Row {
  return Object.fromEntries(Object.entries(values))
}

/** The `static listQuery` of a viewset's class (its constructor), when it declares an object schema. */
function listQueryOf (constructor: unknown): JsonSchema | undefined {
  const extra: unknown =
    typeof constructor === 'function' && 'listQuery' in constructor ? constructor.listQuery : undefined
  return isRecord(extra) ? extra : undefined
}

/** The viewset reaches tables by names checked at registration, so it queries through an untyped view of `db`. */
function untyped<DB> (db: Kysely<DB>): AnyDatabase {
  return db as unknown as AnyDatabase // DB is a compile-time map of tables; the instance is the same
}

/** Answers an applied merge: 201 when a row was created, else 200, and says so in `Preference-Applied` (RFC 7240). */
function applyMerge (reply: FastifyReply, created: boolean): void {
  reply.code(created ? 201 : 200).header('preference-applied', mergeDuplicates)
}

/** Path parameters of the element routes, when the schema is not named (`ElementRequest`). */
export interface IdParams {
  id: string | number
}

/**
 * The type of a schema's primary key `id`, as the validated path parameter holds it (a number for an
 * integer key). `string | number` when the schema has no `id` field (a `primaryKey` of another name).
 */
export type IdOf<S extends TObject> = 'id' extends keyof Static<S>
  ? Exclude<Static<S>['id'], undefined | null>
  : IdParams['id']

/** The parameters of LIST every query string has, after validation (their defaults filled in). */
export interface Pagination {
  limit: number
  offset: number
}

/** A LIST query string after validation: `limit` and `offset`, then the fields of `listQuery`. */
export type ValidatedListQuery<Q extends TObject> = {
  [K in keyof (Pagination & Omit<Static<Q>, keyof Pagination>)]: (Pagination & Omit<Static<Q>, keyof Pagination>)[K]
}

/**
 * The request of LIST. `ListRequest<typeof listQuery>` (a TypeBox object) types `request.query` as the
 * validated query: `limit: number`, `offset: number` and the schema's fields. A type literal or an
 * interface is taken as the query's type as written.
 *
 * @example
 * ```ts
 * override async list (request: ListRequest<typeof StockQuery>) {
 *   return await this.query().limit(request.query.limit).execute()
 * }
 * ```
 */
export type ListRequest<Query = Record<string, unknown>> = FastifyRequest<{
  Querystring: Query extends TObject ? ValidatedListQuery<Query> : Query
}>
/** The request of GET and DELETE; `ElementRequest<typeof Item>` types `params.id` as the key's type. */
export type ElementRequest<S extends TObject | undefined = undefined> = FastifyRequest<{
  Params: { id: S extends TObject ? IdOf<S> : IdParams['id'] }
}>
/** The request of POST: the body has every field the schema requires. */
export type CreateRequest<S extends TObject> = FastifyRequest<{ Body: Static<S> }>
/** The request of BULK (`POST /bulk`): an array of POST bodies. */
export type CreateManyRequest<S extends TObject> = FastifyRequest<{ Body: Array<Static<S>> }>
/** The request of PUT and PATCH: `params.id` has the key's type; PATCH may send any subset of the fields. */
export type UpdateRequest<S extends TObject> = FastifyRequest<{ Params: { id: IdOf<S> }; Body: Partial<Static<S>> }>

/** The columns of a table a schema's fields write: what `writable()` returns, for POST (Insertable) or PATCH
 * (Updateable). */
type WritableOf<Values, S extends TObject> = Pick<Values, keyof Static<S> & keyof Values>

/** What the viewset knows once the catalog has been read; built at registration. */
interface Prepared {
  readonly resource: TableGateway
  readonly writable: readonly string[]
  readonly list: ListPlan
}

/** The values `beforeWrite` returned, when they are values. */
function writtenValues (written: unknown): Row {
  if (!isRecord(written)) {
    throw new TypeError(
      `beforeWrite returned ${written === null ? 'null' : typeof written}: it must return the values to write`
    )
  }
  return written
}

/**
 * A REST resource over one table. Subclass it to override a handler, declare extra LIST query
 * parameters (`static listQuery`), or add routes next to the generated ones (`customRoutes`).
 *
 * @example
 * ```ts
 * class ItemViewset extends Viewset<DB, 'items', typeof Item> {
 *   static override listQuery = Type.Object({ search: Type.Optional(Type.String()) })
 *   override async list (request: ListRequest<{ limit: number, offset: number, search?: string }>) {
 *     let query = this.query().orderBy('id').limit(request.query.limit).offset(request.query.offset)
 *     if (request.query.search) query = query.where((eb) => this.contains(eb.ref('name'), request.query.search!))
 *     return await query.execute()
 *   }
 * }
 * await app.register(new ItemViewset({ db, table: 'items', schema: Item }).register(), { prefix: '/items' })
 * ```
 */
export class Viewset<
  DB,
  TB extends keyof DB & string,
  S extends TObject,
  R extends RelatedConfig<DB> = RelatedConfig<DB>
> {
  /** Extra query parameters of LIST, merged over the defaults; validated and documented. */
  static listQuery: TObject | undefined = undefined

  /** The options as given. */
  readonly options: ViewsetOptions<DB, TB, S, R>
  /** The database written to. */
  readonly db: Kysely<DB>
  /** The database LIST and GET read from (`readDb`, else `db`). */
  readonly readDb: Kysely<DB>
  readonly table: TB
  readonly schema: S
  readonly primaryKey: string
  /** The schema fields that are columns (relation fields excluded): the only columns ever selected. */
  readonly columns: readonly string[]
  readonly #resolved: ResolvedOptions
  readonly #relatedConfig: RelatedConfig<unknown> | undefined
  #prepared: Prepared | undefined
  /**
   * The bearer check of the protected methods, for a custom route: 401 without a valid token, `authorize`
   * called with `'CUSTOM'` (403 when it refuses), the claims in `request.viewsetToken`. A custom route with
   * `config: { protected: true }` gets it (and `security` in OpenAPI) without naming it.
   *
   * @example
   * ```ts
   * override customRoutes (fastify: FastifyInstance) {
   *   fastify.get('/export', { onRequest: this.protect }, async (request) => await this.query().execute())
   * }
   * ```
   */
  readonly protect: onRequestAsyncHookHandler
  /** The expression builder handed to `scope`: stateless, so one serves every request. */
  readonly #eb = expressionBuilder<DB, TB>()

  /**
   * Checks the options that need no database (`FST_VIEWSET_INVALID_OPTION` naming the option). At compile
   * time, a schema field that is neither a column nor a relation fails, as with `createViewset`: the
   * relatedConfig is inferred by `new Viewset(options)`; a subclass that names three type parameters lets
   * only object-valued fields stand for relations (the loader checks them at registration).
   */
  constructor (options: ViewsetOptions<DB, TB, S, R> & CheckedSchema<DB, TB, S, R>) {
    this.#resolved = resolveOptions(options)
    const given: ViewsetOptions<DB, TB, S, R> = options
    this.options = Object.freeze({ ...given })
    this.db = options.db
    this.readDb = options.readDb ?? options.db
    this.table = options.table
    this.schema = options.schema
    this.primaryKey = this.#resolved.primaryKey
    // The relation declaration is checked by the loader, whatever tables the DB type names.
    // RelatedConfig is invariant in DB
    this.#relatedConfig = relatedConfigOf(options.relatedConfig as RelatedConfig<unknown> | undefined, options.schema)
    const relations = relationFields(this.#relatedConfig)
    this.columns = Object.freeze(Object.keys(options.schema.properties).filter((field) => !relations.has(field)))
    this.protect = authHook('CUSTOM', this.options)
  }

  /**
   * A Fastify plugin serving the given methods (default: the `methods` option, else all).
   * Register it with `{ prefix }`. Bad method lists throw here, before any route exists.
   */
  register (methods: readonly ViewsetMethod[] = this.#resolved.methods): FastifyPluginAsync {
    const chosen = checkMethods(methods)
    return viewsetPlugin(this.table, async (fastify) => await this.#mount(fastify, chosen))
  }

  // ---- overridable handlers -------------------------------------------------------------------

  /**
   * LIST: a page of rows, parsed from the query string (`parseListQuery`) and read by the data layer. Its
   * route then sets `Link`, `X-Total-Count` and the `?fields=` serializer. An override returns its own rows
   * (typically `await this.query()...execute()`); the route still loads their relations.
   */
  async list (
    request: ListRequest<unknown>,
    _reply: FastifyReply,
    token: ViewsetToken | null
  ): Promise<Array<Static<S>>> {
    return await this.#list(request, token)
  }

  /** The default {@link list}, answered at once where the database answered at once (eventually.ts): the route calls it
   * unless `list` is overridden. */
  #list (request: FastifyRequest, token: ViewsetToken | null): Eventually<Array<Static<S>>> {
    const { resource, list } = this.#ready()
    // Everything a client can get wrong is checked before the first query.
    const query = parseListQuery(isRecord(request.query) ? request.query : {}, list.query)
    const scope = this.#scopeOf(request, token, 'LIST')
    if (query.pagination === 'cursor' || query.count) return this.#listWithExtras(request, query, scope)
    // Recorded first: an error answers a problem, whatever the page says.
    recordListPage(request, { query, total: undefined })
    return servedRows<S>(resource.list(untyped(this.readDb), query, scope))
  }

  /** LIST by cursor, or with the number of matching rows (both read at once). */
  async #listWithExtras (
    request: FastifyRequest,
    query: ListQuery,
    scope: ScopeCondition | undefined
  ): Promise<Array<Static<S>>> {
    const { resource } = this.#ready()
    const db = untyped(this.readDb)
    if (query.pagination === 'cursor') {
      const [page, total] = await Promise.all([
        resource.cursorPage(db, query, scope),
        query.count ? resource.count(db, query, scope) : undefined,
      ])
      const cursor = (position: CursorPosition | undefined) =>
        position === undefined ? undefined : encodeCursor(query.ordering, position)
      recordListPage(request, { query, total, cursors: { next: cursor(page.next), prev: cursor(page.prev) } })
      return servedRows<S>(page.rows)
    }
    const [rows, total] = await Promise.all([resource.list(db, query, scope), resource.count(db, query, scope)])
    recordListPage(request, { query, total })
    return servedRows<S>(rows)
  }

  /** GET: one row (in the scope), or 404. */
  async getElement (request: ElementRequest, _reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>> {
    return await this.#getElement(request, token)
  }

  /** The default {@link getElement}, answered as {@link #list} answers. */
  #getElement (request: FastifyRequest, token: ViewsetToken | null): Eventually<Static<S>> {
    // `?fields=`: only the chosen columns (and the keys of the chosen relations) are read.
    const selection = requestedFields(request)
    const scope = this.#scopeOf(request, token, 'GET')
    const id = idOf(request)
    return andThen(this.#ready().resource.find(untyped(this.readDb), id, { selection, scope }), (row) =>
      row === undefined ? this.notFound(id) : served<S>(row)
    )
  }

  /**
   * POST: inserts what `beforeWrite` makes of the writable fields sent, and returns the row as stored (201,
   * with `Location`). With `conflictFields` and `Prefer: resolution=merge-duplicates`, an upsert: the row
   * with the same values in `conflictFields` gets the fields the body sent (in the PATCH `scope`), and the
   * answer is 200 when it was updated; either way with `Preference-Applied`.
   */
  async createElement (request: CreateRequest<S>, reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>> {
    return await this.#createElement(request, reply, token)
  }

  /** The default {@link createElement}, answered as {@link #list} answers (an upsert through promises). */
  #createElement (request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Eventually<Static<S>> {
    const sent = this.#writable(request.body)
    if (this.#mergesDuplicates(request)) return this.#upsertOne(request, reply, token, sent)
    return andThen(this.#beforeWrite(sent, { request, token, method: 'POST' }), (values) =>
      servedEventually<S>(this.#ready().resource.insert(untyped(this.db), values))
    )
  }

  /** POST with `Prefer: resolution=merge-duplicates`: the upsert of one element. */
  async #upsertOne (
    request: FastifyRequest,
    reply: FastifyReply,
    token: ViewsetToken | null,
    sent: Row
  ): Promise<Static<S>> {
    this.#checkConflictFields([sent], false)
    const scope = currentCancellation()
    const element = await this.#upsertElement(sent, { request, token, method: 'POST' })
    const [written] = await withCancellation(scope, () =>
      this.#ready().resource.upsert(untyped(this.db), [element], this.#scopeOf(request, token, 'PATCH'), false)
    )
    if (written === undefined) throw new Error('an upsert of one element wrote no row')
    applyMerge(reply, written.created)
    return served<S>(written.row)
  }

  /**
   * BULK (`POST /bulk`): inserts what `beforeWrite` makes of the writable fields of each element (method
   * `'BULK'`), all or none, and returns the rows as stored in the order of the elements (201). Only
   * registered when `methods` lists `'BULK'`. With `conflictFields` and `Prefer: resolution=merge-duplicates`,
   * each element is upserted as POST does, and the answer is 201 when at least one row was created, else 200.
   */
  async createElements (
    request: CreateManyRequest<S>,
    reply: FastifyReply,
    token: ViewsetToken | null
  ): Promise<Array<Static<S>>> {
    const bodies: unknown[] = Array.isArray(request.body) ? request.body : []
    const sent = bodies.map((body) => this.#writable(body))
    const context = { request, token, method: 'BULK' } as const
    // The write starts after beforeWrite's awaits: in the request's scope (execution/cancellation.ts).
    const scope = currentCancellation()
    if (!this.#mergesDuplicates(request)) {
      const values: Row[] = []
      for (const fields of sent) values.push(await this.#beforeWrite(fields, context))
      return servedRows<S>(
        await withCancellation(scope, () => this.#ready().resource.insertMany(untyped(this.db), values))
      )
    }
    this.#checkConflictFields(sent, true)
    const elements: UpsertElement[] = []
    for (const fields of sent) elements.push(await this.#upsertElement(fields, context))
    const written = await withCancellation(scope, () =>
      this.#ready().resource.upsert(untyped(this.db), elements, this.#scopeOf(request, token, 'PATCH'), true)
    )
    applyMerge(reply, written.length === 0 || written.some((entry) => entry.created))
    return servedRows<S>(written.map((entry) => entry.row))
  }

  /** Whether this request upserts: `conflictFields` is set and the client prefers `resolution=merge-duplicates` (else
   * the header is ignored, as RFC 7240 says). */
  #mergesDuplicates (request: FastifyRequest): boolean {
    return this.#resolved.conflictFields !== undefined && prefersMergeDuplicates(request.headers.prefer)
  }

  /** A body that merges must send every conflict field, with a value: else a 400 naming each one missing (`email`, or
   * `/3/email` in a bulk body). */
  #checkConflictFields (bodies: readonly Row[], bulk: boolean): void {
    const errors: FieldError[] = []
    bodies.forEach((body, index) => {
      for (const field of this.#resolved.conflictFields ?? []) {
        if (body[field] === undefined || body[field] === null) {
          errors.push({
            in: 'body',
            field: bulk ? `/${index}/${field}` : field,
            message: `is required (not null) with Prefer: ${mergeDuplicates}`,
          })
        }
      }
    })
    if (errors.length > 0) throw invalidFields(errors)
  }

  /**
   * What an upsert writes of a body: `beforeWrite`'s values on insert; on update, only the fields the body
   * sent (as `beforeWrite` left them), never the columns it added (such as an owner).
   */
  async #upsertElement (sent: Row, context: RowContext<WriteMethod>): Promise<UpsertElement> {
    const values = await this.#beforeWrite(sent, context)
    return { values, update: Object.keys(sent).filter((field) => Object.hasOwn(values, field)) }
  }

  /** PUT (`partial` false) and PATCH (`partial` true): updates the row (in the scope) with what `beforeWrite` returns,
   * and returns it, or 404. */
  async updateElement (
    request: UpdateRequest<S>,
    _reply: FastifyReply,
    token: ViewsetToken | null,
    partial: boolean
  ): Promise<Static<S>> {
    return await this.#updateElement(request, token, partial)
  }

  /** The default {@link updateElement}, answered as {@link #list} answers. */
  #updateElement (request: FastifyRequest, token: ViewsetToken | null, partial: boolean): Eventually<Static<S>> {
    const method = partial ? 'PATCH' : 'PUT'
    const id = idOf(request)
    return andThen(this.#beforeWrite(this.#writable(request.body), { request, token, method }), (values) =>
      // If-Match (or requireIfMatch) is checked with the write, after the scope: a 404, 428 or 412 changes nothing.
      andThen(
        this.#ready().resource.update(
          untyped(this.db),
          id,
          values,
          this.#scopeOf(request, token, method),
          requestedPrecondition(request)
        ),
        (row) => (row === undefined ? this.notFound(id) : served<S>(row))
      )
    )
  }

  /** DELETE: removes the row (204), or 404 when there is none in the scope. */
  async deleteElement (request: ElementRequest, _reply: FastifyReply, token: ViewsetToken | null): Promise<void> {
    await this.#deleteElement(request, token)
  }

  /** The default {@link deleteElement}, answered as {@link #list} answers. */
  #deleteElement (request: FastifyRequest, token: ViewsetToken | null): Eventually<void> {
    const scope = this.#scopeOf(request, token, 'DELETE')
    const id = idOf(request)
    return andThen(
      this.#ready().resource.delete(untyped(this.db), id, scope, requestedPrecondition(request)),
      (deleted) => {
        if (!deleted) this.notFound(id)
      }
    )
  }

  /**
   * The row rule of a request: a condition ANDed into every statement that reads or changes rows (LIST and
   * its count, GET, the UPDATE of PUT and PATCH, DELETE), or `undefined` for none. A row outside it answers
   * 404. Calls the `scope` option by default; override it in a subclass instead if you prefer. Bare column
   * names are qualified with the table. `context.request.query` holds LIST's validated query string,
   * `listQuery` parameters included.
   *
   * @example
   * ```ts
   * override scope (eb: ExpressionBuilder<DB, 'items'>, { token, method }: RowContext<ScopedMethod>) {
   *   return method === 'LIST' || method === 'GET' ? undefined : eb('owner', '=', token?.sub ?? null)
   * }
   * ```
   */
  scope (eb: ExpressionBuilder<DB, TB>, context: RowContext<ScopedMethod>): Expression<SqlBool> | undefined {
    return this.options.scope?.(eb, context)
  }

  /**
   * What POST, PUT and PATCH write: receives the writable fields the body sent (for PATCH only those;
   * read-only fields never) after validation, and returns the values to write, which may set read-only
   * fields and columns that are not in the schema. Throw a `ViewsetErrors` error to answer it; nothing is
   * written then. Calls the `beforeWrite` option by default (else returns the values as they are).
   *
   * @example
   * ```ts
   * override beforeWrite (values: Updateable<DB['items']>, { token }: RowContext<WriteMethod>) {
   *   return { ...values, owner: token?.sub }
   * }
   * ```
   */
  beforeWrite (
    values: Updateable<DB[TB]>,
    context: RowContext<WriteMethod>
  ): Updateable<DB[TB]> | Promise<Updateable<DB[TB]>> {
    return this.options.beforeWrite === undefined ? values : this.options.beforeWrite(values, context)
  }

  #scopeOf (request: FastifyRequest, token: ViewsetToken | null, method: ScopedMethod): ScopeCondition | undefined {
    const expression = this.scope(this.#eb, { request, token, method })
    return expression === undefined ? undefined : scopeCondition(untyped(this.db), this.table, expression)
  }

  /** What `beforeWrite` makes of the values, checked: a promise only when it answered one (the default answers at once,
   * and POST and PATCH then await nothing). */
  #beforeWrite (values: Row, context: RowContext<WriteMethod>): Row | Promise<Row> {
    // the writable fields of the schema, which are columns of the table
    const written: unknown = this.beforeWrite(values as Updateable<DB[TB]>, context)
    // Any thenable is awaited, as `await` would; the answer is then a native promise.
    return isRecord(written) && typeof written.then === 'function'
      ? Promise.resolve(written).then(writtenValues)
      : writtenValues(written)
  }

  /** Adds routes next to the generated ones, in the same scope: same prefix, error format and validation. */
  customRoutes (_fastify: FastifyInstance): void | Promise<void> {}

  // ---- helpers for overrides ------------------------------------------------------------------

  /** `SELECT <schema columns> FROM <table>`, typed, to refine and execute. */
  query (db: Kysely<DB> = this.readDb): SelectQueryBuilder<DB, TB, Static<S>> {
    const table: string = this.table
    // names checked against the catalog at registration
    return untyped(db).selectFrom(table).select(this.columns) as unknown as SelectQueryBuilder<DB, TB, Static<S>>
  }

  /** Runs `work` in a transaction; it commits when `work` resolves and rolls back when it throws. */
  async transaction<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return await this.db.transaction().execute(work)
  }

  /** The row with this primary key, or `undefined`. */
  async findById (id: IdOf<S>, db: Kysely<DB> = this.readDb): Promise<Static<S> | undefined> {
    const row = await this.#ready().resource.find(untyped(db), id)
    return row === undefined ? undefined : served<S>(row)
  }

  /**
   * Inserts values and returns the row as stored (generated key and database defaults included).
   *
   * @example
   * ```ts
   * await this.insert({ ...this.writable(request.body), owner: token?.sub ?? null })
   * ```
   */
  async insert (values: Insertable<DB[TB]>, db: Kysely<DB> = this.db): Promise<Static<S>> {
    return served<S>(await this.#ready().resource.insert(untyped(db), rowOf(values)))
  }

  /**
   * Updates one row and returns it as stored, or `undefined` when there is no such row. With a
   * `precondition` (`this.precondition(request)`: the request's If-Match), a stale tag throws the 412
   * and requireIfMatch's 428, checked with the write so that nothing changes.
   *
   * @example
   * ```ts
   * const updated = await this.update(request.params.id, values, this.db, this.precondition(request))
   * return updated ?? this.notFound(request.params.id)
   * ```
   */
  async update (
    id: IdOf<S>,
    values: Updateable<DB[TB]>,
    db: Kysely<DB> = this.db,
    precondition?: Precondition
  ): Promise<Static<S> | undefined> {
    const row = await this.#ready().resource.update(untyped(db), id, rowOf(values), undefined, precondition)
    return row === undefined ? undefined : served<S>(row)
  }

  /** Deletes one row; false when there was none. A `precondition` is checked as `update` checks it. */
  async deleteById (id: IdOf<S>, db: Kysely<DB> = this.db, precondition?: Precondition): Promise<boolean> {
    return await this.#ready().resource.delete(untyped(db), id, undefined, precondition)
  }

  /**
   * The If-Match condition of a PUT, PATCH or DELETE request (`undefined` without one, unless
   * `requireIfMatch`), for an overridden handler to pass to `update` or `deleteById`.
   */
  precondition (request: FastifyRequest): Precondition | undefined {
    return requestedPrecondition(request)
  }

  /**
   * The fields of a body that may be written: read-only fields and relations are dropped. A POST body
   * (`Static<S>`) gives a pick of the table's `Insertable`, which `insert` takes, spread with the table's
   * other required columns; a PATCH body (`Partial<Static<S>>`) a pick of its `Updateable`.
   */
  writable (body: Static<S>): WritableOf<Insertable<DB[TB]>, S>
  writable (body: Partial<Static<S>> | undefined): WritableOf<Updateable<DB[TB]>, S>
  writable (body: Partial<Static<S>> | undefined): Row {
    return this.#writable(body)
  }

  #writable (body: unknown): Row {
    const values: Row = {}
    if (!isRecord(body)) return values
    for (const field of this.#ready().writable) {
      const value = body[field]
      if (value !== undefined) values[field] = value
    }
    return values
  }

  /** A case-insensitive substring match that behaves the same on every dialect (`%` and `_` match themselves). */
  contains (column: Expression<unknown>, term: string): Expression<SqlBool> {
    return this.#ready().resource.dialect.syntax.ilike(column, containsPattern(term))
  }

  /**
   * What a database error means to a client (`unique`, `foreign-key`, `not-null`, `check`, `invalid-value`,
   * `unavailable`), or `undefined`: for answers more precise than the default ones.
   *
   * @example
   * ```ts
   * try { return await this.insert(values) } catch (error) {
   *   if (this.classify(error)?.kind === 'unique') {
   *     throw new ViewsetErrors.Conflict('an item with that name already exists')
   *   }
   *   throw error
   * }
   * ```
   */
  classify (error: unknown): DatabaseFault | undefined {
    return this.#ready().resource.dialect.classify(error)
  }

  /** Throws the 404 problem for this id. */
  notFound (id: unknown): never {
    throw new ViewsetErrors.NotFound(`No row with ${this.primaryKey} = ${String(id)}`)
  }

  // ---- registration ---------------------------------------------------------------------------

  #ready (): Prepared {
    if (this.#prepared === undefined) {
      throw new Error('The viewset is not registered yet: register() it on a Fastify instance first')
    }
    return this.#prepared
  }

  /** Reads the catalog, checks the schema against the table, and builds the data layer and the routes. */
  async #mount (fastify: FastifyInstance, methods: readonly ViewsetMethod[]): Promise<ViewsetScope> {
    const { table, primaryKey, protectedMethods } = this.#resolved
    const schema = this.schema
    checkAuth(fastify, protectedMethods, methods, this.options)
    const db = untyped(this.db)
    const dialect = await dialectOf(db)
    const described = await dialect.catalog.table(db, table)
    if (described === undefined || described.columns.length === 0) throw new ViewsetErrors.UnknownTable(table)
    const catalog = described.columns
    const keyProblem = rowKeyProblem(described, primaryKey, this.options.primaryKey !== undefined, methods)
    if (keyProblem) throw new ViewsetErrors.InvalidOption(keyProblem.option, keyProblem.message)
    const columns = new Map<string, ColumnInfo>(catalog.map((column) => [column.name, column]))
    for (const field of this.columns) {
      if (!columns.has(field)) {
        throw new ViewsetErrors.UnknownColumn(field, table, catalog.map((column) => column.name).join(', '))
      }
    }
    // Handlers and hooks of the user's await where they like before their queries: their scope rides on the promises.
    if (this.options.beforeWrite !== undefined || userHandlers.some((name) => this[name] !== Viewset.prototype[name])) {
      carryCancellationThroughUserCode()
    }
    const config = this.#relatedConfig
    const relations = await createRelationLoader(db, dialect, config, schema, table, primaryKey)
    const name = this.#resolved.name ?? nameFromPrefix(fastify.prefix, table)
    // The version column is the server's, read-only like the key: every update increments it.
    const { versionField, requireIfMatch } = this.#resolved
    const entity = deriveEntity(schema, columns, relationFields(config), name, primaryKey, versionField)
    const { conflictFields } = this.#resolved
    const conflictProblem =
      conflictFields === undefined
        ? undefined
        : conflictKeyProblem(
          described,
          conflictFields,
          writableFields(entity).filter((field) => this.columns.includes(field)),
          dialect.capabilities.upsertOnAnyKey
        )
    if (conflictProblem !== undefined) throw new ViewsetErrors.InvalidOption('conflictFields', conflictProblem)
    // The loader may need keys the schema does not serve; they are selected, never serialized.
    const selected = [...new Set([...this.columns, ...(relations?.parentColumns ?? [])])]
    const statements = new Statements(db, table, primaryKey, selected, dialect)
    const serialized = deriveSerializerSchema(entity)
    // `?fields=` serializers are compiled from the serializer's entity too.
    const defaultRelations = checkDefaultRelations(
      this.options.defaultRelations,
      relations?.fields ?? new Set(),
      entity
    )
    const fields = planFields(serialized, this.columns, selected, relations?.keys ?? new Map(), defaultRelations)
    const list = createListPlan({
      dialect,
      resolved: this.#resolved,
      options: this.options,
      entity,
      columns: this.columns,
      selected,
      fieldsPlan: fields,
      related: { table, links: relations?.links ?? new Map() },
    })
    // A whole row as GET sends it: the bytes a representation's ETag hashes. Compiled now: it writes every field, so a
    // field the serializer cannot write fails at startup.
    const represent = sharedSerializer({ $ref: `${name}#` }, { [name]: { ...serialized, $id: name } }, 'now')
    const tagOf = (row: Row) =>
      versionField === undefined ? representationTag(represent(row)) : versionTag(row[versionField])
    const uniqueKeys = [...(described.primaryKey.length > 0 ? [described.primaryKey] : []), ...described.unique]
    const resource = new TableGateway({
      dialect,
      statements,
      target: { table, primaryKey, columns: selected, catalog: columns },
      relations,
      versioning: { versionField, tagOf, relations: defaultRelations },
      uniqueKeys,
      conflictFields,
    })
    this.#prepared = Object.freeze({ resource, writable: writableFields(entity), list })
    const components = viewsetComponents(entity, name, primaryKey, methods, {
      relations: relations?.fields ?? new Set(),
      loaded: defaultRelations,
    })
    const routes = viewsetRoutes(methods, this.#routeHandlers(this), {
      resource,
      readDb: untyped(this.readDb),
      db,
      entity: { ...entity, $id: name },
      serialized,
      name,
      primaryKey,
      tags: this.#resolved.tags,
      protectedMethods,
      auth: this.options,
      verifiesTokens: canVerifyTokens(fastify, this.options),
      list: this.#listQuerystring(list),
      maxOffset: this.#resolved.maxOffset,
      pagination: this.#resolved.pagination,
      maxBulk: this.#resolved.maxBulk,
      conflictFields,
      fields,
      prefix: fastify.prefix,
      components,
      represent,
      versionField,
      requireIfMatch,
    })
    return {
      schemas: components.schemas,
      routes,
      dialect,
      protect: this.protect,
      customRoutes: async (scope) => {
        await this.customRoutes(scope)
      },
      checkProtectedRoutes: (count) => {
        checkProtectedRoutes(fastify, protectedMethods, count, this.options)
      },
    }
  }

  /**
   * What the routes call: the overridable handlers, except that each one not overridden but `createElements` is its
   * default answered at once where the database answered at once (eventually.ts).
   */
  // `handlers`: this viewset, whose handlers' request types narrow FastifyRequest (the routes validate them).
  #routeHandlers (handlers: RouteHandlers): RouteHandlers {
    return {
      list:
        this.list === Viewset.prototype.list
          ? (request, _reply, token) => this.#list(request, token)
          : (request, reply, token) => handlers.list(request, reply, token),
      getElement:
        this.getElement === Viewset.prototype.getElement
          ? (request, _reply, token) => this.#getElement(request, token)
          : (request, reply, token) => handlers.getElement(request, reply, token),
      createElement:
        this.createElement === Viewset.prototype.createElement
          ? (request, reply, token) => this.#createElement(request, reply, token)
          : (request, reply, token) => handlers.createElement(request, reply, token),
      createElements: (request, reply, token) => handlers.createElements(request, reply, token),
      updateElement:
        this.updateElement === Viewset.prototype.updateElement
          ? (request, _reply, token, partial) => this.#updateElement(request, token, partial)
          : (request, reply, token, partial) => handlers.updateElement(request, reply, token, partial),
      deleteElement:
        this.deleteElement === Viewset.prototype.deleteElement
          ? (request, _reply, token) => this.#deleteElement(request, token)
          : (request, reply, token) => handlers.deleteElement(request, reply, token),
    }
  }

  /**
   * LIST's query string with the subclass's `listQuery` applied over the defaults. An overridden `list`
   * keeps only `limit` and `offset` of the defaults: it would silently ignore `search`, filters, `count` or
   * `fields`. Without an overridden `list`, `listQuery` may only refine parameters the default LIST defines.
   */
  #listQuerystring (list: ListPlan): { querystring: JsonSchema; headers?: Record<string, JsonSchema> } {
    const extra = listQueryOf(this.constructor)
    if (extra === undefined) return list
    const defaults = propertiesOf(list.querystring)
    // Which parameters an overridden `list` reads is its business.
    const own = this.list !== Viewset.prototype.list
    // The default list reads only its own parameters: every other one would be validated, documented and ignored,
    // unless `scope` reads it (from `context.request.query`).
    const scoped = this.scope !== Viewset.prototype.scope || this.options.scope !== undefined
    const unread =
      own || scoped
        ? []
        : Object.keys(propertiesOf(plain(extra))).filter((parameter) => !Object.hasOwn(defaults, parameter))
    if (unread.length > 0) {
      throw new ViewsetErrors.InvalidOption(
        'listQuery',
        `${unread.join(', ')} would be ignored: the default list() reads only ${Object.keys(defaults).join(', ')}. Override list(), or read them in scope()`
      )
    }
    // With cursor pagination there is no `offset`: its `cursor` is kept instead.
    const base = own
      ? Object.fromEntries(
        ['limit', 'offset', 'cursor'].flatMap((key) => (defaults[key] === undefined ? [] : [[key, defaults[key]]]))
      )
      : defaults
    const properties = { ...base, ...propertiesOf(plain(extra)) }
    // The default list's response headers (Link, X-Total-Count) are not documented for an override.
    return { querystring: { ...list.querystring, properties }, ...(own ? {} : { headers: list.headers }) }
  }
}

/**
 * Turns a table and a TypeBox schema into a REST resource: `createViewset(o)` is `new Viewset(o).register(o.methods)`.
 *
 * @example
 * ```ts
 * const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
 * await app.register(createViewset({ db, table: 'items', schema: Item, tags: ['items'] }), { prefix: '/items' })
 * ```
 */
export function createViewset<
  DB,
  TB extends keyof DB & string,
  S extends TObject,
  R extends RelatedConfig<DB> = Record<never, never>
> (options: ViewsetOptions<DB, TB, S, R> & CheckedSchema<DB, TB, S, R>): FastifyPluginAsync {
  return new Viewset<DB, TB, S, R>(options).register(options.methods)
}
