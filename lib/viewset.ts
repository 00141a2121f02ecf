import type { Static, TObject } from '@sinclair/typebox'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
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
import type { Precondition } from './data/precondition.js'
import type { AnyDatabase, DatabaseFault, Row } from './dialect/dialect.js'
import { containsPattern } from './dialect/dialect.js'
import { ViewsetErrors } from './errors.js'
import { authHook, checkProtectedMethods } from './http/auth.js'
import { preconditionOf } from './http/conditional-requests.js'
import { viewsetPlugin } from './http/plugin.js'
import { selectFields } from './http/routes.js'
import { mountViewset } from './mount/mount-viewset.js'
import type { PreparedViewset, ViewsetDeclaration } from './mount/mount-viewset.js'
import { overridableHandlers } from './mount/override-handlers.js'
import type { CheckedSchema, ResolvedOptions, RowContext, ScopedMethod, SchemaOf, ViewsetMethod } from './options.js'
import type { ViewsetOptions, ViewsetToken, WriteMethod } from './options.js'
import { checkMethods, resolveOptions } from './options.js'
import { scopeCondition } from './query/scope.js'
import type { RelatedConfig } from './relations/config.js'
import { relatedConfigOf, relationFields } from './relations/loader.js'
import type { CreateManyRequest, CreateRequest, ElementRequest, IdOf, ListRequest } from './requests.js'
import type { UpdateRequest, WritableOf } from './requests.js'
import { isRecord } from './schema/object-schema.js'

/** Rows read through the schema's columns, typed as the schema types them: the serializer writes them by it. */
function asServed<T> (rows: Row | Row[]): T {
  return rows as T // selected by the schema's own columns; the driver's value types are coerced on the way out
}

/** The viewset reaches tables by names checked at mounting, so it queries through an untyped view of `db`. */
function untyped<DB> (db: Kysely<DB>): AnyDatabase {
  return db as unknown as AnyDatabase // DB is a compile-time map of tables; the instance is the same
}

