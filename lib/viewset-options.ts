// The types of a viewset's options and of what its handlers and hooks receive. The checks of their values
// are in options.ts (phase 1, no database) and mount/ (phase 2, against the catalog).
import type { Static, TObject } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import type { Expression, ExpressionBuilder, Kysely, SqlBool } from 'kysely'
import type { RelatedConfig } from './relations/config.js'
import type { AuthorizedMethod, ViewsetMethod } from './methods.js'
import type { ViewsetToken } from './tokens.js'
import type { FieldAccessFunction } from './query/field-access.js'
import type { FieldOf, ListOptions, ObjectFields, RelationPath } from './list-options.js'
import type { AfterWriteFunction, BeforeWriteFunction, RowContext } from './write-hooks.js'
import type { ReplicaOptions } from './data/replica-options.js'
import type { IdempotencyOptions } from './data/idempotency-options.js'
import type { SoftDeleteOptions } from './data/soft-delete-options.js'
import type { HistoryOptions } from './data/history-options.js'
import type { ChangesOptions } from './data/changes-options.js'
import type { RowLevelSecurityOptions } from './tokens.js'
import type { AggregateOptions } from './query/aggregate-options.js'

export {
  allMethods, defaultMethods, filterOperators, historyMethods, softDeleteMethods, viewsetMethods,
} from './methods.js'
export type { AuthorizedMethod, FilterOperator, ViewsetMethod } from './methods.js'
export type { TokenClaims, ViewsetToken } from './tokens.js'
export type { FieldOf, ListOptions, RelationPath } from './list-options.js'
export type {
  AfterWriteFunction, AfterWriteMethod, BeforeWriteFunction, RowChange, RowContext, WriteMethod,
} from './write-hooks.js'

/**
 * The base of every derived method: a derived method is protected whenever its base is (`protectedMethods`),
 * `authorize` sees the derived name, and its row rule is its own AND its base's. Today only BULK exists; the
 * others are the names later methods take.
 *
 * @example
 * ```ts
 * baseMethods.BULK // 'POST'
 * ```
 */
export const baseMethods: Readonly<Record<string, ViewsetMethod>> = Object.freeze({
  BULK: 'POST',
  PATCH_MANY: 'PATCH',
  BULK_PATCH: 'PATCH',
  DELETE_MANY: 'DELETE',
  PURGE: 'DELETE',
  RESTORE: 'PATCH',
  HISTORY: 'GET',
  AGGREGATE: 'LIST',
})

/**
 * The viewset methods a `scope` restricts: those that read or change existing rows.
 *
 * @example
 * ```ts
 * const ownRowsOnly: ScopedMethod[] = ['PUT', 'PATCH', 'DELETE']
 * scope: (eb, { token, method }) => (ownRowsOnly.includes(method) ? eb('owner', '=', token?.sub ?? null) : undefined)
 * ```
 */
export type ScopedMethod = Exclude<ViewsetMethod, 'POST' | 'BULK'>
/**
 * A row rule: the condition every statement that reads or changes rows of this request is restricted to
 * (LIST and its count, GET, the UPDATE of PUT and PATCH, DELETE), or `undefined` for no restriction.
 * A row outside it does not exist for the request: 404.
 *
 * @example
 * ```ts
 * scope: (eb, { token, method }) =>
 *   method === 'LIST' || method === 'GET' ? undefined : eb('owner', '=', token?.sub ?? null)
 * ```
 */
export type ScopeFunction<DB, TB extends keyof DB> = (
  eb: ExpressionBuilder<DB, TB>,
  context: RowContext<ScopedMethod>,
) => Expression<SqlBool> | undefined

/**
 * The derived methods a row rule applies to: each one's rule is its own entry AND its base's ({@link baseMethods}).
 *
 * @example
 * ```ts
 * const history: DerivedScopedMethod = 'HISTORY' // its rule: scope.HISTORY AND scope.GET
 * ```
 */
export type DerivedScopedMethod =
  'PATCH_MANY' | 'BULK_PATCH' | 'DELETE_MANY' | 'PURGE' | 'RESTORE' | 'HISTORY' | 'AGGREGATE'

