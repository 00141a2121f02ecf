import { sql } from 'kysely'
import type { Expression, RawBuilder } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { invalidOption, ViewsetErrors } from '../errors.js'
import type { JsonSchema } from '../schema/derive.js'
import { LruCache } from '../execution/lru-cache.js'
import { isList } from '../schema/object-schema.js'
import type { ScalarField, ScalarType } from './field-types.js'
import { nameList } from './field-types.js'
import type { RelatedPath, RelatedRoot } from './related-paths.js'
import type { JsonPath } from './json-paths.js'
import { relatedValue, resolvePath } from './related-paths.js'
import { childCount, countPath } from './child-counts.js'
import { sortKeysPattern } from '../schema/list-patterns.js'
import { maxShapes } from '../data/statement-cache.js'

/** One sort key. */
export interface OrderKey {
  /** A column, or a relation path (`author.name`) when `expression` is set. */
  readonly field: string
  readonly descending: boolean
  readonly nullable: boolean
  /**
   * Where NULLs go, when `order_by` chose it (`.nullsfirst`, `.nullslast`) and it differs from the default rule
   * (NULL the largest value: last ascending, first descending); only on a nullable key.
   */
  readonly nulls?: 'first' | 'last'
  /** The value sorted on when it is not the column `field`: a related row's field (query/related-paths.ts). */
  readonly expression?: Expression<unknown>
  /** A relation path's key: the path and the table it starts from, to apply each request's rules to it. */
  readonly related?: RelatedKey
  /** The rules `expression` applies for this request: their shape, and the values one `expression` binds. */
  readonly ruled?: { readonly shape: string; readonly parameters: readonly unknown[] }
}

/** Where a relation path's sort key reads its value: the path, from the parent table. */
export interface RelatedKey {
  readonly path: RelatedPath
  readonly table: string
  /** True for a count of a to-many relation (`books.count`, query/child-counts.ts) rather than a related field. */
  readonly count?: boolean
}

/** What a sort key's value is in SQL: its expression, else its column (`prefix` qualifies the column). */
export function orderValue (key: OrderKey, prefix = ''): Expression<unknown> {
  return key.expression ?? sql.ref(`${prefix}${key.field}`)
}

/** Where a key's NULLs come in its order: chosen, else the default rule (NULL the largest value). */
export function nullsPosition (key: Pick<OrderKey, 'nulls' | 'descending'>): 'first' | 'last' {
  return key.nulls ?? (key.descending ? 'first' : 'last')
}

/** Whether a key sorts NULL as larger than every value (last ascending, first descending). */
function nullsLargest (key: Pick<OrderKey, 'nulls' | 'descending'>): boolean {
  return (nullsPosition(key) === 'last') !== key.descending
}

/** A key as `order_by` writes it: `-price`, `name`, `-price.nullslast`. */
export function keyText (key: Pick<OrderKey, 'field' | 'nulls' | 'descending'>): string {
  return `${key.descending ? '-' : ''}${key.field}${key.nulls === undefined ? '' : `.nulls${key.nulls}`}`
}

/** `-price.nullslast` read: the name, and the NULLs position when the part chose one. */
export function nullsChoice (part: string, nulls: boolean): { name: string; choice?: 'first' | 'last' } {
  if (nulls && part.endsWith('.nullsfirst')) return { name: part.slice(0, -'.nullsfirst'.length), choice: 'first' }
  if (nulls && part.endsWith('.nullslast')) return { name: part.slice(0, -'.nullslast'.length), choice: 'last' }
  return { name: part }
}

/** A complete ordering: the keys asked for, then the primary key so that no two rows tie. */
export interface Ordering {
  /** Identifies the ORDER BY clause, for the statement cache. */
  readonly shape: string
  readonly keys: readonly OrderKey[]
}

