import { sql } from 'kysely'
import type { AliasedRawBuilder, Expression, RawBuilder, SelectQueryBuilder } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { Condition } from '../query/condition.js'
import type { CursorPosition } from '../query/cursor.js'
import { keysetCondition, keysetPage, reversed } from '../query/cursor.js'
import type { AggregateQuery, RequestedGroup, RequestedMetric } from '../query/aggregate-query.js'
import { countAlias } from '../query/aggregate-query.js'
import { applyOrdering, sortsNullsApart } from '../query/ordering.js'
import type { Ordering } from '../query/ordering.js'
import type { PathRules, RelatedPath } from '../query/related-paths.js'
import { pathRules, relatedValue } from '../query/related-paths.js'
import type { ScopeCondition } from '../query/scope.js'
import type { StatementCache } from './statement-cache.js'
import { groupsShape } from './aggregate-shape.js'

// AGGREGATE's one statement: the rows LIST would read (the same scope and WHERE terms), grouped by their group keys,
// then the page of groups, ordered, by offset or by keyset, so that every sort key is a plain column of the groups.
// A group key through a relation adds a SELECT of the rows under the grouped one, so that its value is computed once
// per row (its rules' values bound once). Compiled once per shape (aggregate-shape.ts), as LIST's statements are.
// Every aggregate is a heavy statement (execution/cost-class.ts): it reads every row its WHERE admits, unless the
// database's statistics bound those rows (`unbounded`).

/** A page of groups, as the statement answers them, and the positions of the neighbouring pages. */
export interface GroupPage {
  readonly rows: Row[]
  readonly next?: CursorPosition | undefined
  readonly prev?: CursorPosition | undefined
}

/** What the statement reads from: the table, its dialect, and the rules of the request. */
export interface AggregateTarget {
  readonly table: string
  readonly dialect: ViewsetDialect
  readonly rules: PathRules | undefined
  /** The viewset's compiled AGGREGATE statements, by shape. */
  readonly statements: StatementCache
}

/** The column of the relation row a path goes through at `depth` hops: its key, NULL when there is none. */
function presenceAt (path: RelatedPath, depth: number): RelatedPath {
  const hops = path.hops.slice(0, depth)
  const last = hops[hops.length - 1]
  return { path: path.path, hops, field: { ...path.field, name: last?.targetColumn ?? path.field.name } }
}

/** The column a relation on a group's path is present under (`viewset_g0_p1`: 1, else NULL). */
export function presenceAlias (group: RequestedGroup, depth: number): string {
  return `${group.alias}_p${depth}`
}

/** Each row's group keys (and the presence of their relations) and the values of the fields to aggregate. */
function rowColumns (query: AggregateQuery, target: AggregateTarget): Array<AliasedRawBuilder<unknown, string>> {
  const columns: Array<AliasedRawBuilder<unknown, string>> = []
  for (const group of query.groups) {
    const { path } = group
    if (path === undefined) {
      columns.push(sql`${sql.ref(group.field.name)}`.as(group.alias))
      continue
    }
    columns.push(sql`${relatedValue(path, target.table, pathRules(path, target.rules))}`.as(group.alias))
    for (let depth = 1; depth <= path.hops.length; depth++) {
      const present = presenceAt(path, depth)
      const value = relatedValue(present, target.table, pathRules(present, target.rules))
      columns.push(sql`case when ${value} is null then 0 else 1 end`.as(presenceAlias(group, depth)))
    }
  }
  return columns
}

/** The aggregate function of a metric over its field's column (`viewset_rows.price`, or `price` when flat). */
function metricValue (metric: RequestedMetric, from: string | undefined): Expression<unknown> {
  const column = sql.ref(from === undefined ? metric.field.name : `${from}.${metric.field.name}`)
  switch (metric.fn) {
    case 'sum':
      return sql`sum(${column})`
    case 'avg':
      // Of a float (1e0 is a double on MySQL, a numeric on PostgreSQL): MySQL's avg of integers keeps 4 decimals.
      return sql`avg(${column} * 1e0)`
    case 'min':
      return sql`min(${column})`
    case 'max':
      return sql`max(${column})`
  }
}

