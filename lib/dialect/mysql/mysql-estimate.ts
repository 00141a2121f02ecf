import { CompiledQuery } from 'kysely'
import type { DialectStatistics } from '../dialect.js'
import type { Row } from '../../sql.js'

/** A property of a JSON object, or `undefined` for anything else. */
function property (value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? Reflect.get(value, key) : undefined
}

/** A number, or the digits MySQL writes some of them in (`"filtered": "10.00"`). */
function numeric (value: unknown): number | undefined {
  const number = typeof value === 'string' ? Number(value) : value
  return typeof number === 'number' && Number.isFinite(number) ? number : undefined
}

/** The first `table` node of a plan, depth first in document order: the outer table of the statement. */
function firstTable (node: unknown, depth = 0): unknown {
  if (depth > 8 || typeof node !== 'object' || node === null) return undefined
  const table = property(node, 'table')
  if (table !== undefined) return table
  for (const value of Object.values(node)) {
    const found = firstTable(value, depth + 1)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * MySQL's and MariaDB's estimate of a SELECT's rows, from `EXPLAIN FORMAT=JSON`'s outer table: MySQL's
 * `rows_produced_per_join`, else the rows the plan reads (`rows`, MariaDB's name; `rows_examined_per_scan`, MySQL's)
 * times the `filtered` percentage. MariaDB estimates `filtered` from its engine-independent statistics only
 * (`ANALYZE TABLE … PERSISTENT FOR ALL`); without them an unindexed filter reads as the whole table.
 *
 * @example
 * ```ts
 * await mysqlStatistics.estimateRows(db, db.selectFrom('books').select('id').where('year', '>', 2000).compile())
 * ```
 */
export const mysqlStatistics: DialectStatistics = {
  async estimateRows (db, query) {
    const explain = CompiledQuery.raw(`explain format=json ${query.sql}`, [...query.parameters])
    const { rows } = await db.executeQuery<Row>(explain)
    const text = rows[0]?.EXPLAIN
    if (typeof text !== 'string') return undefined
    const table = firstTable(JSON.parse(text))
    const produced = numeric(property(table, 'rows_produced_per_join'))
    if (produced !== undefined) return Math.round(produced)
    const read = numeric(property(table, 'rows')) ?? numeric(property(table, 'rows_examined_per_scan'))
    const filtered = numeric(property(table, 'filtered')) ?? 100
    return read === undefined ? undefined : Math.round((read * filtered) / 100)
  },
}