/** `?order_by=`, planned from the `orderingFields` and `defaultOrder` options. */
export interface OrderingPlan {
  /** The `order_by` query parameter, or none when ordering is not offered. */
  readonly properties: Record<string, JsonSchema>
  /** The ordering when `order_by` is absent. */
  readonly defaultOrdering: Ordering
  /** True when the default ordering is the primary key alone (the precompiled page statement's order). */
  readonly byPrimaryKey: boolean
  /** The type of each relation or JSON path that may be sorted on: what a cursor's value of it must be. */
  readonly relatedTypes: ReadonlyMap<string, ScalarType>
  /** The ordering of a request; an unknown field is a 400 that lists the allowed ones. */
  ordering(query: Record<string, unknown>): Ordering
}

/** Why an ordering cannot be read: the part as written, and the field it names. */
export interface OrderProblem {
  readonly part: string
  readonly field: string
  readonly reason: 'unknown' | 'twice'
}

/**
 * Parses sort keys, `'name,-created_at'` or `['name', '-created_at']`, against the fields that may be sorted
 * on, and appends `tieBreaker` (each column of the key) unless it is listed: the one parser of LIST's `order_by` and
 * `defaultOrder` and of a relation's `orderBy`. Returns the first part it cannot use instead.
 *
 * @example
 * ```ts
 * parseOrdering('-year', new Map([['year', { nullable: true }]]), 'id')
 * // { shape: '-year,id', keys: [{ field: 'year', descending: true, nullable: true },
 * //   { field: 'id', descending: false, nullable: false }] }
 * ```
 */
export function parseOrdering (
  text: string | readonly string[],
  fields: ReadonlyMap<string, Pick<OrderKey, 'nullable' | 'expression' | 'related'>>,
  tieBreaker: string | readonly string[] | undefined,
  nulls = false
): Ordering | OrderProblem {
  const keys: OrderKey[] = []
  for (const part of typeof text === 'string' ? text.split(',') : text) {
    const descending = part.startsWith('-')
    const { name, choice } = nullsChoice(descending ? part.slice(1) : part, nulls)
    const field = fields.get(name)
    if (field === undefined) return { part, field: name, reason: 'unknown' }
    if (keys.some((key) => key.field === name)) return { part, field: name, reason: 'twice' }
    const { nullable, expression, related } = field
    const key: OrderKey = expression === undefined
      ? { field: name, descending, nullable }
      : related === undefined
        ? { field: name, descending, nullable, expression }
        : { field: name, descending, nullable, expression, related }
    // A choice that is the default rule's (`-price.nullsfirst`), or on a key with no NULL, is the same order.
    const chosen = choice !== undefined && nullable && choice !== nullsPosition(key)
    keys.push(chosen ? { ...key, nulls: choice } : key)
  }
  for (const column of typeof tieBreaker === 'string' ? [tieBreaker] : tieBreaker ?? []) {
    if (!keys.some((key) => key.field === column)) keys.push({ field: column, descending: false, nullable: false })
  }
  return { shape: keys.map(keyText).join(','), keys }
}

export function isProblem (parsed: Ordering | OrderProblem): parsed is OrderProblem {
  return 'reason' in parsed
}

/** LIST's wording of an ordering it cannot use. */
export function describe (problem: OrderProblem): string {
  return problem.reason === 'twice' ? `"${problem.field}" (listed twice)` : `"${problem.part}"`
}

/** Whether a key needs an `x is null` key in front: its NULLs go where the dialect would not put them. */
export function sortsNullsApart (key: OrderKey, dialect: Pick<ViewsetDialect, 'capabilities'>): boolean {
  return key.nullable && nullsLargest(key) !== dialect.capabilities.nullsSortLargest
}

/** The terms of ORDER BY: each key's column and direction, after the key that sorts its NULLs where the dialect would
 * not (by the default rule, or as the key's `.nullsfirst`/`.nullslast` chose). */
export function orderTerms (
  keys: readonly OrderKey[],
  dialect: Pick<ViewsetDialect, 'capabilities'>,
  prefix = ''
): Array<readonly [Expression<unknown>, 'asc' | 'desc']> {
  const terms: Array<readonly [Expression<unknown>, 'asc' | 'desc']> = []
  for (const key of keys) {
    const { descending } = key
    const direction = descending ? 'desc' : 'asc'
    const column = orderValue(key, prefix)
    // `x is null` (0 before 1) puts NULLs where the dialect would not: last ascending, or first with `desc`.
    if (sortsNullsApart(key, dialect)) {
      terms.push([sql`${column} is null`, nullsLargest(key) === descending ? 'desc' : 'asc'])
    }
    terms.push([column, direction])
  }
  return terms
}

