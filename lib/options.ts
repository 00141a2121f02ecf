import type { Static, TObject } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import type { Expression, ExpressionBuilder, Kysely, SqlBool, Updateable } from 'kysely'
import { invalidOption as fail } from './errors.js'
import type { RelatedConfig } from './relations/config.js'
import { isRecord } from './schema/object-schema.js'

/** The logical methods of a viewset, in the order their routes are added. `BULK` is `POST {prefix}/bulk`. */
export const viewsetMethods = ['LIST', 'GET', 'POST', 'BULK', 'PUT', 'PATCH', 'DELETE'] as const
export type ViewsetMethod = (typeof viewsetMethods)[number]

/** The methods registered when `methods` is not given: all but `BULK`, which writes many rows per request. */
export const defaultMethods: readonly ViewsetMethod[] = viewsetMethods.filter((method) => method !== 'BULK')

/** Filter operators of `filterFields`. `eq` is also the bare `?field=value`. */
export const filterOperators = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'contains', 'isnull'] as const
export type FilterOperator = (typeof filterOperators)[number]

/** The claims of a token when the app declares no user type: whatever claims it carries, `sub` a string when present.
 * */
export interface TokenClaims {
  /** The subject: who the token was issued to. */
  sub?: string
  [claim: string]: unknown
}

/**
 * What @fastify/jwt puts on `request.user`: the app's `FastifyJWT['user']` when it declares one, else a
 * payload type that is not only objects. Read through Fastify's request type, which @fastify/jwt augments,
 * so that nothing here imports @fastify/jwt (an optional peer).
 */
type JwtUser = FastifyRequest extends { user: infer User } ? User : undefined

/**
 * The decoded claims of a verified token, as handed to handlers: the app's @fastify/jwt user type where
 * the app declares one (`declare module '@fastify/jwt' { interface FastifyJWT { user: ... } }`), else
 * {@link TokenClaims}. Either way `token.sub` is a string when present.
 *
 * @example
 * ```ts
 * override async createElement (
 *   request: CreateRequest<typeof Item>, _reply: FastifyReply, token: ViewsetToken | null,
 * ) {
 *   return await this.insert({ ...this.writable(request.body), owner: token?.sub ?? null })
 * }
 * ```
 */
export type ViewsetToken = [JwtUser] extends [object] ? JwtUser & { sub?: string } : TokenClaims

/** What `authorize` is asked about: a generated method, or `'CUSTOM'` for a protected custom route. */
export type AuthorizedMethod = ViewsetMethod | 'CUSTOM'

/** The viewset methods a `scope` restricts: those that read or change existing rows. */
export type ScopedMethod = Exclude<ViewsetMethod, 'POST' | 'BULK'>
/** The viewset methods that write a body, and so run `beforeWrite`. */
export type WriteMethod = 'POST' | 'BULK' | 'PUT' | 'PATCH'

/**
 * What `scope` and `beforeWrite` know of a request: the request itself, the claims of the verified bearer
 * token (`null` when no valid token was sent), and the viewset method (never the HTTP verb).
 */
export interface RowContext<M extends ViewsetMethod = ViewsetMethod> {
  readonly request: FastifyRequest
  readonly token: ViewsetToken | null
  readonly method: M
}

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
 * Runs for POST, BULK (each element), PUT and PATCH after validation, before the statement: receives the writable
 * fields the body
 * sent and returns what is written, which may set read-only fields and columns outside the schema.
 *
 * @example
 * ```ts
 * beforeWrite: (values, { token }) => ({ ...values, owner: token?.sub })
 * ```
 */
export type BeforeWriteFunction<DB, TB extends keyof DB> = (
  values: Updateable<DB[TB]>,
  context: RowContext<WriteMethod>,
) => Updateable<DB[TB]> | Promise<Updateable<DB[TB]>>

/** Field names of a schema. */
export type FieldOf<S extends TObject> = keyof Static<S> & string

/**
 * A dotted path through a relation field of the schema, such as `author.name`, `tags.name` or
 * `author.publisher.name`: the relations and the last field are checked against `relatedConfig` at registration.
 */
