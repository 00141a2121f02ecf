import type { Condition } from './condition.js'
import { queryParameterError } from './condition.js'
import type { CursorPosition } from './cursor.js'
import { decodeCursor } from './cursor.js'
import type { ScalarType } from './field-types.js'
import type { ListQueryPlan } from './list-query.js'
import { parsePagination } from './list-query.js'
import type { OrderKey, Ordering } from './ordering.js'
import { keyText } from './ordering.js'
import type { PathRules } from './related-paths.js'
import { aggregateFunctions } from './aggregate-options.js'
import type { AggregatePlan, GroupField, MetricField } from './aggregate.js'
import { metricType } from './aggregate.js'
import { LruCache } from '../execution/lru-cache.js'

// An AGGREGATE request parsed into plain data, every client mistake a 400 before any SQL: the groups, the metrics,
// the same WHERE terms a LIST of the same query string has, the order of the groups and the page of them.

/** The column a group's count is read under. */
export const countAlias = 'viewset_count'

/** A group key of a request, and the column the statement reads it under. */
export interface RequestedGroup extends GroupField {
  readonly alias: string
}

/** A metric of a request (or one `order_by` needs), and the column the statement reads it under. */
export interface RequestedMetric extends MetricField {
  readonly alias: string
  /** Asked for (`sum=price`): in the answer; else only ordered by. */
  readonly shown: boolean
}

/** An AGGREGATE request, parsed. */
export interface AggregateQuery {
  readonly groups: readonly RequestedGroup[]
  readonly count: boolean
  readonly metrics: readonly RequestedMetric[]
  /** The WHERE terms, as LIST's: `?search=` first, then the filters and groups. */
  readonly conditions: readonly Condition[]
  /** The groups' order: its keys name the statement's columns, the group keys last so that no two groups tie. */
  readonly ordering: Ordering
  readonly limit: number
  readonly offset: number
  readonly pagination: 'offset' | 'cursor'
  readonly cursor: CursorPosition | undefined
}

/** The names of a comma-separated parameter, each once (the query string's pattern admits only known ones). */
function names (query: Record<string, unknown>, parameter: string): string[] {
  const value = query[parameter]
  if (typeof value !== 'string') return []
  const list = value.split(',')
  const twice = list.find((name, index) => list.indexOf(name) !== index)
  if (twice !== undefined) throw queryParameterError(parameter, `names "${twice}" twice`)
  return list
}

/** The groups of `group_by`, each under its column alias. */
function requestedGroups (query: Record<string, unknown>, plan: AggregatePlan): RequestedGroup[] {
  return names(query, 'group_by').map((name, index) => {
    const group = plan.groups.get(name)
    if (group === undefined) throw queryParameterError('group_by', `"${name}" is not a field it may name`)
    return { ...group, alias: `viewset_g${index}` }
  })
}

/** The metrics of `sum`, `avg`, `min` and `max`, then those only `order_by` names. */
function requestedMetrics (query: Record<string, unknown>, plan: AggregatePlan, ordered: readonly string[]) {
  const metrics: RequestedMetric[] = []
  const add = (key: string, shown: boolean, parameter: string) => {
    const metric = plan.metrics.get(key)
    if (metric === undefined) throw queryParameterError(parameter, `"${key}" is not a function and field it may name`)
    metrics.push({ ...metric, alias: `viewset_m${metrics.length}`, shown })
  }
  for (const fn of aggregateFunctions) for (const name of names(query, fn)) add(`${fn}.${name}`, true, fn)
  for (const key of ordered) {
    if (!metrics.some((metric) => `${metric.fn}.${metric.name}` === key)) add(key, false, 'order_by')
  }
  return metrics
}

/** The sort keys of `order_by` (a group key, `count`, `sum.price`) over the statement's columns, then the groups'. */
function groupOrdering (
  keys: ReadonlyArray<{ readonly name: string; readonly descending: boolean }>,
  groups: readonly RequestedGroup[],
  metrics: readonly RequestedMetric[]
): Ordering {
  const ordered: OrderKey[] = keys.map(({ name, descending }) => {
    if (name === 'count') return { field: countAlias, descending, nullable: false }
    const group = groups.find((candidate) => candidate.name === name)
    if (group !== undefined) return { field: group.alias, descending, nullable: group.field.nullable }
    const metric = metrics.find((candidate) => `${candidate.fn}.${candidate.name}` === name)
    if (metric === undefined) throw queryParameterError('order_by', `"${name}" is not a group of group_by`)
    return { field: metric.alias, descending, nullable: true }
  })
  for (const group of groups) {
    if (!ordered.some((key) => key.field === group.alias)) {
      ordered.push({ field: group.alias, descending: false, nullable: group.field.nullable })
    }
  }
  // The shape names the keys as the client wrote them: a cursor made for one order_by is refused for another.
  const written = keys.map(({ name, descending }) => keyText({ field: name, descending }))
  return { shape: [...written, ...groups.map((group) => group.name)].join(','), keys: ordered }
}

