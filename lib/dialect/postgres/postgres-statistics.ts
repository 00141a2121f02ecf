import { CompiledQuery, SelectQueryNode } from 'kysely'
import type { RootOperationNode } from 'kysely'
import { boundedRows, declaredCost } from '../../execution/cost-class.js'
import { LruCache } from '../../execution/lru-cache.js'
import { boundedRunLimit, boundedSource } from '../../execution/row-bound.js'
import type { CatalogQuery, RowBound, RowBounds } from '../../execution/row-bound.js'
import type { Row } from '../../sql.js'

// A page filtered by an indexed equality and ordered by a column no index orders (`?author_id=7&order_by=-year`), an
// OR of such equalities, or AGGREGATE's groups read every row the equalities find: two for most authors, a million
// for some. PostgreSQL keeps what it knows of the data in pg_stats (ANALYZE, or autovacuum's): per column, the number
// of distinct values and the frequencies of the most common ones, which give the most rows one value has. A statement
// whose equalities are on the leading column of an index, each value finding few rows by those figures, is cheap: it
// skips the bulkhead of heavy statements (execution/bulkhead.ts). Without statistics it stays heavy.

/** Milliseconds statistics are trusted before they are read again: ANALYZE may have changed them since. */
export const statisticsRefresh = 60_000

/** The most (table, column) figures kept. */
const cachedColumns = 512

/**
 * The statistics of one column that leads a plain index (B-tree or hash, not partial): rows in the table, the
 * fraction that is NULL, the distinct values (negative: a fraction of the rows), the most common value's frequency.
 */
const columnStatistics = `
  select c.reltuples::float8 as tuples, s.null_frac::float8 as nulls, s.n_distinct::float8 as distinct_values,
    (select max(f)::float8 from unnest(s.most_common_freqs) f) as top
  from pg_catalog.pg_class c
  join pg_catalog.pg_namespace n on n.oid = c.relnamespace
  join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = $2 and not a.attisdropped
  join pg_catalog.pg_stats s on s.schemaname = n.nspname and s.tablename = c.relname and s.attname = a.attname
  where c.oid = to_regclass($1) and exists (
    select 1 from pg_catalog.pg_index i
    join pg_catalog.pg_class ic on ic.oid = i.indexrelid
    join pg_catalog.pg_am am on am.oid = ic.relam
    where i.indrelid = c.oid and i.indkey[0] = a.attnum and i.indisvalid and i.indpred is null
      and am.amname in ('btree', 'hash'))`

/** A number column of the statistics row, if it is one. */
function figure (row: Row, name: string): number | undefined {
  const value = row[name]
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined
}

/**
 * The most rows one value of a column has, by its statistics: the most common value's, or the average of the
 * others', whichever is more; none for a table never analyzed (reltuples -1) or a column with no figures.
 *
 * @example
 * ```ts
 * rowsPerValue({ tuples: 20000, nulls: 0, distinct_values: 10000, top: 0.0003 }) // 6
 * ```
 */
export function rowsPerValue (row: Row): number | undefined {
  const tuples = figure(row, 'tuples')
  const distinct = figure(row, 'distinct_values')
  if (tuples === undefined || tuples < 0 || distinct === undefined || distinct === 0) return undefined
  const values = distinct > 0 ? distinct : -distinct * tuples
  const average = values === 0 ? 0 : tuples * (1 - (figure(row, 'nulls') ?? 0)) / values
  return Math.ceil(Math.max(average, (figure(row, 'top') ?? 0) * tuples))
}