/**
 * A row rule per method, which fails closed: every registered method the rule applies to needs an entry (LIST,
 * GET, PUT, PATCH, DELETE; GET too for POST and BULK, whose rows must be readable once written; PATCH too for
 * an upsert's update), a function or `null` for "explicitly open", else the viewset fails at startup naming
 * the missing ones. A derived method's entry is optional: its rule is its entry AND its base's.
 *
 * @example
 * ```ts
 * const mine: ScopeFunction<DB, 'items'> = (eb, { token }) => eb('owner', '=', token?.sub ?? null)
 * scope: { LIST: null, GET: null, PUT: mine, PATCH: mine, DELETE: mine }
 * ```
 */
export type ScopeRules<DB, TB extends keyof DB> = {
  readonly [M in ScopedMethod | DerivedScopedMethod]?: ScopeFunction<DB, TB> | null
}

/**
 * Options of {@link createViewset} and of the {@link Viewset} constructor.
 *
 * @example
 * ```ts
 * createViewset({ db, table: 'items', schema: Item, tags: ['items'], methods: ['LIST', 'GET'] })
 * ```
 */
export interface ViewsetOptions<
  DB,
  TB extends keyof DB & string,
  S extends TObject,
  R extends RelatedConfig<DB> = RelatedConfig<DB>
