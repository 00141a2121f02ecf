import type { AnyDatabase } from '../sql.js'

// The reading side of the history table (issue 39's pinned layout: `position`, `table_name`, `row_key`, `operation`,
// `before`, `after`), as the change feed reads it: the entries of one table after a position, in position order.
// Positions are monotonic in commit order per table (the history writer's lock), so a reader that has read up to p
// never misses a later entry of that table below p.

/** One history entry, as the feed reads it: `before` and `after` are the JSON texts of the row as stored. */
export interface HistoryEntry {
  readonly position: number
  /** The key as a JSON object of the key's columns (`{"id":5}`). */
  readonly rowKey: string
  readonly operation: 'create' | 'update' | 'delete' | 'restore'
  readonly before: string | null
  readonly after: string | null
}

function operationOf (value: unknown): HistoryEntry['operation'] {
  return value === 'create' || value === 'delete' || value === 'restore' ? value : 'update'
}

function textOf (value: unknown): string | null {
  if (value === null || value === undefined) return null
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/**
 * The entries of `table` after `position` (at most `limit`, and none past `until` when given), in position order.
 *
 * @example
 * ```ts
 * const entries = await historyEntries(db, 'viewset_history', 'items', 41, 500)
 * ```
 */
export async function historyEntries (
  db: AnyDatabase,
  history: string,
  table: string,
  position: number,
  limit: number,
  until?: number
): Promise<HistoryEntry[]> {
  let select = db.selectFrom(history)
    .select(['position', 'row_key', 'operation', 'before', 'after'])
    .where('table_name', '=', table)
    .where('position', '>', position)
  if (until !== undefined) select = select.where('position', '<=', until)
  const rows = await select.orderBy('position').limit(limit).execute()
  return rows.map((row) => ({
    position: Number(row.position),
    rowKey: textOf(row.row_key) ?? '{}',
    operation: operationOf(row.operation),
    before: textOf(row.before),
    after: textOf(row.after),
  }))
}
