import { CompiledQuery } from 'kysely'
import type { DialectStatistics } from '../dialect.js'
import type { Row } from '../../sql.js'

/** A property of a JSON object, or `undefined` for anything else. */
function property (value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? Reflect.get(value, key) : undefined
}

/**
 * PostgreSQL's estimate of a SELECT's rows: `Plan Rows` of the top node of `EXPLAIN (FORMAT JSON)`, planned with
 * the statement's own values (pg binds them, so the planner sees them as a custom plan would).
 *
 * @example
 * ```ts
 * await postgresStatistics.estimateRows(db, db.selectFrom('books').select('id').where('year', '>', 2000).compile())
 * // 412000, as the last ANALYZE saw the table
 * ```
 */
export const postgresStatistics: DialectStatistics = {
  async estimateRows (db, query) {
    const explain = CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters])
    const { rows } = await db.executeQuery<Row>(explain)
    // pg parses the json column: [{ "Plan": { "Node Type": ..., "Plan Rows": 412000, ... } }]
    const document: unknown = rows[0]?.['QUERY PLAN']
    const top: unknown = Array.isArray(document) ? document[0] : undefined
    const estimate = property(property(top, 'Plan'), 'Plan Rows')
    return typeof estimate === 'number' && Number.isFinite(estimate) ? Math.round(estimate) : undefined
  },
}
