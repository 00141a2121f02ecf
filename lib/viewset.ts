import type { Static, TObject } from '@sinclair/typebox'
import type {
  FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestAsyncHookHandler,
} from 'fastify'
import { expressionBuilder } from 'kysely'
import type { Expression, ExpressionBuilder, Insertable, SqlBool, Updateable } from 'kysely'
import type { Row } from './sql.js'
import { authHook } from './http/auth.js'
import { narrowFieldsPlan } from './http/field-hiding.js'
import { viewsetPlugin } from './http/plugin.js'
import { selectFields } from './http/routes.js'
import { mountViewset } from './mount/mount-viewset.js'
import type { ViewsetDeclaration } from './mount/mount-viewset.js'
import { listQueryOf } from './mount/list-querystring.js'
import { overriddenMembers } from './mount/override-handlers.js'
import { refuseListOverride } from './data/changes-options.js'
import type { CheckedSchema, ResolvedOptions, RowContext, ScopedMethod, SchemaOf, ViewsetMethod } from './options.js'
import type { ViewsetOptions, ViewsetToken } from './options.js'
import { checkMethods, resolveOptions } from './options.js'
import { scopeCondition } from './query/scope.js'
import { ScopePatterns } from './query/scope-shape.js'
import { hasScopedBase, withBaseRule } from './query/scope-rules.js'
import { asServed, preparedOf, setHelperRule, setPrepared, typedTransaction, untyped } from './mount/viewset-state.js'
import { ViewsetHooks } from './viewset-hooks.js'
import type { RelatedConfig } from './relations/config.js'
import { relatedConfigOf, relationFields } from './relations/loader.js'
import type { CreateManyRequest, CreateRequest, ElementRequest, ListRequest } from './requests.js'
import type { KeyFields, UpdateRequest, WritableOf } from './requests.js'
import { isRecord } from './schema/object-schema.js'
import type { FieldAccess, FieldAccessContext } from './query/field-access.js'

/** The request of an override typed without the schema (`ElementRequest`): with the key's columns declared, theirs. */
type UntypedElementRequest<S extends TObject, K extends readonly string[] | undefined> =
  ElementRequest<K extends undefined ? undefined : S, K>

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
  R extends RelatedConfig<DB> = RelatedConfig<DB>,
  K extends KeyFields<S> | undefined = undefined