/** The `static listQuery` of a viewset's class (its constructor), when it declares an object schema. */
function listQueryOf (constructor: unknown): Record<string, unknown> | undefined {
  const extra: unknown =
    typeof constructor === 'function' && 'listQuery' in constructor ? constructor.listQuery : undefined
  return isRecord(extra) ? extra : undefined
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

/** The methods whose requests carry If-Match for their write. */
const conditionalMethods = new Set(['PUT', 'PATCH', 'DELETE'])

/**
 * A REST resource over one table. Subclass it to override a handler, declare extra LIST query
 * parameters (`static listQuery`), or add routes next to the generated ones (`customRoutes`). Its options
 * are checked when it is created (those that need no database) and when it is mounted (the rest, against
 * the catalog: `app.ready()` fails then).
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
  S extends SchemaOf<DB, TB, S>,
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
  readonly #resolved: ResolvedOptions
  readonly #relatedConfig: RelatedConfig<unknown> | undefined
  #prepared: PreparedViewset | undefined
  /** The expression builder handed to `scope`: stateless, so one serves every request. */
  readonly #eb = expressionBuilder<DB, TB>()

  /**
   * Checks every option that needs no database, synchronously: a mistake throws a `TypeError` with code
   * `FST_VIEWSET_INVALID_OPTION` naming the option. At compile time, a schema field that is neither a
   * column nor a relation fails, here and in a subclass's type parameters.
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
    // The relation declaration is checked at mounting, whatever tables the DB type names: RelatedConfig is
    // invariant in DB.
    this.#relatedConfig = relatedConfigOf(options.relatedConfig as RelatedConfig<unknown> | undefined, options.schema)
    const relations = relationFields(this.#relatedConfig)
    this.columns = Object.freeze(Object.keys(options.schema.properties).filter((field) => !relations.has(field)))
    this.protect = authHook('CUSTOM', this.options)
  }

  /**
   * A Fastify plugin serving the given methods (default: the `methods` option, else all). Register it with
   * `{ prefix }`. Bad method lists throw here, before any route exists; the catalog is checked when the app
   * loads the plugin (`app.ready()`).
   */
  register (methods: readonly ViewsetMethod[] = this.#resolved.methods): FastifyPluginAsync {
    const chosen = checkMethods(methods)
    checkProtectedMethods(this.#resolved.protectedMethods, chosen)
    return viewsetPlugin(this.table, async (fastify) => {
      const { prepared, mounted } = await mountViewset(fastify, chosen, this.#declaration())
      this.#prepared = prepared
      return mounted
    })
  }

  // ---- overridable handlers -------------------------------------------------------------------

  /**
   * LIST: a page of rows, parsed from the query string and read by the table gateway. Its route then sets
   * `Link`, `X-Total-Count` and the `?fields=` serializer. An override returns its own rows (typically
   * `await this.query()...execute()`); the route still loads their relations.
   */
  async list (
    request: ListRequest<unknown>,
    _reply: FastifyReply,
    token: ViewsetToken | null
  ): Promise<Array<Static<S>>> {
    const page = await this.#ready().defaults.list(request, token)
    return asServed(page.rows)
  }

  /**
   * GET: one row (in the scope), or 404. `request.params.id` has the key's type (`IdOf<S>`); an override
   * typed with a bare `ElementRequest` may still call `super.getElement(request, reply, token)`.
   */
  getElement (request: ElementRequest, reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>>
  getElement (request: ElementRequest<S>, reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>>
  async getElement (request: FastifyRequest, _reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>> {
    const { defaults, fields } = this.#ready()
    const selection = selectFields(isRecord(request.query) ? request.query : {}, fields, this.#resolved.versionField)
    return asServed(await defaults.getElement(request, token, selection))
  }

  /**
   * POST: inserts what `beforeWrite` makes of the writable fields sent, and returns the row as stored (201,
   * with `Location`). With `conflictFields` and `Prefer: resolution=merge-duplicates`, an upsert: the row
   * with the same values in `conflictFields` gets the fields the body sent (in the PATCH `scope`), and the
   * answer is 200 when it was updated; either way with `Preference-Applied`.
   */
  async createElement (request: CreateRequest<S>, reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>> {
    return asServed(await this.#ready().defaults.createElement(request, reply, token))
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
    return asServed(await this.#ready().defaults.createElements(request, reply, token))
  }

  /** PUT (`partial` false) and PATCH (`partial` true): updates the row (in the scope) with what `beforeWrite`
   * returns, if its If-Match holds, and returns it, or 404. */
  async updateElement (
    request: UpdateRequest<S>,
    _reply: FastifyReply,
    token: ViewsetToken | null,
    partial: boolean
  ): Promise<Static<S>> {
    const precondition = this.precondition(request)
    return asServed(await this.#ready().defaults.updateElement(request, token, partial, precondition))
  }

  /** DELETE: removes the row (204) if its If-Match holds, or 404 when there is none in the scope (`params.id` as
   * in `getElement`). */
  deleteElement (request: ElementRequest, reply: FastifyReply, token: ViewsetToken | null): Promise<void>
  deleteElement (request: ElementRequest<S>, reply: FastifyReply, token: ViewsetToken | null): Promise<void>
  async deleteElement (request: FastifyRequest, _reply: FastifyReply, token: ViewsetToken | null): Promise<void> {
    await this.#ready().defaults.deleteElement(request, token, this.precondition(request))
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

  /** Adds routes next to the generated ones, in the same plugin: same prefix, error format and validation. */
  customRoutes (_fastify: FastifyInstance): void | Promise<void> {}

  // ---- helpers for overrides ------------------------------------------------------------------

  /** `SELECT <schema columns> FROM <table>`, typed, to refine and execute. */
  query (db: Kysely<DB> = this.readDb): SelectQueryBuilder<DB, TB, Static<S>> {
    const table: string = this.table
    // names checked against the catalog at mounting
    return untyped(db).selectFrom(table).select(this.columns) as unknown as SelectQueryBuilder<DB, TB, Static<S>>
  }

  /** Runs `work` in a transaction; it commits when `work` resolves and rolls back when it throws. */
  async transaction<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return await this.db.transaction().execute(work)
  }

  /** The row with this primary key, or `undefined`. */
  async findById (id: IdOf<S>, db: Kysely<DB> = this.readDb): Promise<Static<S> | undefined> {
    const row = await this.#ready().resource.find(untyped(db), id)
    return row === undefined ? undefined : asServed(row)
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
    return asServed(await this.#ready().resource.insert(untyped(db), { ...values }))
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
    const row = await this.#ready().resource.update(untyped(db), id, { ...values }, undefined, precondition)
    return row === undefined ? undefined : asServed(row)
  }

  /** Deletes one row; false when there was none. A `precondition` is checked as `update` checks it. */
  async deleteById (id: IdOf<S>, db: Kysely<DB> = this.db, precondition?: Precondition): Promise<boolean> {
    return await this.#ready().resource.delete(untyped(db), id, undefined, precondition)
  }

  /**
   * The If-Match condition of a PUT, PATCH or DELETE request, read from its header (`undefined` without
   * one, unless `requireIfMatch`: then the 428 is raised by the write), for an overridden handler to pass to
   * `update` or `deleteById`. `undefined` for a request of another method.
   */
  precondition (request: FastifyRequest): Precondition | undefined {
    if (!conditionalMethods.has(request.method)) return undefined
    return preconditionOf(request.headers['if-match'], this.#resolved.requireIfMatch)
  }

  /**
   * The fields of a body that may be written: read-only fields and relations are dropped. A POST body
   * (`Static<S>`) gives a pick of the table's `Insertable`, which `insert` takes, spread with the table's
   * other required columns; a PATCH body (`Partial<Static<S>>`) a pick of its `Updateable`. Fields marked
   * `Type.Readonly` are absent from the type too.
   */
  writable (body: Static<S>): WritableOf<Insertable<DB[TB]>, S>
  writable (body: Partial<Static<S>> | undefined): WritableOf<Updateable<DB[TB]>, S>
  writable (body: Partial<Static<S>> | undefined): Row {
    return this.#ready().defaults.writable(body)
  }

  /** A case-insensitive substring match that behaves the same on every dialect (`%` and `_` match themselves). */
  contains (column: Expression<unknown>, term: string): Expression<SqlBool> {
    return this.#ready().resource.dialect.ilike(column, containsPattern(term))
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

  // ---- mounting -------------------------------------------------------------------------------

  #ready (): PreparedViewset {
    if (this.#prepared === undefined) {
      throw new Error('The viewset is not registered yet: register() it on a Fastify instance first')
    }
    return this.#prepared
  }

  /** What mounting reads of this viewset: its checked options, and which handlers and hooks it overrides. */
  #declaration (): ViewsetDeclaration {
    const overridden = new Set<ViewsetDeclaration['overridden'] extends ReadonlySet<infer N> ? N : never>(
      overridableHandlers.filter((name) => this[name] !== Viewset.prototype[name])
    )
    if (this.scope !== Viewset.prototype.scope || this.options.scope !== undefined) overridden.add('scope')
    if (this.beforeWrite !== Viewset.prototype.beforeWrite || this.options.beforeWrite !== undefined) {
      overridden.add('beforeWrite')
    }
    const db = untyped(this.db)
    return {
      viewset: this,
      resolved: this.#resolved,
      options: this.options,
      db,
      readDb: untyped(this.readDb),
      schema: this.schema,
      columns: this.columns,
      relatedConfig: this.#relatedConfig,
      listQuery: listQueryOf(this.constructor),
      overridden,
      handlers: this,
      rowRules: {
        scopeOf: (request, token, method) => {
          const expression = this.scope(this.#eb, { request, token, method })
          return expression === undefined ? undefined : scopeCondition(db, this.table, expression)
        },
        beforeWrite: (values, context) => this.#beforeWrite(values, context),
        notFound: (id) => this.notFound(id),
      },
      protect: this.protect,
      customRoutes: async (fastify) => {
        await this.customRoutes(fastify)
      },
    }
  }

  /** What `beforeWrite` makes of the values, checked: a promise only when it answered one (the default answers at
   * once, and POST and PATCH then await nothing). */
  #beforeWrite (values: Row, context: RowContext<WriteMethod>): Row | Promise<Row> {
    // the writable fields of the schema, which are columns of the table
    const written: unknown = this.beforeWrite(values as Updateable<DB[TB]>, context)
    // Any thenable is awaited, as `await` would; the answer is then a native promise.
    return isRecord(written) && typeof written.then === 'function'
      ? Promise.resolve(written).then(writtenValues)
      : writtenValues(written)
  }
}

/**
 * Turns a table and a TypeBox schema into a REST resource: `createViewset(o)` is `new Viewset(o).register(o.methods)`.
 * Every option that needs no database is checked here, synchronously.
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
  S extends SchemaOf<DB, TB, S>,
  R extends RelatedConfig<DB> = Record<never, never>
> (options: ViewsetOptions<DB, TB, S, R> & CheckedSchema<DB, TB, S, R>): FastifyPluginAsync {
  return new Viewset<DB, TB, S, R>(options).register(options.methods)
}
