import type { BetterSqliteDatabase } from './sqlite-prepared.js'

// A page filtered by an indexed equality and ordered by a column no index orders (`?author_id=7&order_by=-year`),
// or grouped (AGGREGATE), reads and sorts every row the equality finds: three for most authors, a million for
// some. Only the data says which, and SQLite keeps what it knows of the data in its statistics (ANALYZE, or
// `PRAGMA optimize`): sqlite_stat1 holds, per index, the average rows that share a value of its first 1, 2, …
// columns, and sqlite_stat4 samples keys, the most repeated among them. A statement whose plan reads nothing but
// index equalities, each finding few rows by those figures, is cheap wherever its shape would class it; without
// statistics it stays heavy.

/** The most rows that one value of an index's first `columns` columns has, by the statistics; none without them. */
export type RowsPerKey = (index: string, columns: number) => number | undefined

/** The leading whole numbers of a statistics row (`'20000 3 1'`; sqlite_stat1 may add `unordered`, `sz=…`). */
function counts (text: unknown): number[] {
  if (typeof text !== 'string') return []
  const numbers: number[] = []
  for (const word of text.split(' ')) {
    if (!/^\d+$/.test(word)) break
    numbers.push(Number(word))
  }
  return numbers
}

/**
 * Reads the statistics of an index on the main connection (once per statement decided: sqlite-readers.ts): the
 * average of sqlite_stat1 and the largest sample of sqlite_stat4, whichever is more; none when the index was never
 * analyzed (no sqlite_stat1 row, or no such table).
 *
 * @example
 * ```ts
 * statisticsReader(database)('books_author_id', 1) // 3 after ANALYZE: three books per author, at most 10 sampled
 * ```
 */
export function statisticsReader (database: BetterSqliteDatabase): RowsPerKey {
  const stat4 = (index: string, columns: number): number => {
    try {
      const samples = database.prepare('select neq from sqlite_stat4 where idx = ?').all([index])
      return Math.max(0, ...samples.map((sample) => counts(sample.neq)[columns - 1] ?? 0))
    } catch {
      // No sqlite_stat4 table: a SQLite built without STAT4, or one that never ran ANALYZE with it.
      return 0
    }
  }
  return (index, columns) => {
    let average: number | undefined
    try {
      const row = database.prepare('select stat from sqlite_stat1 where idx = ?').get([index])
      average = counts(row?.stat)[columns]
    } catch {
      return undefined
    }
    return average === undefined ? undefined : Math.max(average, stat4(index, columns))
  }
}

/** A plan line that searches an index: `SEARCH books USING INDEX books_author_id (author_id=? AND rowid>?)`. */
const indexSearch = /^SEARCH .+ USING (?:COVERING )?INDEX (.+) \((.+)\)$/
/** A plan line that reads one row by its rowid. */
const rowidSearch = /^SEARCH .+ USING INTEGER PRIMARY KEY \(rowid=\?\)$/
/** Plan lines that read no table: sorting or grouping the rows found, and the branches of an OR. */
const noRead = new RegExp('^(?:USE TEMP B-TREE FOR (?:ORDER BY|GROUP BY|DISTINCT|RIGHT PART OF ORDER BY|' +
  'LAST TERM OF ORDER BY)|MULTI-INDEX OR|INDEX \\d+)$')

/** How many of an index constraint's terms, from the first, are equalities (`a=? AND b=? AND c>?`: two). */
function equalities (constraint: string): number {
  let count = 0
  for (const term of constraint.split(' AND ')) {
    if (!/^[^<>=]+=\?$/.test(term)) break
    count++
  }
  return count
}

/** A subquery SQLite computes first (a derived table: AGGREGATE's groups), whose rows a later line scans. */
const derived = /^(?:CO-ROUTINE|MATERIALIZE) (.+)$/

/** The rows one plan line reads, by the statistics: 1 for a line that reads none; none when it is not a search. */
function lineRows (detail: string, rowsPerKey: RowsPerKey): number | undefined {
  if (rowidSearch.test(detail)) return 1
  const search = indexSearch.exec(detail)
  if (search === null) return undefined
  const columns = equalities(search[2] ?? '')
  return columns === 0 ? undefined : rowsPerKey(search[1] ?? '', columns)
}

/**
 * At most how many rows a plan reads, by the statistics, when every line of it is an index equality (or a rowid
 * lookup, a sort, an OR's branch); none otherwise (a scan, a range alone, a subquery, a table never analyzed). An
 * equality's value may be a list (`in (?, ?)` plans as `=?`), so each line counts `values` keys, and lines multiply,
 * as a join's loops do: an estimate that only errs upwards.
 *
 * @example
 * ```ts
 * planRows(['SEARCH books USING INDEX books_author_id (author_id=?)', 'USE TEMP B-TREE FOR ORDER BY'], stats, 3)
 * // 9 with three books per author
 * ```
 */
export function planRows (details: readonly string[], rowsPerKey: RowsPerKey, values: number): number | undefined {
  if (details.length === 0) return undefined
  // A derived table's rows are at most those its own lines read, counted already: scanning them reads no table.
  const subqueries = new Set<string>()
  let rows = 1
  for (const detail of details) {
    const subquery = derived.exec(detail)?.[1]
    if (subquery !== undefined) subqueries.add(subquery)
    if (subquery !== undefined || noRead.test(detail) || subqueries.has(detail.replace(/^SCAN /, ''))) continue
    const read = lineRows(detail, rowsPerKey)
    if (read === undefined) return undefined
    rows *= read * Math.max(1, values)
  }
  return rows
}
