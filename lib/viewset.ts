import type { Static, TObject } from '@sinclair/typebox'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import type { Expression, Kysely, SelectQueryBuilder, SqlBool, Transaction } from 'kysely'
import { addMethodRoutes, collectMethods } from './allowed-methods.js'
import { authHook, checkAuth, securitySchemeName } from './auth.js'
import type { AnyDatabase, ColumnInfo, DatabaseFault, Row, ViewsetDialect, WriteTarget } from './dialect/dialect.js'
import { rowKeyProblem } from './dialect/catalog.js'
import { containsPattern } from './dialect/dialect.js'
import { dialectOf } from './dialect/pick-dialect.js'
import { runCancellable } from './dialect/postgres-cancel.js'
import { ViewsetErrors } from './errors.js'
import type { CheckedSchema, ResolvedOptions, ViewsetMethod, ViewsetOptions, ViewsetToken } from './options.js'
import { checkMethods, resolveOptions } from './options.js'
import { notFoundHandler, problemHandler } from './problem-handler.js'
import { planFields } from './query/fields.js'
import type { FieldSelection, FieldsPlan } from './query/fields.js'
import { createListPlan } from './query/list.js'
import type { ListPlan } from './query/list.js'
import { Statements } from './query/statements.js'
import type { RelatedConfig } from './relations/config.js'
import type { RelationLoader } from './relations/loader.js'
import { createRelationLoader, relatedConfigOf, relationFields } from './relations/loader.js'
import type { JsonSchema } from './schema/derive.js'
import { deriveBody, deriveEntity, deriveParams, plain, propertiesOf, writableFields } from './schema/derive.js'
import { errorStatuses, nameFromPrefix, problemResponses, problemSchema, problemSchemaId } from './schema/openapi.js'
import { viewsetValidatorCompiler } from './schema/validator.js'

/** The viewset reaches tables by names checked at registration, so it queries through an untyped view of `db`. */
function untyped<DB> (db: Kysely<DB>): AnyDatabase {
  return db as unknown as AnyDatabase
}

/**
 * Drops the Content-Type of a request that carries no body, so that Fastify does not parse nothing as
 * JSON (a 400) or refuse the type (a 415). A body that is there is still parsed as usual.
 */
function ignoreEmptyBody (request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const { headers } = request
  const length = headers['content-length']
  if (headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) delete headers['content-type']
  done()
}

/** The query string of a generated route: validated against an object schema, so an object. */
function queryOf (request: FastifyRequest): Record<string, unknown> {
  return request.query as Record<string, unknown> // its querystring schema has type object
}

/** Path parameters of the element routes. */
export interface IdParams { id: string | number }

/** The request of LIST; `Query` is the query string after validation. */
export type ListRequest<Query = Record<string, unknown>> = FastifyRequest<{ Querystring: Query }>
/** The request of GET and DELETE. */
export type ElementRequest = FastifyRequest<{ Params: IdParams }>
/** The request of POST. */
export type CreateRequest<S extends TObject> = FastifyRequest<{ Body: Partial<Static<S>> }>
/** The request of PUT and PATCH. */
export type UpdateRequest<S extends TObject> = FastifyRequest<{ Params: IdParams, Body: Partial<Static<S>> }>

/** What the viewset knows once the catalog has been read; built at registration. */
interface Prepared {
  readonly dialect: ViewsetDialect
  readonly statements: Statements
  readonly target: WriteTarget
  readonly writable: readonly string[]
  readonly list: ListPlan
  /** `?fields=` of LIST and GET. */
  readonly fields: FieldsPlan
  readonly relations: RelationLoader | undefined
  readonly prefix: string
}

const summaries: Record<ViewsetMethod, (name: string) => string> = {
  LIST: (name) => `List ${name}`,
  GET: (name) => `Get one of ${name} by id`,
  POST: (name) => `Create one of ${name}`,
  PUT: (name) => `Replace one of ${name}`,
  PATCH: (name) => `Update fields of one of ${name}`,
  DELETE: (name) => `Delete one of ${name}`,
}
const operationVerbs: Record<ViewsetMethod, string> = { LIST: 'list', GET: 'get', POST: 'create', PUT: 'replace', PATCH: 'update', DELETE: 'delete' }

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
export class Viewset<DB, TB extends keyof DB & string, S extends TObject> {
  /** Extra query parameters of LIST, merged over the defaults; validated and documented. */
  static listQuery: TObject | undefined = undefined