export type RelationPath<S extends TObject> = `${ObjectFields<S> & string}.${string}`

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
> {
  /** The Kysely instance to query. The viewset never closes it. */
  db: Kysely<DB>
  /** Optional Kysely instance for LIST and GET, for example a read replica. Defaults to `db`. */
  readDb?: Kysely<DB>
  /** The table, a key of the Kysely `DB` type. `schema.table` is allowed on PostgreSQL. */
  table: TB
  /** A TypeBox object: the request body and the response. Its fields must be columns or relations. */
  schema: S
  /** The primary key column (default `'id'`). It is always read-only. */
  primaryKey?: FieldOf<S>
  /** The methods to register (default: all but `'BULK'`). */
  methods?: readonly ViewsetMethod[]
  /** OpenAPI tags of every route. */
  tags?: readonly string[]
  /** Base of operationIds and component names (default: from the full route prefix, `/admin/items` → `AdminItems`). */
  name?: string
  /** Largest `limit` a client may ask for (default 100). */
  maxLimit?: number
  /** `limit` when the client sends none (default 20). */
  defaultLimit?: number
  /**
   * Largest `offset` a client may ask for (default 10,000): a deep offset makes the database read and
   * drop every row before it. Past it, LIST answers 400 and the `Link` header has no `next`.
   */
  maxOffset?: number
  /**
   * Longest `?search=` or `__contains` term, in characters (code points, after URL decoding; default 100).
   * A substring match reads every row, and its cost grows with the term.
   */
  maxSearchLength?: number
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

  /** Methods that require `Authorization: Bearer <jwt>`. */
  protectedMethods?: readonly ViewsetMethod[]
  /** Replaces `request.jwtVerify()`: returns the claims, or throws to answer 401. */
  authenticate?: (request: FastifyRequest) => Promise<ViewsetToken> | ViewsetToken
  /**
   * Called after authentication on protected methods and protected custom routes (method `'CUSTOM'`);
   * returning false answers 403. Never called on open methods.
   */
  authorize?: (token: ViewsetToken, method: AuthorizedMethod, request: FastifyRequest) => Promise<boolean> | boolean

  /** Fields matched by `?search=` (case-insensitive substring, OR-ed); also `selectRelated` paths such as
   * `'author.name'`. */
  searchFields?: ReadonlyArray<FieldOf<S> | RelationPath<S>>
  /** Fields allowed in `?order_by=`; also `selectRelated` paths such as `'author.name'`. */
  orderingFields?: ReadonlyArray<FieldOf<S> | RelationPath<S>>
  /** Order when `?order_by` is absent, such as `'-created_at'` or `'name,-id'`. */
  defaultOrder?: string
  /**
   * Filterable fields and their operators. A relation path (`'author.name'`, `'tags.name'`, at most two
   * relations) filters the rows that have at least one related row matching.
   */
  filterFields?: { readonly [K in FieldOf<S> | RelationPath<S>]?: readonly FilterOperator[] }
  /** Most elements of one `POST {prefix}/bulk` (default 1,000); more is a 400. */
  maxBulk?: number
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
  /** Always send `X-Total-Count` (default: only with `?count=true`). */
  alwaysCount?: boolean
  /**
   * How LIST pages (default `'offset'`): `'offset'` takes `?offset=`; `'cursor'` takes `?cursor=` (from the
   * `Link` header's `next` and `prev`), costs the same on every page, and answers an `offset` with a 400.
   */
  pagination?: 'offset' | 'cursor'

  /** Eager loading of relation fields. */
  relatedConfig?: R

  /**
   * Row rule ANDed into every statement that reads or changes rows (default: none); see {@link ScopeFunction}.
   * A subclass may override the `scope` method instead. Not applied to tables loaded through `relatedConfig`.
   */
  scope?: ScopeFunction<DB, TB>
  /** What POST, PUT and PATCH write, from the body's writable fields (default: them as sent); see {@link
   * BeforeWriteFunction}. */
  beforeWrite?: BeforeWriteFunction<DB, TB>
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

/**
 * The fields that may be relations when the relatedConfig is not known to the type (a subclass names only
 * `Viewset<DB, TB, S>`): those whose values are objects or arrays. The loader checks at registration that
 * each one is declared; a scalar field that is not a column still fails to compile.
 */
type ObjectFields<S extends TObject> = {
  [K in keyof Static<S>]-?: NonNullable<Static<S>[K]> extends object ? K : never
}[keyof Static<S>]

/** The relation fields R declares; when R is any relatedConfig (not inferred), every object-valued field. */
type DeclaredRelations<S extends TObject, R> = string extends RelationKeys<R> ? ObjectFields<S> : RelationKeys<R>

type NonColumns<DB, TB extends keyof DB, S extends TObject, R> = Exclude<
  keyof S['properties'],
  keyof DB[TB] | DeclaredRelations<S, R> | RelationKeys<S extends { relatedConfig?: infer C } ? C : never>
>

/**
 * Fails to compile when a schema field is neither a column of the table nor a declared relation.
 * The error names the offending fields.
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

/**
 * Every key an options object may hold, by where it appears. Unknown keys fail at construction (a typo
 * such as `protectMethods` would otherwise leave POST open), so a new option is one line here; its value
 * is checked where it is used.
 */
const knownOptionKeys = {
  options: [
    'db',
    'readDb',
    'table',
    'schema',
    'primaryKey',
    'methods',
    'tags',
    'name',
    'maxLimit',
    'defaultLimit',
    'protectedMethods',
    'authenticate',
    'authorize',
    'searchFields',
    'orderingFields',
    'defaultOrder',
    'filterFields',
    'alwaysCount',
    'maxSearchLength',
    'maxOffset',
    'pagination',
    'maxBulk',
    'conflictFields',
    'relatedConfig',
    'defaultRelations',
    'scope',
    'beforeWrite',
    'versionField',
    'requireIfMatch',
  ],
  relatedConfig: ['selectRelated', 'prefetchRelated'],
  selectRelated: ['table', 'foreignKey', 'references', 'relatedConfig'],
  prefetchRelated: ['table', 'foreignKey', 'through', 'references', 'orderBy', 'limit', 'relatedConfig'],
  through: ['table', 'sourceKey', 'targetKey'],
} as const satisfies Record<string, readonly string[]>

// Every key of ViewsetOptions is listed: an option missing from the table fails to compile, naming it.
type UnlistedOption = Exclude<keyof ViewsetOptions<unknown, never, TObject>, (typeof knownOptionKeys.options)[number]>
const everyOptionListed: [UnlistedOption] extends [never] ? true : UnlistedOption = true
void everyOptionListed

/** Levenshtein distance, stopping early past `limit`: a few short keys, so no library. */
function editDistance (a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution))
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/** Throws for the first key of `value` that is not in `known`, naming its path and the closest known key. */
function checkKeys (path: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue
    let best: string | undefined
    let distance = 3
    for (const candidate of known) {
      const d = editDistance(key.toLowerCase(), candidate.toLowerCase(), 2)
      if (d < distance) [best, distance] = [candidate, d]
    }
    fail(
      path === '' ? key : `${path}.${key}`,
      best === undefined ? `unknown key; the keys are ${known.join(', ')}` : `unknown key; did you mean ${best}?`
    )
  }
}

