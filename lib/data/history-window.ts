import type { AnyDatabase, Row } from '../sql.js'
import { isRecord } from '../schema/object-schema.js'

// The reading side of the history table (issue 39's pinned layout) that `changed_since` pages by: the entries of one
// table after a position, in position order, and the oldest position still retained. Both are index range reads on
// `(table_name, position)` with a LIMIT: cheap statements (execution/cost-class.ts), whatever the history's size.

/** One history entry as `changed_since` reads it: its position, the row's key, and its versions before and after. */
export interface HistoryEntry {
  /** Decimal digits: PostgreSQL answers a BIGINT as a string, and JavaScript numbers stop at 2^53. */
  readonly position: string
  /** The key as stored: a canonical JSON object of the key's columns (`{"id":5}`). */
  readonly rowKey: string
  readonly before: Row | undefined
  readonly after: Row | undefined
}

/** Where the history of a viewset's table is. */
export interface HistorySource {
  /** The history table (`viewset_history`, or `history.table`). */
  readonly historyTable: string
  /** The viewset's table: its entries' `table_name`. */
  readonly table: string
}

/** A stored version (the `before` or `after` JSON text) as a row; `undefined` for NULL or text that is no object. */
function storedRow (text: unknown): Row | undefined {
  if (typeof text !== 'string') return undefined
  try {
    const parsed: unknown = JSON.parse(text)
    return isRecord(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}

/** A position as a parameter: a number while exact, else its digits. */
function positionParameter (position: string): number | string {
  const value = Number(position)
  return Number.isSafeInteger(value) ? value : position
}

/**
 * The first `limit` entries of the table after `since`, in position order (`position > since`): a page of changes
 * is at most `limit` entries, so it is never cut inside one entry, and the next page starts after the last one read.
 *
 * @example
 * ```ts
 * const entries = await historyAfter(db, { historyTable: 'viewset_history', table: 'notes' }, '0', 100)
 * ```
 */
export async function historyAfter (
  db: AnyDatabase,
  source: HistorySource,
  since: string,
  limit: number
): Promise<HistoryEntry[]> {
  const rows = await db
    .selectFrom(source.historyTable)
    .select(['position', 'row_key', 'before', 'after'])
    .where('table_name', '=', source.table)
    .where('position', '>', positionParameter(since))
    .orderBy('position')
    .limit(limit)
    .execute()
  return rows.map((row) => ({
    position: String(row.position),
    rowKey: String(row.row_key),
    before: storedRow(row.before),
    after: storedRow(row.after),
  }))
}

/**
 * The oldest position the history still holds for the table, or `undefined` when it holds none: entries are pruned
 * oldest first (README "Changes since"), so a position below it may have lost the entries after it.
 */
export async function oldestRetained (db: AnyDatabase, source: HistorySource): Promise<string | undefined> {
  const row = await db
    .selectFrom(source.historyTable)
    .select('position')
    .where('table_name', '=', source.table)
    .orderBy('position')
    .limit(1)
    .executeTakeFirst()
  return row === undefined ? undefined : String(row.position)
}
