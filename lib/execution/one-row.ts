import { SelectQueryNode } from 'kysely'
import type { CompiledQuery, RootOperationNode } from 'kysely'

// SELECTs known to answer at most one row: SQLite reads them with `.get()` (sqlite-statements.ts), which
// stops after the first row. A write is never marked, whatever it answers: SQLite checkpoints its WAL only when
// a write runs to its end. Keyed by the compiled query's node, which a cached statement keeps while it is
// cached (each request spreads it with its own parameters), so the set holds nothing once it is evicted. Part of
// the synchronous-answer contract (eventually.ts, 2).
const oneRowQueries = new WeakSet<RootOperationNode>()

/**
 * Records that a compiled SELECT answers at most one row (by primary key) and returns it; any other statement
 * is returned unmarked.
 *
 * @example
 * ```ts
 * const byId = markOneRow(db.selectFrom('items').selectAll().where('id', '=', 0).compile())
 * ```
 */
export function markOneRow<Q extends CompiledQuery> (compiled: Q): Q {
  if (SelectQueryNode.is(compiled.query)) oneRowQueries.add(compiled.query)
  return compiled
}

/** Whether a query is a SELECT marked as answering at most one row. */
export function answersOneRow (query: RootOperationNode): boolean {
  return oneRowQueries.has(query)
}