/** Whether a query's groups are all plain columns of the table: the rows and their groups are then one SELECT. */
function groupsFlat (query: AggregateQuery): boolean {
  return query.groups.every((group) => group.path === undefined)
}

/** The WHERE terms on a SELECT of the table. */
function filteredRows<O> (
  rows: SelectQueryBuilder<Record<string, Row>, string, O>, where: readonly Condition[]
): SelectQueryBuilder<Record<string, Row>, string, O> {
  return where.length > 0 ? rows.where((eb) => eb.and(where.map((term) => term.expression(eb)))) : rows
}

/**
 * The grouped SELECT straight over the table, when every group key is one of its columns: `select year as
 * viewset_g0, count(*), sum(price) from books where … group by year` (a SELECT of the rows under it only cost the
 * database a subquery step per request, and grouping by the column is grouping by its alias).
 */
function flatGroupedSelect (
  db: AnyDatabase, query: AggregateQuery, target: AggregateTarget, where: readonly Condition[]
) {
  let grouped = db.selectFrom(target.table)
    .select(query.groups.map((group) => sql`${sql.ref(group.field.name)}`.as(group.alias)))
    .select(sql`count(*)`.as(countAlias))
  for (const metric of query.metrics) grouped = grouped.select(sql`${metricValue(metric, undefined)}`.as(metric.alias))
  grouped = filteredRows(grouped, where)
  return query.groups.length === 0 ? grouped : grouped.groupBy(query.groups.map((group) => group.field.name))
}

/** The grouped SELECT: keys, presences, the count and the metrics, from the rows the scope and terms admit. */
function groupedSelect (db: AnyDatabase, query: AggregateQuery, target: AggregateTarget, where: readonly Condition[]) {
  if (groupsFlat(query)) return flatGroupedSelect(db, query, target, where)
  const fields = [...new Set(query.metrics.map((metric) => metric.field.name))]
  const columns = rowColumns(query, target)
  let rows = db.selectFrom(target.table).select(sql.lit(1).as('viewset_one'))
  if (fields.length > 0) rows = rows.select(fields)
  for (const column of columns) rows = rows.select(column)
  rows = filteredRows(rows, where)
  const keys = query.groups.flatMap((group) => [
    group.alias,
    ...(group.path?.hops ?? []).map((_, index) => presenceAlias(group, index + 1)),
  ])
  let grouped = db.selectFrom(rows.as('viewset_rows')).select(keys.map((key) => `viewset_rows.${key}`))
    .select(sql`count(*)`.as(countAlias))
  for (const metric of query.metrics) {
    grouped = grouped.select(sql`${metricValue(metric, 'viewset_rows')}`.as(metric.alias))
  }
  return keys.length === 0 ? grouped : grouped.groupBy(keys.map((key) => `viewset_rows.${key}`))
}

/** A metric's column as the answer reads it: a string-served field's as text, so that its digits stay exact. */
function textColumn (metric: RequestedMetric): string {
  return `${metric.alias}_text`
}

/**
 * Whether the grouped SELECT over the table is ordered and paged itself, its ORDER BY naming its own aliases (which the
 * three databases allow as bare names): every group key a column, no keyset or metric text read from outside it, and
 * no NULL-ordering term (MariaDB refuses `alias is null` on an aggregate's alias). SQLite otherwise runs the groups as
 * a co-routine and sorts them again: 20.6 against 14.2 µs for one author's years (benchmarks/analysis.md).
 */
function pagedInPlace (
  query: AggregateQuery, ordering: Ordering, keyset: Condition | undefined, dialect: ViewsetDialect
): boolean {
  return keyset === undefined && groupsFlat(query) && !query.metrics.some((metric) => metric.text) &&
    !ordering.keys.some((key) => sortsNullsApart(key, dialect))
}

/** The SELECT over the grouped rows: its keyset and its metrics' text name their columns from outside them. */
function groupsOver (
  db: AnyDatabase,
  grouped: ReturnType<typeof groupedSelect>,
  query: AggregateQuery,
  target: AggregateTarget,
  keyset: Condition | undefined
) {
  let page = db.selectFrom(grouped.as('viewset_groups')).selectAll()
  for (const metric of query.metrics) {
    if (metric.text) page = page.select(target.dialect.syntax.asText(sql.ref(metric.alias)).as(textColumn(metric)))
  }
  return keyset === undefined ? page : page.where((eb) => keyset.expression(eb))
}