/** A query that takes ORDER BY terms. */
interface Orderable<Q> {
  orderBy(expression: Expression<unknown>, direction: 'asc' | 'desc'): Q
}

/**
 * Adds ORDER BY. Nulls sort as if larger than every value (last ascending, first descending) on every
 * dialect, as PostgreSQL does by default: where the dialect sorts them first (SQLite, MySQL), a nullable
 * key gets an `is null` key in front. LIST and relation `orderBy` both order through here.
 */
export function applyOrdering<Q extends Orderable<Q>> (
  query: Q,
  keys: readonly OrderKey[],
  dialect: Pick<ViewsetDialect, 'capabilities'>,
  prefix = ''
): Q {
  let ordered = query
  for (const [expression, direction] of orderTerms(keys, dialect, prefix)) {
    ordered = ordered.orderBy(expression, direction)
  }
  return ordered
}

/** The same ordering as {@link applyOrdering}, as the text of an `order by` (in a window function, say). */
export function orderClause (
  keys: readonly OrderKey[],
  dialect: Pick<ViewsetDialect, 'capabilities'>,
  prefix = ''
): RawBuilder<unknown> {
  return sql.join(
    orderTerms(keys, dialect, prefix).map(([expression, direction]) => sql`${expression} ${sql.raw(direction)}`)
  )
}

/**
 * Checks `orderingFields` and `defaultOrder` and plans `?order_by=`. `defaultOrder` may use any scalar
 * column (it is the developer's choice); `order_by` only the `orderingFields`, where a JSON path (`meta->rank`) of
 * `jsonPaths` sorts on its value, NULL when missing.
 */
export function planOrdering (
  orderingFields: unknown,
  defaultOrder: unknown,
  fields: ReadonlyMap<string, ScalarField>,
  primaryKey: readonly string[],
  related?: RelatedRoot,
  jsonPaths?: ReadonlyMap<string, JsonPath>,
  computed: ReadonlyMap<string, SortableField> = new Map()
): OrderingPlan {
  const unordered = primaryKey.find((column) => !fields.has(column))
  if (unordered !== undefined) invalidOption('primaryKey', `"${unordered}" must be a scalar column to order pages by`)
  const allowed = allowedFields(orderingFields, fields, related, jsonPaths)
  const defaultOrdering = plannedDefaultOrder(defaultOrder, fields, allowed, primaryKey)
  // Values a request computes (`relevance` of q: query/full-text.ts) may be asked for, never be the default.
  for (const [name, field] of computed) allowed.set(name, field)
  const byPrimaryKey = defaultOrdering.shape === primaryKey.join(',')
  const allowedList = nameList(allowed.keys())
  // An ordering is plain immutable data and clients repeat a few `order_by` texts: each is parsed once
  // (splitting it and building its shape cost a LIST more than the rest of its query string).
  const parsedTexts = new LruCache<string, Ordering>(maxShapes)
  const properties = orderByProperties(allowed, defaultOrder, primaryKey)
  return {
    properties,
    defaultOrdering,
    byPrimaryKey,
    relatedTypes: new Map(
      [...allowed].flatMap(([name, field]) => (field.expression === undefined ? [] : [[name, field.type]]))
    ),
    ordering (query) {
      const text = query.order_by
      if (typeof text !== 'string') return defaultOrdering
      const known = parsedTexts.get(text)
      if (known !== undefined) return known
      const parsed = parseOrdering(text, allowed, primaryKey, true)
      if (isProblem(parsed)) throw new ViewsetErrors.UnsupportedOrdering(describe(parsed), allowedList)
      parsedTexts.set(text, parsed)
      return parsed
    },
  }
}

/** A field `order_by` may name: a scalar column, or a value computed in SQL (a relation path's, q's relevance). */
export type SortableField = ScalarField & Pick<OrderKey, 'expression' | 'related'>