/** The object a relation field holds: `Author`, `Type.Union([Author, Type.Null()])` or `Type.Array(Tag)`. */
function relationTarget (property: unknown): Record<string, unknown> | undefined {
  if (!isRecord(property)) return undefined
  if (property.type === 'object') return property
  if (property.type === 'array') return relationTarget(property.items)
  const objects = Array.isArray(property.anyOf)
    ? property.anyOf.filter((member) => isRecord(member) && member.type === 'object')
    : []
  return objects.length === 1 ? relationTarget(objects[0]) : undefined
}

// Deep enough for any real nesting; a schema whose relatedConfig points back at itself stops here and
// the relation loader reports it.
const maxKeyDepth = 10

/**
 * Checks the keys of a relatedConfig, its entries and their `through`, then of the nested configs (the
 * entry's, else the one attached to the related schema). Values are checked by the relation loader.
 */
function checkRelatedConfigKeys (path: string, config: unknown, schema: unknown, depth: number): void {
  if (!isRecord(config) || depth > maxKeyDepth) return
  checkKeys(path, config, knownOptionKeys.relatedConfig)
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {}
  for (const kind of ['selectRelated', 'prefetchRelated'] as const) {
    const entries = config[kind]
    if (!isRecord(entries)) continue
    for (const [field, entry] of Object.entries(entries)) {
      if (!isRecord(entry)) continue
      const where = `${path}.${kind}.${field}`
      checkKeys(where, entry, knownOptionKeys[kind])
      if (kind === 'prefetchRelated' && isRecord(entry.through)) {
        checkKeys(`${where}.through`, entry.through, knownOptionKeys.through)
      }
      const target = relationTarget(Object.hasOwn(properties, field) ? properties[field] : undefined)
      checkRelatedConfigKeys(`${where}.relatedConfig`, entry.relatedConfig ?? target?.relatedConfig, target, depth + 1)
    }
  }
}