  /** The options as given. */
  readonly options: ViewsetOptions<DB, TB, S>
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
  #prepared: Prepared | undefined
  /** The `?fields=` selection of a GET request, read by the default getElement. */
  readonly #selections = new WeakMap<FastifyRequest, FieldSelection>()

  constructor (options: ViewsetOptions<DB, TB, S> & CheckedSchema<DB, TB, S, RelatedConfig<DB>>) {
    this.#resolved = resolveOptions(options as unknown as Record<string, unknown>)
    this.options = Object.freeze({ ...options }) as ViewsetOptions<DB, TB, S>
    this.db = options.db
    this.readDb = options.readDb ?? options.db
    this.table = options.table
    this.schema = options.schema
    this.primaryKey = this.#resolved.primaryKey
    const relations = relationFields(relatedConfigOf(options.relatedConfig as never, options.schema))
    this.columns = Object.freeze(Object.keys(options.schema.properties).filter((field) => !relations.has(field)))
  }

  /**
   * A Fastify plugin serving the given methods (default: the `methods` option, else all).
   * Register it with `{ prefix }`. Bad method lists throw here, before any route exists.
   */
  register (methods: readonly ViewsetMethod[] = this.#resolved.methods): FastifyPluginAsync {
    const chosen = checkMethods(methods)
    const plugin: FastifyPluginAsync = async (fastify) => { await this.#mount(fastify, chosen) }
    return fp(plugin, { fastify: '5.x', name: `fastify-viewsets:${this.table}`, encapsulate: true })
  }

  // ---- overridable handlers -------------------------------------------------------------------

  /** LIST: a page of rows. Headers such as `Link` may be set on the reply. */
  async list (request: ListRequest, reply: FastifyReply, _token: ViewsetToken | null): Promise<unknown> {
    return await this.#ready().list.run(untyped(this.readDb), request, reply)
  }

  /** GET: one row, or 404. */
  async getElement (request: ElementRequest, _reply: FastifyReply, _token: ViewsetToken | null): Promise<unknown> {
    const selection = this.#selections.get(request)
    if (selection === undefined) return await this.findById(request.params.id, this.readDb) ?? this.notFound(request.params.id)
    // `?fields=`: only the chosen columns (and the keys of the chosen relations) are read.
    return await this.#ready().statements.findById(untyped(this.readDb), request.params.id, selection) ?? this.notFound(request.params.id)
  }

  /** POST: inserts the writable fields that were sent and returns the row as stored (201). */
  async createElement (request: CreateRequest<S>, _reply: FastifyReply, _token: ViewsetToken | null): Promise<unknown> {
    return await this.insert(this.writable(request.body as object | undefined))
  }

  /** PUT (`partial` false) and PATCH (`partial` true): updates the fields sent and returns the row, or 404. */
  async updateElement (request: UpdateRequest<S>, _reply: FastifyReply, _token: ViewsetToken | null, _partial: boolean): Promise<unknown> {
    return await this.update(request.params.id, this.writable(request.body as object | undefined)) ?? this.notFound(request.params.id)
  }

  /** DELETE: removes the row (204), or 404. */
  async deleteElement (request: ElementRequest, _reply: FastifyReply, _token: ViewsetToken | null): Promise<unknown> {
    if (!(await this.deleteById(request.params.id))) this.notFound(request.params.id)
    return undefined
  }

  /** Adds routes next to the generated ones, in the same scope: same prefix, error format and validation. */
  customRoutes (_fastify: FastifyInstance): void | Promise<void> {}

  // ---- helpers for overrides ------------------------------------------------------------------

  /** `SELECT <schema columns> FROM <table>`, typed, to refine and execute. */
  query (db: Kysely<DB> = this.readDb): SelectQueryBuilder<DB, TB, Static<S>> {
    return untyped(db).selectFrom(this.table as string).select(this.columns) as unknown as SelectQueryBuilder<DB, TB, Static<S>>
  }

  /** Runs `work` in a transaction; it commits when `work` resolves and rolls back when it throws. */
  async transaction<T> (work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return await this.db.transaction().execute(work)
  }

  /** The row with this primary key, or `undefined`. */
  async findById (id: unknown, db: Kysely<DB> = this.readDb): Promise<Static<S> | undefined> {
    return await this.#ready().statements.findById(untyped(db), id) as Static<S> | undefined
  }

  /** Inserts values and returns the row as stored (generated key and database defaults included). */
  async insert (values: Row, db: Kysely<DB> = this.db): Promise<Static<S>> {
    const prepared = this.#ready()
    return await prepared.dialect.insert(untyped(db), prepared.target, values) as Static<S>
  }

  /** Updates one row and returns it as stored, or `undefined` when there is no such row. */
  async update (id: unknown, values: Row, db: Kysely<DB> = this.db): Promise<Static<S> | undefined> {
    const prepared = this.#ready()
    return await prepared.dialect.update(untyped(db), prepared.target, id, values) as Static<S> | undefined
  }

  /** Deletes one row; false when there was none. */
  async deleteById (id: unknown, db: Kysely<DB> = this.db): Promise<boolean> {
    return await this.#ready().statements.deleteById(untyped(db), id)
  }

  /** The fields of a body that may be written: read-only fields and relations are dropped. */
  writable (body: object | undefined): Row {
    const values: Row = {}
    if (body === undefined || body === null) return values
    for (const field of this.#ready().writable) {
      const value = (body as Row)[field]
      if (value !== undefined) values[field] = value
    }
    return values
  }

  /** A case-insensitive substring match that behaves the same on every dialect (`%` and `_` match themselves). */
  contains (column: Expression<unknown>, term: string): Expression<SqlBool> {
    return this.#ready().dialect.ilike(column, containsPattern(term))
  }

  /**
   * What a database error means to a client (`unique`, `foreign-key`, `not-null`, `check`, `invalid-value`,
   * `unavailable`), or `undefined`: for answers more precise than the default ones.
   *
   * @example
   * ```ts
   * try { return await this.insert(values) } catch (error) {
   *   if (this.classify(error)?.kind === 'unique') throw new ViewsetErrors.Conflict('an item with that name already exists')
   *   throw error
   * }
   * ```
   */
  classify (error: unknown): DatabaseFault | undefined {
    return this.#ready().dialect.classify(error)
  }

  /** Throws the 404 problem for this id. */
  notFound (id: unknown): never {
    throw new ViewsetErrors.NotFound(`No row with ${this.primaryKey} = ${String(id)}`)
  }

  // ---- registration ---------------------------------------------------------------------------

  #ready (): Prepared {
    if (this.#prepared === undefined) throw new Error('The viewset is not registered yet: register() it on a Fastify instance first')
    return this.#prepared
  }

  async #prepare (fastify: FastifyInstance, methods: readonly ViewsetMethod[]): Promise<{ prepared: Prepared, entity: JsonSchema, name: string }> {
    const { table, schema, primaryKey } = this.#resolved
    const db = untyped(this.db)
    const dialect = await dialectOf(db)
    const described = await dialect.catalog.table(db, table)
    if (described === undefined || described.columns.length === 0) throw new ViewsetErrors.UnknownTable(table)
    const catalog = described.columns
    const keyProblem = rowKeyProblem(described, primaryKey, this.options.primaryKey !== undefined, methods)
    if (keyProblem) throw new ViewsetErrors.InvalidOption(keyProblem.option, keyProblem.message)
    const columns = new Map<string, ColumnInfo>(catalog.map((column) => [column.name, column]))
    for (const field of this.columns) {
      if (!columns.has(field)) throw new ViewsetErrors.UnknownColumn(field, table, catalog.map((column) => column.name).join(', '))
    }
    const config = relatedConfigOf(this.options.relatedConfig as never, schema)
    const relations = await createRelationLoader(db, dialect, config, schema, table, primaryKey)
    const name = this.#resolved.name ?? nameFromPrefix(fastify.prefix, table)
    const entity = deriveEntity(schema, columns, relationFields(config), name)
    // The key is read-only whatever the schema says: it is never written from a body.
    const key = propertiesOf(entity)[primaryKey]
    if (key !== undefined) key.readOnly = true
    // The loader may need keys the schema does not serve; they are selected, never serialized.
    const selected = [...new Set([...this.columns, ...(relations?.parentColumns ?? [])])]
    const statements = new Statements(db, table, primaryKey, selected)
    const fields = planFields(entity, this.columns, selected, relations?.keys ?? new Map())
    const list = createListPlan({ dialect, resolved: this.#resolved, options: this.options as never, entity, columns: this.columns, selected, fieldsPlan: fields, statements })
    const prepared: Prepared = {
      dialect,
      statements,
      target: { table, primaryKey, columns: selected, catalog: columns },
      writable: writableFields(entity),
      list: this.#mergeListQuery(list),
      fields,
      relations,
      prefix: fastify.prefix,
    }
    return { prepared, entity, name }
  }

  /**
   * Applies the subclass's `listQuery` over the default LIST query string. An overridden `list` keeps only
   * `limit` and `offset` of the defaults: it would silently ignore `search`, filters, `count` or `fields`.
   * Without an overridden `list`, `listQuery` may only refine parameters the default LIST defines.
   */
  #mergeListQuery (list: ListPlan): ListPlan {
    const extra = (this.constructor as typeof Viewset).listQuery
    if (extra === undefined) return list
    const defaults = propertiesOf(list.querystring)
    const own = this.list !== Viewset.prototype.list
    // The default list reads only its own parameters: any other one would be validated, documented and ignored.
    const unread = own ? [] : Object.keys(propertiesOf(plain(extra))).filter((parameter) => !Object.hasOwn(defaults, parameter))
    if (unread.length > 0) {
      throw new ViewsetErrors.InvalidOption('listQuery', `${unread.join(', ')} would be ignored: the default list() reads only ${Object.keys(defaults).join(', ')}. Override list() to read them`)
    }
    const base = own ? { limit: defaults.limit, offset: defaults.offset } : defaults
    const properties = { ...base, ...propertiesOf(plain(extra)) }
    // The default list's response headers (Link, X-Total-Count) are not an override's.
    return { ...(own ? {} : list), querystring: { ...list.querystring, properties }, run: list.run }
  }

  async #mount (fastify: FastifyInstance, methods: readonly ViewsetMethod[]): Promise<void> {
    const { protectedMethods } = this.#resolved
    checkAuth(fastify, protectedMethods, methods, this.options)
    const { prepared, entity, name } = await this.#prepare(fastify, methods)
    this.#prepared = prepared

    fastify.addSchema(entity)
    if (fastify.getSchema(problemSchemaId) === undefined) fastify.addSchema(problemSchema)
    if (!fastify.hasRequestDecorator('viewsetToken')) fastify.decorateRequest('viewsetToken', null)
    fastify.setValidatorCompiler(viewsetValidatorCompiler)
    fastify.setErrorHandler(problemHandler(() => this.#prepared?.dialect))
    fastify.setNotFoundHandler(notFoundHandler)
    // Bodies are JSON only: Fastify's text/plain parser would turn a text body into a string that fails as a 400, not a 415.
    fastify.removeContentTypeParser('text/plain')

    const registered = collectMethods(fastify)
    for (const method of methods) fastify.route(this.#route(method, name, entity, protectedMethods.includes(method)))
    await this.customRoutes(fastify)
    // After the custom routes, so that a custom route on a generated path counts as allowed.
    addMethodRoutes(fastify, ['', '/:id'], registered)
  }

  #route (method: ViewsetMethod, name: string, entity: JsonSchema, secured: boolean): RouteOptions {
    const ref = { $ref: `${entity.$id as string}#` }
    const prepared = this.#ready()
    const relations = prepared.relations
    const schema: Record<string, unknown> = {
      operationId: `${operationVerbs[method]}${name}`,
      summary: summaries[method](name),
      tags: [...this.#resolved.tags],
      response: problemResponses(errorStatuses(method, secured)),
    }
    if (secured) schema.security = [{ [securitySchemeName]: [] }]
    if (method !== 'LIST' && method !== 'POST') schema.params = deriveParams(entity, this.primaryKey)

    const withRelations = async (db: Kysely<DB>, result: unknown, only?: ReadonlySet<string>): Promise<unknown> => {
      if (relations !== undefined && typeof result === 'object' && result !== null) {
        await relations.load(untyped(db), Array.isArray(result) ? result as Row[] : [result as Row], only)
      }
      return result
    }
    // Every generated route rejects unknown query parameters, as LIST does; LIST and GET take `fields`.
    schema.querystring = { type: 'object', properties: method === 'GET' ? prepared.fields.properties : {}, additionalProperties: false }
    const route: RouteOptions = { method: 'GET', url: '', schema, handler: () => undefined }
    const onRequest = []
    // These routes take no body: an empty one is no body, whatever Content-Type a client sets by default.
    if (method === 'LIST' || method === 'GET' || method === 'DELETE') onRequest.push(ignoreEmptyBody)
    if (secured) onRequest.push(authHook(method, this.options))
    if (onRequest.length > 0) route.onRequest = onRequest

    switch (method) {
      case 'LIST':
        schema.querystring = prepared.list.querystring
        Object.assign(schema.response as object, { 200: { type: 'array', items: ref, ...(prepared.list.headers === undefined ? {} : { headers: prepared.list.headers }) } })
        route.handler = async (request, reply) => {
          // A relation the selection leaves out is not loaded at all.
          const only = prepared.fields.selection(queryOf(request))?.relations
          return await withRelations(this.readDb, await this.list(request as ListRequest, reply, request.viewsetToken), only)
        }
        break
      case 'GET':
        route.url = '/:id'
        Object.assign(schema.response as object, { 200: ref })
        route.handler = async (request, reply) => {
          const selection = prepared.fields.selection(queryOf(request))
          if (selection === undefined) return await withRelations(this.readDb, await this.getElement(request as ElementRequest, reply, request.viewsetToken))
          this.#selections.set(request, selection)
          const row = await withRelations(this.readDb, await this.getElement(request as ElementRequest, reply, request.viewsetToken), selection.relations)
          // Set last, so that an error thrown above is serialized as a problem, not as a row.
          reply.serializer(selection.serializeRow).type('application/json; charset=utf-8')
          return row
        }
        break
      case 'POST':
        route.method = 'POST'
        schema.body = deriveBody(entity, false)
        Object.assign(schema.response as object, { 201: ref })
        route.handler = async (request, reply) => {
          reply.code(201)
          const row = await this.createElement(request as CreateRequest<S>, reply, request.viewsetToken)
          const id = (row as Row | undefined)?.[this.primaryKey]
          if (id !== undefined && id !== null && !reply.hasHeader('location')) {
            reply.header('location', `${prepared.prefix}/${encodeURIComponent(String(id))}`)
          }
          return await withRelations(this.db, row)
        }
        break
      case 'PUT':
      case 'PATCH':
        route.method = method
        route.url = '/:id'
        schema.body = deriveBody(entity, method === 'PATCH')
        Object.assign(schema.response as object, { 200: ref })
        route.handler = async (request, reply) => await withRelations(this.db, await this.updateElement(request as UpdateRequest<S>, reply, request.viewsetToken, method === 'PATCH'))
        break
      case 'DELETE':
        route.method = 'DELETE'
        route.url = '/:id'
        Object.assign(schema.response as object, { 204: { type: 'null', description: 'Deleted' } })
        route.handler = async (request, reply) => {
          await this.deleteElement(request as ElementRequest, reply, request.viewsetToken)
          return reply.code(204).send()
        }
        break
    }
    // A client that hangs up cancels the PostgreSQL query serving it (see dialect/postgres-cancel.ts).
    const handler = route.handler
    route.handler = async function (request, reply) { return await runCancellable(reply.raw, () => handler.call(this, request, reply)) }
    return route
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
export function createViewset<DB, TB extends keyof DB & string, S extends TObject, R extends RelatedConfig<DB> = Record<never, never>> (
  options: ViewsetOptions<DB, TB, S, R> & CheckedSchema<DB, TB, S, R>,
): FastifyPluginAsync {
  return new Viewset<DB, TB, S>(options as unknown as ViewsetOptions<DB, TB, S> & CheckedSchema<DB, TB, S, RelatedConfig<DB>>).register(options.methods)
}