/** Checks `orderingFields`: the fields `order_by` may name, each once. */
function allowedFields (
  orderingFields: unknown,
  fields: ReadonlyMap<string, ScalarField>,
  related: RelatedRoot | undefined,
  jsonPaths: ReadonlyMap<string, JsonPath> | undefined
): Map<string, SortableField> {
  const allowed = new Map<string, SortableField>()
  if (orderingFields === undefined) return allowed
  // Relation paths sort on one related value per row: many-to-one only, NULL (no related row) sorting as nulls do;
  // or on a count of a to-many relation, never NULL.
  const sortable = (name: string): SortableField | undefined => {
    const json = jsonPaths?.get(name)
    if (json !== undefined) return { ...json.field, expression: json.value }
    if (!name.includes('.') || related === undefined) return fields.get(name)
    const counted = countPath('orderingFields', name, related)
    if (counted !== undefined) {
      const expression = childCount(counted.link, related.table)
      return { ...counted.field, name, expression, related: { path: counted.path, table: related.table, count: true } }
    }
    const path = resolvePath('orderingFields', name, related, true)
    const expression = relatedValue(path, related.table)
    return { ...path.field, name, nullable: true, expression, related: { path, table: related.table } }
  }
  if (!isList(orderingFields) || orderingFields.length === 0) {
    invalidOption('orderingFields', `expected a non-empty array of fields (${nameList(fields.keys())})`)
  }
  for (const name of orderingFields) {
    const field = typeof name === 'string' ? sortable(name) : undefined
    if (field === undefined) {
      invalidOption(
        'orderingFields',
        `${JSON.stringify(name)} is not a sortable column of the schema; scalar columns: ${nameList(fields.keys())}`
      )
    }
    if (allowed.has(field.name)) invalidOption('orderingFields', `"${field.name}" is listed twice`)
    allowed.set(field.name, field)
  }
  return allowed
}

/** Checks `defaultOrder` (any scalar column, and the relation paths of `orderingFields`); else the primary key. */
function plannedDefaultOrder (
  defaultOrder: unknown,
  fields: ReadonlyMap<string, ScalarField>,
  allowed: ReadonlyMap<string, SortableField>,
  primaryKey: readonly string[]
): Ordering {
  if (defaultOrder === undefined) {
    const keys = primaryKey.map((field) => ({ field, descending: false, nullable: false }))
    return { shape: primaryKey.join(','), keys }
  }
  if (typeof defaultOrder !== 'string' || defaultOrder === '') {
    invalidOption('defaultOrder', 'expected a string such as "-created_at" or "name,-id"')
  }
  const parsed = parseOrdering(defaultOrder, new Map([...fields, ...allowed]), primaryKey, true)
  if (isProblem(parsed)) {
    invalidOption(
      'defaultOrder',
      `${describe(parsed)} is not a sortable column of the schema; scalar columns: ${nameList(fields.keys())}`
    )
  }
  return parsed
}

/** The `order_by` parameter, when `orderingFields` allows any field. */
function orderByProperties (
  allowed: ReadonlyMap<string, SortableField>,
  defaultOrder: unknown,
  primaryKey: readonly string[]
): Record<string, JsonSchema> {
  if (allowed.size === 0) return {}
  return {
    order_by: {
      type: 'string',
      minLength: 1,
      // Only the allowed fields, each once: the document allows no value the server refuses.
      pattern: sortKeysPattern([...allowed.keys()], true),
      description:
        'Comma-separated sort keys; a leading `-` sorts descending, a trailing `.nullsfirst` or `.nullslast` puts ' +
        'NULLs first or last (default: last ascending, first descending). ' +
        `Allowed fields: ${nameList(allowed.keys())}. ` +
        `Default: ${defaultOrder === undefined ? primaryKey.join(',') : String(defaultOrder)}. ` +
          `Ties are broken by ${primaryKey.join(', ')}.`,
      examples: [[...allowed.keys()].map((name, index) => (index === 0 ? `-${name}` : name)).join(',')],
    },
  }
}
