import { InsertQueryNode, ValuesNode } from 'kysely'
import type { CompiledQuery, RootOperationNode } from 'kysely'

// Statements known to answer at most one row: SQLite reads them with `.get()` (sqlite-statements.ts), which
// stops after the first row. Keyed by the compiled query's node, which a cached statement keeps while it is
// cached (each request spreads it with its own parameters), so the set holds nothing once it is evicted.
const oneRowQueries = new WeakSet<RootOperationNode>()

/**
 * Records that a compiled query answers at most one row (a read or a write by primary key) and returns it.
 *
 * @example
 * ```ts
 * const byId = markOneRow(db.selectFrom('items').selectAll().where('id', '=', 0).compile())
 * ```
 */
export function markOneRow<Q extends CompiledQuery> (compiled: Q): Q {
  oneRowQueries.add(compiled.query)
  return compiled
}

/** Whether a query answers at most one row: marked so, or an INSERT of one VALUES row (ON CONFLICT included). */
export function answersOneRow (query: RootOperationNode): boolean {
  if (oneRowQueries.has(query)) return true
  return InsertQueryNode.is(query) && query.values !== undefined && ValuesNode.is(query.values) && query.values.values.length === 1
}