/** The keys of `order_by` as written: each once (its pattern admits only known names). */
function sortKeys (query: Record<string, unknown>): Array<{ name: string; descending: boolean }> {
  return names(query, 'order_by').map((part) => ({ name: part.replace(/^-/, ''), descending: part.startsWith('-') }))
}

/** What a cursor's values are checked against: each column's JSON type. */
function columnTypes (groups: readonly RequestedGroup[], metrics: readonly RequestedMetric[]) {
  const types = new Map<string, ScalarType>([[countAlias, 'integer']])
  for (const group of groups) types.set(group.alias, group.field.type)
  // A string-served sum is ordered by its numeric value.
  for (const metric of metrics) types.set(metric.alias, metricType(metric) === 'string' ? 'number' : metricType(metric))
  return types
}

/** What `group_by`, `count`, the functions and `order_by` ask for: the same for every request that names the same. */
interface Aggregation {
  readonly groups: readonly RequestedGroup[]
  readonly count: boolean
  readonly metrics: readonly RequestedMetric[]
  readonly ordering: Ordering
}

/** The parameters an {@link Aggregation} is made of. */
const aggregationParameters = ['group_by', 'order_by', ...aggregateFunctions] as const

/**
 * Aggregations parsed, by plan and by what the query string says of them: a request repeats its client's few
 * (profiled on PostgreSQL, parsing them was a tenth of AGGREGATE's own CPU). A mistake throws before anything is kept.
 */
const aggregations = new WeakMap<AggregatePlan, LruCache<string, Aggregation>>()

/** The cache key of an aggregation: its parameters' validated values (a string each, or none), and `count`. */
function aggregationKey (query: Record<string, unknown>): string {
  let key = query.count === true ? 'count' : ''
  for (const parameter of aggregationParameters) {
    const value = query[parameter]
    key += typeof value === 'string' ? `\u0000${value}` : '\u0001'
  }
  return key
}

/** The groups, metrics and order of a query string, parsed once per plan and key ({@link aggregations}). */
function aggregation (query: Record<string, unknown>, plan: AggregatePlan): Aggregation {
  let cache = aggregations.get(plan)
  if (cache === undefined) {
    cache = new LruCache<string, Aggregation>(256)
    aggregations.set(plan, cache)
  }
  const key = aggregationKey(query)
  const known = cache.get(key)
  if (known !== undefined) return known
  const groups = requestedGroups(query, plan)
  const keys = sortKeys(query)
  const metricKeys = keys.map((sortKey) => sortKey.name).filter((name) => name.includes('.') && plan.metrics.has(name))
  const metrics = requestedMetrics(query, plan, metricKeys)
  const count = query.count === true
  if (!count && !metrics.some((metric) => metric.shown)) {
    throw queryParameterError('count', 'or one of sum, avg, min, max is required: there is nothing to aggregate')
  }
  const ordering = groupOrdering(keys, groups, metrics)
  const parsed: Aggregation = Object.freeze({
    groups: Object.freeze(groups),
    count,
    metrics: Object.freeze(metrics),
    ordering: Object.freeze({ shape: ordering.shape, keys: Object.freeze(ordering.keys) }),
  })
  cache.set(key, parsed)
  return parsed
}

/**
 * Parses a validated AGGREGATE query string: the groups, the metrics (at least one of `count`, `sum`, `avg`, `min`
 * and `max`), LIST's WHERE terms from `list` (the caller's narrowed plan under field rules) under the request's
 * relation `rules`, the order and the page. Pure; every mistake throws its 400 here.
 *
 * @example
 * ```ts
 * parseAggregateQuery({ group_by: 'status', count: true, limit: 20, offset: 0 }, plan, listPlan)
 * ```
 */
export function parseAggregateQuery (
  query: Record<string, unknown>,
  plan: AggregatePlan,
  list: ListQueryPlan,
  rules?: PathRules
): AggregateQuery {
  const { limit, offset } = parsePagination(query, list.maxOffset, list.pagination)
  const { groups, count, metrics, ordering } = aggregation(query, plan)
  const conditions = list.filters.conditions(query, rules)
  const searched = list.search.condition(query, rules)
  if (searched !== undefined) conditions.unshift(searched)
  const cursor = list.pagination === 'cursor' && typeof query.cursor === 'string'
    ? decodeCursor(query.cursor, ordering, columnTypes(groups, metrics))
    : undefined
  return { groups, count, metrics, conditions, ordering, limit, offset, pagination: list.pagination, cursor }
}
