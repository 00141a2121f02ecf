import { CompiledQuery } from 'kysely'
import type { DialectStatistics } from '../dialect.js'
import type { Row } from '../../sql.js'

/**
 * MySQL's and MariaDB's estimate of a SELECT's rows: the `rows` of `EXPLAIN`'s first line (the outer table), times
 * its `filtered` percentage where the server gives one (MySQL; MariaDB's plain EXPLAIN has no such column). It is
 * the number of rows the plan expects to read: the index range's size where an index serves the filters, else the
 * table's size, as InnoDB last sampled it.
 *
 * @example
 * ```ts
 * await mysqlStatistics.estimateRows(db, db.selectFrom('books').select('id').where('year', '>', 2000).compile())
 * ```
 */
export const mysqlStatistics: DialectStatistics = {
  async estimateRows (db, query) {
    const { rows } = await db.executeQuery<Row>(CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]))
    const first = rows[0]
    if (first === undefined) return undefined
    const estimate = Number(first.rows)
    const filtered = first.filtered === undefined || first.filtered === null ? 100 : Number(first.filtered)
    if (!Number.isFinite(estimate) || !Number.isFinite(filtered)) return undefined
    return Math.round((estimate * filtered) / 100)
  },
}