function isViewsetMethod (value: unknown): value is ViewsetMethod {
  return viewsetMethods.some((method) => method === value)
}

function isStringArray (value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string')
}

function checkMethodList (option: string, value: unknown): ViewsetMethod[] {
  if (!Array.isArray(value)) {
    fail(option, `expected an array of ${viewsetMethods.join(', ')}, got ${JSON.stringify(value)}`)
  }
  const seen = new Set<ViewsetMethod>()
  for (const method of value) {
    if (!isViewsetMethod(method)) {
      fail(option, `unknown method ${JSON.stringify(method)}; allowed: ${viewsetMethods.join(', ')}`)
    }
    if (seen.has(method)) fail(option, `method ${JSON.stringify(method)} is listed twice`)
    seen.add(method)
  }
  // LIST before GET, and every route in a fixed order, whatever order was given.
  return viewsetMethods.filter((method) => seen.has(method))
}

/** Checks a method list (for `register(methods)`), sorted into route order. */
export function checkMethods (value: unknown, option = 'methods'): ViewsetMethod[] {
  return checkMethodList(option, value)
}

/** The options with defaults applied, checked and frozen. */
export interface ResolvedOptions {
  readonly table: string
  readonly primaryKey: string
  readonly methods: readonly ViewsetMethod[]
  readonly protectedMethods: readonly ViewsetMethod[]
  readonly tags: readonly string[]
  readonly name: string | undefined
  readonly maxLimit: number
  readonly defaultLimit: number
  readonly maxOffset: number
  readonly maxSearchLength: number
  readonly pagination: 'offset' | 'cursor'
  readonly maxBulk: number
  readonly conflictFields: readonly string[] | undefined
  readonly versionField: string | undefined
  readonly requireIfMatch: boolean
}

function positiveInteger (option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    fail(option, 'expected a positive integer')
  }
  return value
}