> extends ListOptions<S>, AggregateOptions<FieldOf<S>, RelationPath<S>> {
  /** The Kysely instance to query. The viewset never closes it. */
  db: Kysely<DB>
  /** Optional Kysely instance for LIST and GET, for example a read replica. Defaults to `db`. */
  readDb?: Kysely<DB>
  /** With `readDb`: when LIST and GET read `db` instead (README "Read replicas"). */
  replica?: ReplicaOptions
  /** The table, a key of the Kysely `DB` type. `schema.table` is allowed on PostgreSQL. */
  table: TB
  /** A TypeBox object: the request body and the response. Its fields must be columns or relations. */
  schema: S
  /**
   * The key: a column, or the columns of a composite key in key order (served as `{prefix}/{part1},{part2}`).
   * Default: `'id'` when the schema has it, else the table's own primary key. A single-column key is read-only.
   */
  primaryKey?: FieldOf<S> | readonly [FieldOf<S>, ...Array<FieldOf<S>>]
  /** The methods to register (default: all but `'BULK'`). */
  methods?: readonly ViewsetMethod[]
  /** OpenAPI tags of every route. */
  tags?: readonly string[]
  /** Base of operationIds and component names (default: from the full route prefix, `/admin/items` → `AdminItems`). */
  name?: string
  /**
   * An integer column that versions each row: every PUT and PATCH increments it with the write, and the
   * `ETag` is its value (`"3"`). It is read-only. Without it, the `ETag` is a hash of the row as GET sends it.
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'items', schema: Item, versionField: 'version' })
   * ```
   */
  versionField?: FieldOf<S>
  /** PUT, PATCH and DELETE without `If-Match` answer 428 (default false). POST never needs it. */
  requireIfMatch?: boolean
  /**
   * What a 409 `FST_VIEWSET_CONFLICT` says (default `'field'`): the constraint's field (`A row with the same email
   * already exists`, `errors` naming a bulk element), or with `'none'` only `The request conflicts with the
   * stored data`, for every conflict of the viewset. A unique value held by a row outside the caller's `scope`
   * still answers 409 (the write cannot succeed), but no longer says which field it was about.
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'users', schema: User, scope, conflictDetail: 'none' })
   * ```
   */
  conflictDetail?: 'field' | 'none'
  /**
   * Nested resources: binds each parameter of a prefix such as `/projects/:projectId/issues` to a column (a
   * single-column foreign key), `{ projectId: 'project_id' }`. Every route then reads and writes only the rows
   * whose column holds the parameter's value (typed as the column's field), writes set it, a body that sends
   * another value is a 400, and a parent that does not exist or that the caller's rules hide is a 404.
   *
   * @example
   * ```ts
   * await app.register(createViewset({ db, table: 'issues', schema: Issue, parent: { projectId: 'project_id' } }),
   *   { prefix: '/projects/:projectId/issues' })
   * ```
   */
  parent?: Readonly<Record<string, keyof DB[TB] & string>>
  /**
   * `Idempotency-Key` on POST, BULK, PATCH and the bulk updates (default off): a retry answers the first answer,
   * stored in the write's transaction in a table of keys; see the README's "Idempotent retries".
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'orders', schema: Order, idempotency: { createTable: true } })
   * ```
   */
  idempotency?: boolean | IdempotencyOptions
  /**
   * Soft delete (default off): DELETE sets this column (a nullable timestamp to the time of deletion, or a boolean to
   * true) instead of removing the row, and every read and write (relations from other viewsets included) treats a
   * deleted row as absent; `?deleted=include|only` shows deleted rows to callers `showDeleted` admits; RESTORE and
   * PURGE (opt-in `methods`) undelete and hard-delete. See the README's "Soft delete".
   *
   * @example
   * ```ts
   * const methods: ViewsetMethod[] = ['LIST', 'GET', 'DELETE', 'RESTORE', 'PURGE']
   * createViewset({ db, table: 'posts', schema: Post, softDelete: 'deleted_at', methods })
   * ```
   */
  softDelete?: (keyof DB[TB] & string) | SoftDeleteOptions<keyof DB[TB] & string>

  /**
   * A row's history (default off): every write of the viewset (create, update, delete; bulk, nested and batch writes
   * included) recorded in its own transaction in a history table, with the row before and after as stored and who
   * wrote; served by `GET {prefix}/:id/history` (method `'HISTORY'`) and `GET {prefix}/:id?as_of=<date-time>`. See the
   * README's "History".
   *
   * @example
   * ```ts
   * const methods = [...defaultMethods, ...historyMethods]
   * createViewset({ db, table: 'orders', schema: Order, history: { createTable: true }, methods })
   * ```
   */
  history?: boolean | HistoryOptions
  /**
   * The changes to the rows (default off; needs `history`): a live feed on the LIST URL (`GET {prefix}?<filters>` with
   * `Accept: text/event-stream` streams `insert`, `update` and `delete` events of the rows the filters and the
   * caller's rules admit; README "Live changes"), and `GET {prefix}?changed_since=<position>`, the rows changed and the
   * keys deleted since a position of the history, page by page (README "Changes since").
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'items', schema: Item, history: { createTable: true }, changes: true })
   * ```
   */
  changes?: boolean | ChangesOptions

  /** Methods that require `Authorization: Bearer <jwt>`; a derived method ({@link baseMethods}: BULK) is protected
   * whenever its base is. */
  protectedMethods?: readonly ViewsetMethod[]
  /**
   * States that `scope` and `beforeWrite` read no token (default false). Without it, a viewset with either fails
   * at startup when nothing can verify tokens there (no @fastify/jwt registered before it, no `authenticate`):
   * every token would be ignored, and the rules would see `null`.
   */
  withoutTokens?: boolean
  /**
   * PostgreSQL only: PostgreSQL's row-level security policies enforce the rules, as PostgREST and Supabase run them.
   * Each request's statements run in one transaction with `request.jwt.claims` set to the token's claims ('{}'
   * without one) and the role of its `role` claim when in `roles`, else `defaultRole` (another claim is a 403).
   * A row the policy's WITH CHECK refuses is a 403; see the README's "Row-level security on PostgreSQL".
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'tasks', schema: Task, rowLevelSecurity: { roles: ['app_user'], defaultRole: 'anon' } })
   * ```
   */
  rowLevelSecurity?: RowLevelSecurityOptions
  /** Replaces `request.jwtVerify()`: returns the claims, or throws to answer 401. */
  authenticate?: (request: FastifyRequest) => Promise<ViewsetToken> | ViewsetToken
  /**
   * Called after authentication on protected methods and protected custom routes (method `'CUSTOM'`);
   * returning false answers 403. Never called on open methods.
   */
  authorize?: (token: ViewsetToken, method: AuthorizedMethod, request: FastifyRequest) => Promise<boolean> | boolean

  /** Most elements of one `POST {prefix}/bulk` or `PATCH {prefix}/bulk` (default 1,000); more is a 400. */
  maxBulk?: number
  /** Most rows one PATCH_MANY or DELETE_MANY changes (default `maxBulk`); more, or past `Prefer: max-affected`: 400. */
  maxAffected?: number
  /**
   * The natural key of upserts (default: none). With it, `POST {prefix}` and `POST {prefix}/bulk` sent with
   * `Prefer: resolution=merge-duplicates` insert each body, or update the row with the same values in these
   * fields (only the fields the body sent, in the PATCH `scope`), and answer 201 when a row was created, else
   * 200, with `Preference-Applied`. It must be exactly the columns of one unique constraint or plain unique
   * index, none read-only; on MySQL and MariaDB, also the table's only unique key besides an AUTO_INCREMENT
   * key (checked at startup). Without it, the header is ignored.
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'users', schema: User, conflictFields: ['email'] })
   * ```
   */
  conflictFields?: readonly FieldOf<S>[]

  /** Eager loading of relation fields. */
  relatedConfig?: R

  /**
   * Row rule ANDed into every statement that reads or changes rows (default: none): one function for every method
   * ({@link ScopeFunction}; `undefined` is no restriction), or one entry per method ({@link ScopeRules}; a
   * missing entry fails at startup). A subclass may override the `scope` method instead. It also applies where
   * other viewsets read this table (relations, relation paths, foreign keys written).
   */
  scope?: ScopeFunction<DB, TB> | ScopeRules<DB, TB>
  /** What POST, PUT and PATCH write, from the body's writable fields (default: them as sent); see {@link
   * BeforeWriteFunction}. */
  beforeWrite?: BeforeWriteFunction<DB, TB>
  /** Field rules per request (default: none): the fields a caller may not read or write; see {@link
   * FieldAccessFunction}. Also where other viewsets' relations and relation paths read this table. */
  fieldAccess?: FieldAccessFunction
  /** What runs after each row written, in the write's transaction (default: nothing): {@link AfterWriteFunction}. */
  afterWrite?: AfterWriteFunction<DB, Static<S>>
  /**
   * The relation fields loaded when a request names no `?fields=`, on LIST, GET and write responses
   * (default: every configured relation; `[]` for none). A relation not loaded is absent from the object;
   * `?fields=id,tags` still loads `tags`.
   *
   * @example
   * ```ts
   * // tags only with ?fields=
   * createViewset({ db, table: 'books', schema: Book, relatedConfig, defaultRelations: ['author'] })
   * ```
   */
  defaultRelations?: readonly FieldOf<S>[]
}

