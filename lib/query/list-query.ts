import type { Condition } from './condition.js'
import { askedCount } from './count-plan.js'
import type { CountPlan, CountPreference } from './count-plan.js'
import { queryParameterError } from './condition.js'
import type { CursorPosition } from './cursor.js'
import { decodeCursor } from './cursor.js'
import type { ScalarType } from './field-types.js'
import type { FieldSelection, FieldsPlan } from './fields.js'
import type { FilterPlan } from './filters.js'
import type { Ordering, OrderingPlan } from './ordering.js'
import { ruledOrdering } from './ordering-rules.js'
import type { PathRules } from './related-paths.js'
import type { SearchPlan } from './search.js'
import type { FullTextPlan } from './full-text.js'

/** A LIST request once parsed: plain data the data layer reads, with no HTTP in it. */
export interface ListQuery {
  readonly limit: number
  readonly offset: number
  /** The `WHERE` terms: `?q=` first, then `?search=`, then the filters. */
  readonly conditions: readonly Condition[]
  readonly ordering: Ordering
  /** `?fields=`, or `undefined` for every field. */
  readonly fields: FieldSelection | undefined
  /** Whether the number of matching rows is wanted (`?count=true`, `Prefer: count=…` or `alwaysCount`). */
  readonly count: boolean
  /** Whether the count may be the planner's estimate (`Prefer: count=estimated`, `allowCount: 'estimated'`). */
  readonly estimate: boolean
  /**
   * True when the request asks for nothing but `limit` and `offset` in primary-key order: the page
   * statement compiled at registration serves it.
   */
  readonly pageOnly: boolean
  /** `'cursor'`: the page is read by keyset from `cursor` (offset is then 0), `limit` rows plus one to see what
   * follows. */
  readonly pagination: 'offset' | 'cursor'
  /** `?cursor=` decoded; `undefined` for the first page (and with offset pagination). */
  readonly cursor: CursorPosition | undefined
}

/** What {@link parseListQuery} checks a query string against; planned once at registration (query/list.ts). */
export interface ListQueryPlan {
  readonly search: SearchPlan
  /** `?q=` (query/full-text.ts); absent where a plan was made without it. */
  readonly fullText?: FullTextPlan
  readonly ordering: OrderingPlan
  readonly filters: FilterPlan
  readonly fields: FieldsPlan
  /** Which counts LIST gives, and when an estimate stands for one. */
  readonly counting: CountPlan
  readonly maxOffset: number
  readonly pagination: 'offset' | 'cursor'
  /** The JSON type of each scalar field: what a cursor's values are checked against. */
  readonly types: ReadonlyMap<string, ScalarType>
}

/** The pagination of a validated LIST query string. */
export interface Pagination {
  readonly limit: number
  readonly offset: number
}

/** The 400 of an offset past `maxOffset`, which says how to read further. */
function offsetError (maxOffset: number): Error {
  return queryParameterError(
    'offset',
    `must be at most ${maxOffset} (maxOffset): a deeper offset makes the database skip every row before it. ` +
      'To read further, use cursor pagination: order by a unique field and filter past the last row seen ' +
      '(such as ?order_by=id&id__gt=<last id>).'
  )
}

/** The 400 of an `offset` sent to a list that pages by cursor. */
export function offsetWithCursor (): Error {
  return queryParameterError(
    'offset',
    'is not accepted: this list pages with cursor. Follow the next and prev links of the Link header (?cursor=...)'
  )
}

/**
 * `limit` and `offset` of a validated query string, with `maxOffset` enforced. Every LIST goes through
 * it, an overridden `list` too. The schema validator has filled in both defaults already.
 */
export function parsePagination (
  query: Record<string, unknown>,
  maxOffset: number,
  pagination: 'offset' | 'cursor' = 'offset'
): Pagination {
  const { limit, offset } = query
  if (typeof limit !== 'number') throw queryParameterError('limit', 'must be a number')
  if (pagination === 'cursor') {
    if (offset !== undefined) throw offsetWithCursor()
    return { limit, offset: 0 }
  }
  if (typeof offset !== 'number') throw queryParameterError('offset', 'must be a number')
  if (offset > maxOffset) throw offsetError(maxOffset)
  return { limit, offset }
}

/** Query parameters whose presence leaves the request on the precompiled page statement. */
const pageParameters = new Set(['limit', 'offset'])

/**
 * Parses a validated LIST query string into a {@link ListQuery}, with the count a `Prefer` header asked for
 * (`preferred`). Pure: it reads nothing but its arguments. Everything a client can get wrong (an unknown field,
 * sort key or operator, an offset past `maxOffset`, a count the viewset does not give) throws its 400 here,
 * before any SQL. Filters, search and ordering through relations apply the `rules` of the request (each related
 * table's `'LIST'` rule). `ruled`: this request's own LIST row rule limits its rows (q then orders by relevance only
 * where the database ranks a row by itself: query/full-text.ts).
 *
 * @example
 * ```ts
 * const query = parseListQuery({ limit: 20, offset: 0, name__contains: 'ab' }, plan)
 * // { limit: 20, offset: 0, conditions: [<name LIKE ?>], ordering: <id>, fields: undefined, count: false,
 * //   estimate: false, pageOnly: false }
 * ```
 */
export function parseListQuery (
  query: Record<string, unknown>,
  plan: ListQueryPlan,
  preferred?: CountPreference,
  rules?: PathRules,
  ruled = false
): ListQuery {
  const { limit, offset } = parsePagination(query, plan.maxOffset, plan.pagination)
  const { count, estimate } = askedCount(plan.counting, query.count === true, preferred)
  const { pagination } = plan
  let pageOnly = plan.ordering.byPrimaryKey && !count && pagination === 'offset'
  if (pageOnly) {
    for (const key in query) {
      if (!pageParameters.has(key)) {
        pageOnly = false
        break
      }
    }
  }
  if (pageOnly) {
    return {
      limit,
      offset,
      conditions: [],
      ordering: plan.ordering.defaultOrdering,
      fields: undefined,
      count,
      estimate,
      pageOnly,
      pagination,
      cursor: undefined,
    }
  }
  const conditions = plan.filters.conditions(query, rules)
  const searched = plan.search.condition(query, rules)
  if (searched !== undefined) conditions.unshift(searched)
  const matched = plan.fullText?.condition(query)
  if (matched !== undefined) conditions.unshift(matched)
  const asked = plan.ordering.ordering(query)
  const ranked = plan.fullText === undefined ? asked : plan.fullText.ordering(query, asked, ruled)
  const ordering = ruledOrdering(ranked, rules)
  const cursor =
    pagination === 'cursor' && typeof query.cursor === 'string'
      ? decodeCursor(query.cursor, ordering, plan.types)
      : undefined
  return {
    limit,
    offset,
    conditions,
    ordering,
    fields: plan.fields.selection(query),
    count,
    estimate,
    pageOnly,
    pagination,
    cursor,
  }
}