/** Checks the options that need no database, before anything is registered. */
export function resolveOptions (options: unknown): ResolvedOptions {
  if (!isRecord(options)) fail('options', 'expected an object')
  checkKeys('', options, knownOptionKeys.options)
  const { db, table, schema } = options
  if (typeof db !== 'object' || db === null || !('selectFrom' in db) || typeof db.selectFrom !== 'function') {
    fail('db', 'expected a Kysely instance')
  }
  if (typeof table !== 'string' || table === '') fail('table', 'expected a table name')
  if (
    !isRecord(schema) ||
    schema.type !== 'object' ||
    typeof schema.properties !== 'object' ||
    schema.properties === null
  ) {
    fail('schema', 'expected a TypeBox object schema (Type.Object)')
  }
  const properties = schema.properties
  checkRelatedConfigKeys('relatedConfig', options.relatedConfig ?? schema.relatedConfig, schema, 0)
  const primaryKey = options.primaryKey ?? 'id'
  if (typeof primaryKey !== 'string' || !(primaryKey in properties)) {
    fail(
      'primaryKey',
      `"${String(primaryKey)}" is not a field of the schema (fields: ${Object.keys(properties).join(', ')})`
    )
  }
  const methods = checkMethodList('methods', options.methods ?? defaultMethods)
  const protectedMethods = checkMethodList('protectedMethods', options.protectedMethods ?? [])
  const maxLimit = options.maxLimit ?? 100
  if (typeof maxLimit !== 'number' || !Number.isInteger(maxLimit) || maxLimit < 1) {
    fail('maxLimit', 'expected a positive integer')
  }
  const defaultLimit = options.defaultLimit ?? Math.min(20, maxLimit)
  if (
    typeof defaultLimit !== 'number' ||
    !Number.isInteger(defaultLimit) ||
    defaultLimit < 1 ||
    defaultLimit > maxLimit
  ) { fail('defaultLimit', `expected an integer from 1 to maxLimit (${String(maxLimit)})`) }
  const maxOffset = positiveInteger('maxOffset', options.maxOffset ?? 10_000)
  const maxSearchLength = positiveInteger('maxSearchLength', options.maxSearchLength ?? 100)
  const maxBulk = positiveInteger('maxBulk', options.maxBulk ?? 1000)
  const pagination = options.pagination ?? 'offset'
  if (pagination !== 'offset' && pagination !== 'cursor') {
    fail('pagination', `expected 'offset' or 'cursor', got ${JSON.stringify(pagination)}`)
  }
  const tags = options.tags ?? []
  if (!isStringArray(tags)) fail('tags', 'expected an array of strings')
  const name = options.name
  if (name !== undefined && (typeof name !== 'string' || !/^[A-Za-z][A-Za-z0-9_]*$/.test(name))) {
    fail('name', 'expected an identifier such as "Items"')
  }
  const versionField = options.versionField
  if (versionField !== undefined && typeof versionField !== 'string') fail('versionField', 'expected a field name')
  if (versionField !== undefined) {
    const property: unknown = Object.entries(properties).find(([field]) => field === versionField)?.[1]
    if (!isRecord(property)) {
      fail(
        'versionField',
        `"${versionField}" is not a field of the schema (fields: ${Object.keys(properties).join(', ')})`
      )
    }
    if (property.type !== 'integer') fail('versionField', `"${versionField}" must be an integer field (Type.Integer())`)
    if (versionField === primaryKey) fail('versionField', 'the primary key cannot be the version')
  }
  const conflictFields = options.conflictFields
  if (conflictFields !== undefined) {
    if (!isStringArray(conflictFields) || conflictFields.length === 0) {
      fail('conflictFields', 'expected a non-empty array of field names')
    }
    const unknown = conflictFields.filter((field) => !Object.hasOwn(properties, field))
    if (unknown.length > 0) {
      fail(
        'conflictFields',
        `${unknown.join(', ')} ${unknown.length === 1 ? 'is not a field' : 'are not fields'} of the schema (fields: ${Object.keys(properties).join(', ')})`
      )
    }
    if (new Set(conflictFields).size !== conflictFields.length) fail('conflictFields', 'a field is listed twice')
  }
  const requireIfMatch = options.requireIfMatch ?? false
  if (typeof requireIfMatch !== 'boolean') fail('requireIfMatch', 'expected a boolean')
  for (const key of ['authenticate', 'authorize', 'scope', 'beforeWrite'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'function') fail(key, 'expected a function')
  }
  return Object.freeze({
    table,
    primaryKey,
    methods: Object.freeze(methods),
    protectedMethods: Object.freeze(protectedMethods),
    tags: Object.freeze([...tags]),
    name,
    maxLimit,
    defaultLimit,
    maxOffset,
    maxSearchLength,
    pagination,
    maxBulk,
    conflictFields: conflictFields === undefined ? undefined : Object.freeze([...conflictFields]),
    versionField,
    requireIfMatch,
  })
}