type RelationKeys<R> =
  | (R extends { selectRelated?: infer A } ? keyof A : never)
  | (R extends { prefetchRelated?: infer B } ? keyof B : never)

/** The relation fields R declares; when R is any relatedConfig (not inferred), every object-valued field. */
type DeclaredRelations<S extends TObject, R> = string extends RelationKeys<R> ? ObjectFields<S> : RelationKeys<R>

type NonColumns<DB, TB extends keyof DB, S extends TObject, R> = Exclude<
  keyof S['properties'],
  keyof DB[TB] | DeclaredRelations<S, R> | RelationKeys<S extends { relatedConfig?: infer C } ? C : never>
>

/**
 * Fails to compile when a schema field is neither a column of the table nor a declared relation.
 * The error names the offending fields. The constructor of `Viewset` and `createViewset` take their options
 * intersected with it.
 *
 * @example
 * ```ts
 * function myViewset<S extends TObject> (options: ViewsetOptions<DB, 'items', S> & CheckedSchema<DB, 'items', S, {}>) {
 *   return createViewset(options)
 * }
 * ```
 */
export type CheckedSchema<DB, TB extends keyof DB, S extends TObject, R> = [NonColumns<DB, TB, S, R>] extends [never]
  ? unknown
  : { schema: { 'schema fields that are not columns of the table': NonColumns<DB, TB, S, R> } }

/**
 * The constraint on a viewset's schema type: a TypeBox object whose every field is a column of the table,
 * or a field whose value is an object or an array (a relation, checked at mounting). A schema with any other
 * field fails to compile, naming the fields, in `new Viewset(...)`, `createViewset(...)` and a subclass's
 * type parameters (`class X extends Viewset<DB, 'items', typeof Item>`).
 *
 * @example
 * ```ts
 * // error: Type '...' does not satisfy the constraint ... 'schema fields that are not columns of the table': "colour"
 * class Paint extends Viewset<DB, 'items', typeof WithColour> {}
 * ```
 */
export type SchemaOf<DB, TB extends keyof DB, S> = TObject &
  ([UndeclaredFields<DB, TB, S>] extends [never]
    ? unknown
    : { 'schema fields that are not columns of the table': UndeclaredFields<DB, TB, S> })

/** The fields of S that are neither columns nor object-valued (S unconstrained: it appears in its own constraint). */
type UndeclaredFields<DB, TB extends keyof DB, S> = S extends TObject ? NonColumns<DB, TB, S, RelatedConfig<DB>> : never
