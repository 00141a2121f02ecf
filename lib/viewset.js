var _a;
import { expressionBuilder } from 'kysely';
import { authHook } from './http/auth.js';
import { preconditionOf } from './http/conditional-requests.js';
import { viewsetPlugin } from './http/plugin.js';
import { selectFields } from './http/routes.js';
import { mountViewset } from './mount/mount-viewset.js';
import { listQueryOf } from './mount/list-querystring.js';
import { overriddenMembers } from './mount/override-handlers.js';
import { checkMethods, resolveOptions } from './options.js';
import { scopeCondition } from './query/scope.js';
import { asServed, preparedOf, setPrepared, untyped, ViewsetTable } from './viewset-table.js';
import { relatedConfigOf, relationFields } from './relations/loader.js';
import { isRecord } from './schema/object-schema.js';
/** The methods whose requests carry If-Match for their write. */
const conditionalMethods = new Set(['PUT', 'PATCH', 'DELETE']);
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
export class Viewset extends ViewsetTable {
    /** Extra query parameters of LIST, merged over the defaults; validated and documented. */
    static listQuery = undefined;
    /** The options as given. */
    options;
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
    protect;
    #resolved;
    #relatedConfig;
    /** The expression builder handed to `scope`: stateless, so one serves every request. */
    #eb = expressionBuilder();
    /**
     * Checks every option that needs no database, synchronously: a mistake throws a `TypeError` with code
     * `FST_VIEWSET_INVALID_OPTION` naming the option. At compile time, a schema field that is neither a
     * column nor a relation fails, here and in a subclass's type parameters.
     */
    constructor(options) {
        const resolved = resolveOptions(options);
        // The relation declaration is checked at mounting, whatever tables the DB type names: RelatedConfig is
        // invariant in DB.
        const related = relatedConfigOf(options.relatedConfig, options.schema);
        const relations = relationFields(related);
        super(options, resolved.primaryKey, Object.keys(options.schema.properties).filter((field) => !relations.has(field)));
        this.#resolved = resolved;
        this.#relatedConfig = related;
        const given = options;
        this.options = Object.freeze({ ...given });
        this.protect = authHook('CUSTOM', this.options);
    }
    /**
     * A Fastify plugin serving the given methods (default: the `methods` option, else all). Register it with
     * `{ prefix }`. Bad method lists throw here, before any route exists; the catalog is checked when the app
     * loads the plugin (`app.ready()`).
     */
    register(methods = this.#resolved.methods) {
        const chosen = checkMethods(methods);
        return viewsetPlugin(this.table, async (fastify) => {
            const { prepared, mounted } = await mountViewset(fastify, chosen, this.#declaration());
            setPrepared(this, prepared);
            return mounted;
        });
    }
    // ---- overridable handlers -------------------------------------------------------------------
    /**
     * LIST: a page of rows, parsed from the query string and read by the table gateway. Its route then sets
     * `Link`, `X-Total-Count` and the `?fields=` serializer. An override returns its own rows (typically
     * `await this.query()...execute()`); the route still loads their relations.
     */
    async list(request, _reply, token) {
        const page = await preparedOf(this).defaults.list(request, token);
        return asServed(page.rows);
    }
    async getElement(request, _reply, token) {
        const { defaults, fields } = preparedOf(this);
        const selection = selectFields(isRecord(request.query) ? request.query : {}, fields, this.#resolved.versionField);
        return asServed(await defaults.getElement(request, token, selection));
    }
    /**
     * POST: inserts what `beforeWrite` makes of the writable fields sent, and returns the row as stored (201,
     * with `Location`). With `conflictFields` and `Prefer: resolution=merge-duplicates`, an upsert: the row
     * with the same values in `conflictFields` gets the fields the body sent (in the PATCH `scope`), and the
     * answer is 200 when it was updated; either way with `Preference-Applied`.
     */
    async createElement(request, reply, token) {
        return asServed(await preparedOf(this).defaults.createElement(request, reply, token));
    }
    /**
     * BULK (`POST /bulk`): inserts what `beforeWrite` makes of the writable fields of each element (method
     * `'BULK'`), all or none, and returns the rows as stored in the order of the elements (201). Only
     * registered when `methods` lists `'BULK'`. With `conflictFields` and `Prefer: resolution=merge-duplicates`,
     * each element is upserted as POST does, and the answer is 201 when at least one row was created, else 200.
     */
    async createElements(request, reply, token) {
        return asServed(await preparedOf(this).defaults.createElements(request, reply, token));
    }
    /** PUT (`partial` false) and PATCH (`partial` true): updates the row (in the scope) with what `beforeWrite`
     * returns, if its If-Match holds, and returns it, or 404. */
    async updateElement(request, _reply, token, partial) {
        const precondition = this.precondition(request);
        return asServed(await preparedOf(this).defaults.updateElement(request, token, partial, precondition));
    }
    async deleteElement(request, _reply, token) {
        await preparedOf(this).defaults.deleteElement(request, token, this.precondition(request));
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
    scope(eb, context) {
        return this.options.scope?.(eb, context);
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
    beforeWrite(values, context) {
        return this.options.beforeWrite === undefined ? values : this.options.beforeWrite(values, context);
    }
    /** Adds routes next to the generated ones, in the same plugin: same prefix, error format and validation. */
    customRoutes(_fastify) { }
    // ---- helpers for overrides ------------------------------------------------------------------
    /**
     * The If-Match condition of a PUT, PATCH or DELETE request, read from its header (`undefined` without
     * one, unless `requireIfMatch`: then the 428 is raised by the write), for an overridden handler to pass to
     * `update` or `deleteById`. `undefined` for a request of another method.
     */
    precondition(request) {
        if (!conditionalMethods.has(request.method))
            return undefined;
        return preconditionOf(request.headers['if-match'], this.#resolved.requireIfMatch);
    }
    writable(body) {
        return preparedOf(this).defaults.writable(body);
    }
    // ---- mounting -------------------------------------------------------------------------------
    /** What mounting reads of this viewset: its checked options, and which handlers and hooks it overrides. */
    #declaration() {
        const db = untyped(this.db);
        const scopeOf = (request, token, method) => {
            const expression = this.scope(this.#eb, { request, token, method });
            return expression === undefined ? undefined : scopeCondition(db, this.table, expression);
        };
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
            overridden: overriddenMembers(this, _a.prototype, this.options),
            handlers: this,
            rowRules: {
                scopeOf,
                // the writable fields of the schema, which are columns of the table
                beforeWrite: (values, context) => this.beforeWrite(values, context),
                notFound: (id) => this.notFound(id),
            },
            protect: this.protect,
            customRoutes: async (fastify) => await this.customRoutes(fastify),
        };
    }
}
_a = Viewset;
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
export function createViewset(options) {
    return new Viewset(options).register(options.methods);
}
//# sourceMappingURL=viewset.js.map