/**
 * Reads one page of groups: every row of the table the `scope` and the query's terms admit, grouped by the query's
 * keys, ordered and paged; by keyset after (or before) the query's cursor, reading one group more to know whether a
 * further page exists.
 */
export async function readGroups (
  db: AnyDatabase,
  query: AggregateQuery,
  target: AggregateTarget,
  scope: ScopeCondition | undefined
): Promise<GroupPage> {
  const where = scope === undefined ? query.conditions : [scope, ...query.conditions]
  const { cursor, limit } = query
  const byCursor = query.pagination === 'cursor'
  const backwards = cursor?.direction === 'before'
  const ordering = backwards ? reversed(query.ordering) : query.ordering
  const keyset = cursor === undefined ? undefined : keysetCondition(ordering, cursor.values, target.dialect)
  const size = byCursor ? limit + 1 : limit
  const { literalLimit } = target.dialect.syntax
  const { shape, parameters } = groupsShape(query, {
    where, keyset, literalLimit, size, byCursor, backwards, rules: target.rules,
  })
  const fetched = await target.statements.rows(db, shape, parameters, () => {
    // As LIST's: SQLite plans an ordered LIMIT with its value, so it is written into the SQL there (literalLimit).
    const bound: number | RawBuilder<number> = literalLimit ? sql.lit(size) : size
    const grouped = groupedSelect(db, query, target, where)
    const page = pagedInPlace(query, ordering, keyset, target.dialect)
      ? grouped
      : groupsOver(db, grouped, query, target, keyset)
    const ordered = applyOrdering(page, ordering.keys, target.dialect).limit(bound)
    return byCursor ? ordered : ordered.offset(query.offset)
  }, 'unbounded')
  if (!byCursor) return { rows: fetched }
  return keysetPage(fetched, limit, query.ordering, cursor)
}

/** `avg` as a JSON number rounded to 6 decimal places, whatever type the driver answered it in. */
function rounded (value: unknown): number {
  return Math.round(Number(value) * 1e6) / 1e6
}

/** A metric's value in the answer: a number, or the field's own digits for a string-served field. */
function metricOf (metric: RequestedMetric, row: Row): unknown {
  const value = row[metric.alias]
  if (value === null || value === undefined) return null
  if (metric.fn === 'avg') return rounded(value)
  if (metric.text) return String(row[textColumn(metric)] ?? value)
  return Number(value)
}

/** Sets a group key's value at its path (`author.name` → `{ author: { name } }`), or NULL where a relation is. */
function setKey (group: Record<string, unknown>, key: RequestedGroup, row: Row): void {
  const segments = key.name.split('.')
  let holder: Record<string, unknown> = group
  for (const [index, segment] of segments.slice(0, -1).entries()) {
    const present = Number(row[presenceAlias(key, index + 1)]) === 1
    if (!present) {
      holder[segment] = null
      return
    }
    const existing = holder[segment]
    const next: Record<string, unknown> = typeof existing === 'object' && existing !== null ? { ...existing } : {}
    holder[segment] = next
    holder = next
  }
  holder[segments[segments.length - 1] ?? key.name] = row[key.alias] ?? null
}

/**
 * A group as the answer holds it: its keys, `count` when asked for (a number, whatever the driver answered), and
 * each function's fields.
 */
export function groupOf (query: AggregateQuery, row: Row, dialect: ViewsetDialect): Record<string, unknown> {
  const group: Record<string, unknown> = {}
  for (const key of query.groups) setKey(group, key, row)
  if (query.count) group.count = dialect.values.count(row[countAlias] ?? 0)
  for (const metric of query.metrics) {
    if (!metric.shown) continue
    const values = group[metric.fn]
    const holder: Record<string, unknown> = typeof values === 'object' && values !== null ? { ...values } : {}
    holder[metric.name] = metricOf(metric, row)
    group[metric.fn] = holder
  }
  return group
}