> extends ViewsetHooks<DB, TB, S, K> {
  /** Extra query parameters of LIST, merged over the defaults; validated and documented. */
  static listQuery: TObject | undefined = undefined

  /** The options as given. */
  readonly options: ViewsetOptions<DB, TB, S, R>
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
  /** The expression builder handed to `scope`: stateless, so one serves every request. */
  readonly #eb = expressionBuilder<DB, TB>()
  /** Per method, the trees its rule built before, matched before any is spelled (query/scope-shape.ts). */
  readonly #scopePatterns = new Map<ScopedMethod, ScopePatterns>()
  /**
   * The `scope` of a request, compiled: what the routes and the helpers apply. A core method's rule is called
   * straight; only a derived method's needs the closures that AND it with its base's (analysis.md#scoped-paths-fifth).
   */
  readonly #scopeOf: ViewsetDeclaration['rowRules']['scopeOf'] = (request, token, method) => {
    const expression = hasScopedBase(method)
      ? withBaseRule(method, (of: ScopedMethod) => this.scope(this.#eb, { request, token, method: of }),
        (own, base) => this.#eb.and([own, base]))
      : this.scope(this.#eb, { request, token, method })
    if (expression === undefined) return undefined
    let patterns = this.#scopePatterns.get(method)
    if (patterns === undefined) this.#scopePatterns.set(method, (patterns = new ScopePatterns()))
    return scopeCondition(untyped(this.db), this.table, expression, patterns)
  }

  /**
   * Checks every option that needs no database, synchronously: a mistake throws a `TypeError` with code
   * `FST_VIEWSET_INVALID_OPTION` naming the option. At compile time, a schema field that is neither a
   * column nor a relation fails, here and in a subclass's type parameters.
   */
  constructor (options: ViewsetOptions<DB, TB, S, R> & CheckedSchema<DB, TB, S, R>) {
    const resolved = resolveOptions(options)
    // The relation declaration is checked at mounting, whatever tables the DB type names.
    const declared = options.relatedConfig as RelatedConfig<unknown> | undefined // RelatedConfig is invariant in DB
    const related = relatedConfigOf(declared, options.schema)
    const relations = relationFields(related)
    super(options, resolved.primaryKey, Object.keys(options.schema.properties).filter((field) => !relations.has(field)))
    this.#resolved = resolved
    this.#relatedConfig = related
    const given: ViewsetOptions<DB, TB, S, R> = options
    this.options = Object.freeze({ ...given })
    this.protect = authHook('CUSTOM', this.options)
    const overridden = overriddenMembers(this, Viewset.prototype, this.options)
    refuseListOverride(resolved.changes, overridden)
    // The helpers of a viewset with a rule apply it (viewset-table.ts).
    if (overridden.has('scope')) setHelperRule(this, this.#scopeOf)
  }

  /**
   * A Fastify plugin serving the given methods (default: the `methods` option, else all). Register it with
   * `{ prefix }`. Bad method lists throw here, before any route exists; the catalog is checked when the app
   * loads the plugin (`app.ready()`).
   */
  register (methods: readonly ViewsetMethod[] = this.#resolved.methods): FastifyPluginAsync {
    const chosen = checkMethods(methods)
    return viewsetPlugin(this.table, async (fastify) => {
      const { prepared, mounted } = await mountViewset(fastify, chosen, this.#declaration())
      setPrepared(this, prepared)
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
    const page = await preparedOf(this).defaults.list(request, token)
    return asServed(page.rows)
  }

  /**
   * GET: one row (in the scope), or 404. `request.params.id` has the key's type (`IdOf<S>`); an override
   * typed with a bare `ElementRequest` may still call `super.getElement(request, reply, token)`.
   */
  getElement (request: UntypedElementRequest<S, K>, reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>>
  getElement (request: ElementRequest<S, K>, reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>>
  async getElement (request: FastifyRequest, _reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>> {
    const { defaults, fields } = preparedOf(this)
    const plan = narrowFieldsPlan(request) ?? fields // `?fields=` as the caller's field rules narrow it
    const selection = selectFields(isRecord(request.query) ? request.query : {}, plan, this.#resolved.versionField)
    return asServed(await defaults.getElement(request, token, selection))
  }

  /**
   * POST: inserts what `beforeWrite` makes of the writable fields sent, and returns the row as stored (201,
   * with `Location`). With `conflictFields` and `Prefer: resolution=merge-duplicates`, an upsert: the row
   * with the same values in `conflictFields` is updated as PATCH updates it (`beforeWrite` told `'PATCH'`, its
   * `scope`, If-Match), and the answer is 200 then; either way with `Preference-Applied`.
   */
  async createElement (request: CreateRequest<S>, reply: FastifyReply, token: ViewsetToken | null): Promise<Static<S>> {
    return asServed(await preparedOf(this).defaults.createElement(request, reply, token))
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
    return asServed(await preparedOf(this).defaults.createElements(request, reply, token))
  }

  /** PUT (`partial` false), PATCH (true): the row (in the scope) updated with `beforeWrite`'s values, or 404. */
  async updateElement (
    request: UpdateRequest<S, K>,
    _reply: FastifyReply,
    token: ViewsetToken | null,
    partial: boolean
  ): Promise<Static<S>> {
    const precondition = this.precondition(request)
    return asServed(await preparedOf(this).defaults.updateElement(request, token, partial, precondition))
  }

  /** DELETE: removes the row (204) if its If-Match holds, or 404 when none is in the scope. */
  deleteElement (request: UntypedElementRequest<S, K>, reply: FastifyReply, token: ViewsetToken | null): Promise<void>
  deleteElement (request: ElementRequest<S, K>, reply: FastifyReply, token: ViewsetToken | null): Promise<void>
  async deleteElement (request: FastifyRequest, _reply: FastifyReply, token: ViewsetToken | null): Promise<void> {
    await preparedOf(this).defaults.deleteElement(request, token, this.precondition(request))
  }

  /**
   * The row rule of a request: a condition ANDed into every statement that reads or changes rows (LIST and its
   * count, GET, the UPDATE of PUT and PATCH, DELETE), or `undefined` for none; outside it, 404. Calls the `scope`
   * option (its function, or its entry for the method) by default. Bare column names are qualified with the
   * table. `context.request.query` holds LIST's validated query string, `listQuery` parameters included.
   * @example
   * ```ts
   * override scope (eb: ExpressionBuilder<DB, 'items'>, { token, method }: RowContext<ScopedMethod>) {
   *   return method === 'LIST' || method === 'GET' ? undefined : eb('owner', '=', token?.sub ?? null)
   * }
   * ```
   */
  scope (eb: ExpressionBuilder<DB, TB>, context: RowContext<ScopedMethod>): Expression<SqlBool> | undefined {
    const rule = this.options.scope
    return (typeof rule === 'function' ? rule : (rule?.[context.method] ?? undefined))?.(eb, context)
  }

  /**
   * The field rule of a request: the fields its caller may not read (`hidden`) or write (`readOnly`), `undefined` for
   * none; also called with `'GET'`/`'LIST'` when other viewsets read this table. Calls the `fieldAccess` option.
   * @example
   * ```ts
   * override fieldAccess ({ token }: FieldAccessContext) { return token?.role === 'admin' ? {} : { hidden: ['ssn'] } }
   * ```
   */
  fieldAccess (context: FieldAccessContext): FieldAccess | undefined | Promise<FieldAccess | undefined> {
    return this.options.fieldAccess?.(context)
  }

  /** Adds routes next to the generated ones, in the same plugin: same prefix, error format and validation. */
  customRoutes (_fastify: FastifyInstance): void | Promise<void> {}

  // ---- helpers for overrides (more in viewset-table.ts) ------------------------------------------

  /**
   * The fields of a body that may be written: read-only fields and relations are dropped. A POST body
   * (`Static<S>`) gives a pick of the table's `Insertable`, which `insert` takes, spread with the table's
   * other required columns; a PATCH body (`Partial<Static<S>>`) a pick of its `Updateable`. Fields marked
   * `Type.Readonly` are absent from the type too.
   */
  writable (body: Static<S>): WritableOf<Insertable<DB[TB]>, S>
  writable (body: Partial<Static<S>> | undefined): WritableOf<Updateable<DB[TB]>, S>
  writable (body: Partial<Static<S>> | undefined): Row {
    return preparedOf(this).defaults.writable(body)
  }

  // ---- mounting -------------------------------------------------------------------------------

  /** What mounting reads of this viewset: its checked options, and which handlers and hooks it overrides. */
  #declaration (): ViewsetDeclaration {
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
      overridden: overriddenMembers(this, Viewset.prototype, this.options),
      handlers: this,
      rowRules: {
        scopeOf: this.#scopeOf,
        beforeWrite: (values, context, trx) => // the writable columns, and the write's transaction
          this.beforeWrite(values as Updateable<DB[TB]>, context, typedTransaction(trx)), // writable columns
        afterWrite: async (trx, context, { before, after }) => {
          const change = { before: before && asServed<Static<S>>(before), after: after && asServed<Static<S>>(after) }
          await this.afterWrite(context, change, typedTransaction(trx))
        },
        notFound: (id) => this.notFound(id),
      },
      protect: this.protect,
      fieldAccess: (context) => this.fieldAccess(context),
      customRoutes: async (fastify) => await this.customRoutes(fastify),
      setHelperRule: (rule) => { setHelperRule(this, rule) },
    }
  }
}
