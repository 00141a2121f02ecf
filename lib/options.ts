import type { Static, TObject } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { ViewsetErrors } from './errors.js'
import type { RelatedConfig } from './relations/config.js'

/** The logical methods of a viewset, in the order their routes are added. */
export const viewsetMethods = ['LIST', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
export type ViewsetMethod = typeof viewsetMethods[number]

/** Filter operators of `filterFields`. `eq` is also the bare `?field=value`. */
export const filterOperators = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'contains', 'isnull'] as const
export type FilterOperator = typeof filterOperators[number]

/** The decoded claims of a verified token, as handed to handlers. */
export type ViewsetToken = Record<string, unknown>

/** Field names of a schema. */
export type FieldOf<S extends TObject> = keyof Static<S> & string

/**
 * Options of {@link createViewset} and of the {@link Viewset} constructor.
 *
 * @example
 * ```ts
 * createViewset({ db, table: 'items', schema: Item, tags: ['items'], methods: ['LIST', 'GET'] })
 * ```
 */
export interface ViewsetOptions<DB, TB extends keyof DB & string, S extends TObject, R extends RelatedConfig<DB> = RelatedConfig<DB>> {
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
  /** The methods to register (default: all). */
  methods?: readonly ViewsetMethod[]
  /** OpenAPI tags of every route. */
  tags?: readonly string[]
  /** Base of operationIds and component names (default: from the full route prefix, `/admin/items` → `AdminItems`). */
  name?: string
  /** Largest `limit` a client may ask for (default 100). */
  maxLimit?: number
  /** `limit` when the client sends none (default 20). */
  defaultLimit?: number

  /** Methods that require `Authorization: Bearer <jwt>`. */
  protectedMethods?: readonly ViewsetMethod[]
  /** Replaces `request.jwtVerify()`: returns the claims, or throws to answer 401. */
  authenticate?: (request: FastifyRequest) => Promise<ViewsetToken> | ViewsetToken
  /** Called after authentication; returning false answers 403. */
  authorize?: (token: ViewsetToken, method: ViewsetMethod, request: FastifyRequest) => Promise<boolean> | boolean

  /** Fields matched by `?search=` (case-insensitive substring, OR-ed). */
  searchFields?: readonly FieldOf<S>[]
  /** Fields allowed in `?order_by=`. */
  orderingFields?: readonly FieldOf<S>[]
  /** Order when `?order_by` is absent, such as `'-created_at'` or `'name,-id'`. */
  defaultOrder?: string
  /** Filterable fields and their operators. */
  filterFields?: { readonly [K in FieldOf<S>]?: readonly FilterOperator[] }
  /** Always send `X-Total-Count` (default: only with `?count=true`). */
  alwaysCount?: boolean

  /** Eager loading of relation fields. */
  relatedConfig?: R
}

type RelationKeys<R> =
  | (R extends { selectRelated?: infer A } ? keyof A : never)
  | (R extends { prefetchRelated?: infer B } ? keyof B : never)

type NonColumns<DB, TB extends keyof DB, S extends TObject, R> =
  Exclude<keyof S['properties'], keyof DB[TB] | RelationKeys<R> | RelationKeys<S extends { relatedConfig?: infer C } ? C : never>>

/**
 * Fails to compile when a schema field is neither a column of the table nor a declared relation.
 * The error names the offending fields.
 */
export type CheckedSchema<DB, TB extends keyof DB, S extends TObject, R> =
  [NonColumns<DB, TB, S, R>] extends [never]
    ? unknown
    : { schema: { 'schema fields that are not columns of the table': NonColumns<DB, TB, S, R> } }

function fail (option: string, message: string): never {
  throw new ViewsetErrors.InvalidOption(option, message)
}

function checkMethodList (option: string, value: unknown): ViewsetMethod[] {
  if (!Array.isArray(value)) fail(option, `expected an array of ${viewsetMethods.join(', ')}, got ${JSON.stringify(value)}`)
  const seen = new Set<string>()
  for (const method of value) {
    if (!(viewsetMethods as readonly unknown[]).includes(method)) fail(option, `unknown method ${JSON.stringify(method)}; allowed: ${viewsetMethods.join(', ')}`)
    if (seen.has(method as string)) fail(option, `method ${JSON.stringify(method)} is listed twice`)
    seen.add(method as string)
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
  readonly schema: TObject
  readonly primaryKey: string
  readonly methods: readonly ViewsetMethod[]
  readonly protectedMethods: readonly ViewsetMethod[]
  readonly tags: readonly string[]
  readonly name: string | undefined
  readonly maxLimit: number
  readonly defaultLimit: number
}

/** Checks the options that need no database, before anything is registered. */
export function resolveOptions (options: Record<string, unknown>): ResolvedOptions {
  if (typeof options !== 'object' || options === null) fail('options', 'expected an object')
  const { db, table, schema } = options
  if (typeof db !== 'object' || db === null || typeof (db as { selectFrom?: unknown }).selectFrom !== 'function') fail('db', 'expected a Kysely instance')
  if (typeof table !== 'string' || table === '') fail('table', 'expected a table name')
  if (typeof schema !== 'object' || schema === null || (schema as { type?: unknown }).type !== 'object' || typeof (schema as { properties?: unknown }).properties !== 'object') {
    fail('schema', 'expected a TypeBox object schema (Type.Object)')
  }
  const properties = (schema as TObject).properties
  const primaryKey = options.primaryKey ?? 'id'
  if (typeof primaryKey !== 'string' || !(primaryKey in properties)) fail('primaryKey', `"${String(primaryKey)}" is not a field of the schema (fields: ${Object.keys(properties).join(', ')})`)
  const methods = checkMethodList('methods', options.methods ?? viewsetMethods)
  const protectedMethods = checkMethodList('protectedMethods', options.protectedMethods ?? [])
  const maxLimit = options.maxLimit ?? 100
  if (!Number.isInteger(maxLimit) || (maxLimit as number) < 1) fail('maxLimit', 'expected a positive integer')
  const defaultLimit = options.defaultLimit ?? Math.min(20, maxLimit as number)
  if (!Number.isInteger(defaultLimit) || (defaultLimit as number) < 1 || (defaultLimit as number) > (maxLimit as number)) fail('defaultLimit', `expected an integer from 1 to maxLimit (${String(maxLimit)})`)
  const tags = options.tags ?? []
  if (!Array.isArray(tags) || !tags.every((tag) => typeof tag === 'string')) fail('tags', 'expected an array of strings')
  const name = options.name
  if (name !== undefined && (typeof name !== 'string' || !/^[A-Za-z][A-Za-z0-9_]*$/.test(name))) fail('name', 'expected an identifier such as "Items"')
  for (const key of ['authenticate', 'authorize'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'function') fail(key, 'expected a function')
  }
  return Object.freeze({
    table,
    schema: schema as TObject,
    primaryKey,
    methods: Object.freeze(methods),
    protectedMethods: Object.freeze(protectedMethods),
    tags: Object.freeze([...tags] as string[]),
    name,
    maxLimit: maxLimit as number,
    defaultLimit: defaultLimit as number,
  })
}