/** A table's name as `to_regclass` reads it: each part quoted, so that its case is kept. */
function qualified (schema: string | undefined, table: string): string {
  const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`
  return schema === undefined ? quote(table) : `${quote(schema)}.${quote(table)}`
}

/** The rows a bound reads, from each column's rows per value; none when a column has no figures. */
function boundRows (bound: RowBound, rows: (column: string) => number | undefined): number | undefined {
  if (bound.kind === 'key') {
    const perValue = rows(bound.column)
    return perValue === undefined ? undefined : perValue * bound.values
  }
  const parts = bound.parts.map((part) => boundRows(part, rows))
  if (bound.kind === 'any') {
    let sum = 0
    for (const part of parts) {
      if (part === undefined) return undefined
      sum += part
    }
    return sum
  }
  const known = parts.filter((part) => part !== undefined)
  return known.length === 0 ? undefined : Math.min(...known)
}

/** The columns a bound names. */
function columnsOf (bound: RowBound): string[] {
  return bound.kind === 'key' ? [bound.column] : bound.parts.flatMap(columnsOf)
}

/** A verdict on a compiled statement, and when its statistics were read. */
interface Verdict { readonly bounded: boolean, readonly at: number }

/** A number field of a plan node (`Actual Rows`), 0 when it has none. */
function planFigure (node: Row, name: string): number {
  const value = node[name]
  return typeof value === 'number' && Number.isFinite(value) ? value : 0
}

/**
 * The most rows any node of an `EXPLAIN (ANALYZE, FORMAT JSON)` plan read or produced: its rows (times its loops) and
 * those its filters removed, the largest over the tree.
 *
 * @example
 * ```ts
 * planRowsRead({ 'Node Type': 'Sort', 'Actual Rows': 4, 'Actual Loops': 1, Plans: [{ 'Actual Rows': 4 }] }) // 4
 * ```
 */
export function planRowsRead (node: unknown): number {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return 0
  const plan: Row = { ...node }
  const loops = Math.max(1, planFigure(plan, 'Actual Loops'))
  let most = (planFigure(plan, 'Actual Rows') + planFigure(plan, 'Rows Removed by Filter') +
    planFigure(plan, 'Rows Removed by Index Recheck')) * loops
  const children = plan.Plans
  if (Array.isArray(children)) for (const child of children) most = Math.max(most, planRowsRead(child))
  return most
}

/**
 * Checks a lifted statement whose run was slow: the time of a run counts the pool's wait and every pause of the
 * process (the bench's warm-up on a busy machine saw 50-150 ms for 11-row reads), the rows it reads do not. Runs
 * it once more under `EXPLAIN (ANALYZE)`, with its own values, and answers whether it read more than `boundedRows`.
 */
async function readsMany (query: CatalogQuery, compiled: CompiledQuery): Promise<boolean> {
  const explain = CompiledQuery.raw(`explain (analyze, format json) ${compiled.sql}`, [...compiled.parameters])
  const { rows } = await query(explain)
  // pg parses the json column: [{ "Plan": { "Node Type": ..., "Actual Rows": 4, "Plans": [...] } }]
  const document: unknown = rows[0]?.['QUERY PLAN']
  const top: unknown = Array.isArray(document) ? document[0] : undefined
  const plan = typeof top === 'object' && top !== null && 'Plan' in top ? top.Plan : undefined
  return planRowsRead(plan) > boundedRows
}

/** Milliseconds between two checks of one statement's slow runs. */
const recheckInterval = 1000

/** The checks of slow runs, per statement: when the last began, and which run now. */
interface Checks {
  readonly last: WeakMap<RootOperationNode, number>
  readonly running: WeakSet<RootOperationNode>
}

/**
 * Checks a lifted SELECT's slow run ({@link readsMany}), unless a check of it runs or began in the last
 * {@link recheckInterval}: a machine that slows every run would otherwise double its statements. A check that fails
 * leaves the statement as it was; one that finds many rows read calls `demote`.
 */
function checkSlowRun (query: CatalogQuery, compiled: CompiledQuery, end: number, checks: Checks, demote: () => void) {
  const node = compiled.query
  const last = checks.last.get(node)
  if (checks.running.has(node) || (last !== undefined && end - last < recheckInterval)) return
  checks.last.set(node, end)
  checks.running.add(node)
  void readsMany(query, compiled)
    .then((many) => { if (many) demote() }, () => {})
    .finally(() => { checks.running.delete(node) })
}

/** A column's figure, and when it was read. */
interface ColumnFigure { readonly rows: number | undefined, readonly at: number }

/**
 * The statistics lift of a PostgreSQL database (prepared-kysely.ts): a heavy statement whose WHERE's equalities
 * (execution/row-bound.ts), by pg_stats, read at most `boundedRows` rows is cheap. Decided once per compiled
 * statement, the first runs staying heavy while the catalog is read, and again after {@link statisticsRefresh}. A run
 * slower than its bound promised (execution/row-bound.ts) is run again under `EXPLAIN (ANALYZE)` (at most once a
 * second): past `boundedRows` rows read (statistics gone stale), the statement is heavy for good.
 *
 * @example
 * ```ts
 * const bounds = postgresRowBounds(async (compiled) => await kysely.executeQuery(compiled))
 * if (costOf(compiled.query) === 'heavy' && !bounds.bounded(compiled)) await bulkhead.run(work)
 * ```
 */
export function postgresRowBounds (query: CatalogQuery, refresh = statisticsRefresh): RowBounds {
  const verdicts = new WeakMap<RootOperationNode, Verdict>()
  const reading = new WeakSet<RootOperationNode>()
  const demoted = new WeakSet<RootOperationNode>()
  const checks: Checks = { last: new WeakMap(), running: new WeakSet() }
  const slowWrites = new WeakSet<RootOperationNode>()
  const columns = new LruCache<string, ColumnFigure>(cachedColumns)
  const columnRows = async (schema: string | undefined, table: string, column: string): Promise<number | undefined> => {
    const key = `${schema ?? ''}\u0000${table}\u0000${column}`
    const known = columns.get(key)
    if (known !== undefined && performance.now() - known.at < refresh) return known.rows
    const { rows } = await query(CompiledQuery.raw(columnStatistics, [qualified(schema, table), column]))
    const figure = { rows: rows[0] === undefined ? undefined : rowsPerValue(rows[0]), at: performance.now() }
    columns.set(key, figure)
    return figure.rows
  }

  const judge = async (node: RootOperationNode): Promise<boolean> => {
    const source = declaredCost(node) === undefined ? boundedSource(node) : undefined
    if (source === undefined) return false
    const names = [...new Set(columnsOf(source.bound))]
    const figures = new Map<string, number | undefined>()
    for (const name of names) figures.set(name, await columnRows(source.schema, source.table, name))
    const rows = boundRows(source.bound, (name) => figures.get(name))
    return rows !== undefined && rows <= boundedRows
  }

  const read = (node: RootOperationNode): void => {
    if (reading.has(node)) return
    reading.add(node)
    void judge(node).then(
      (bounded) => { verdicts.set(node, { bounded, at: performance.now() }) },
      // A catalog that cannot be read (permissions, a closing pool) leaves the statement heavy until the next try.
      () => { verdicts.set(node, { bounded: false, at: performance.now() }) }
    ).finally(() => { reading.delete(node) })
  }

  return {
    bounded ({ query: node }) {
      if (demoted.has(node)) return false
      const verdict = verdicts.get(node)
      if (verdict === undefined || performance.now() - verdict.at >= refresh) read(node)
      return verdict?.bounded ?? false
    },
    ran (compiled, start, end) {
      const node = compiled.query
      if (end - start <= boundedRunLimit || demoted.has(node)) return
      // EXPLAIN (ANALYZE) would write again: a lifted UPDATE slow twice (stale statistics) goes back to the bulkhead.
      if (!SelectQueryNode.is(node)) {
        (slowWrites.has(node) ? demoted : slowWrites).add(node)
        return
      }
      checkSlowRun(query, compiled, end, checks, () => { demoted.add(node) })
    },
  }
}
