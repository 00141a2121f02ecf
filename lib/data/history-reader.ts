import type { AnyDatabase, Row } from '../sql.js'
import { isRecord } from '../schema/object-schema.js'
import { historyColumns } from './history-table.js'
import type { HistoryOperation } from './history-writer.js'

// The reading side of the history (issue 39 item 3): a row's entries, newest first (`GET {prefix}/{id}/history`), its
// version at a time (`?as_of=`), and a table's entries after a position, oldest first (the change feed and
// `changed_since` of issue 40 both read through readHistoryAfter).
// Positions are decimal strings: PostgreSQL answers a BIGINT as one, and JavaScript numbers stop at 2^53.

/** One entry of the history, as read back; `V`, a stored version of the row: parsed ({@link HistoryEntry}) or its
 * JSON text ({@link HistoryTextEntry}). */
export interface StoredEntry<V> {
  /** Monotonic in commit order per table (dialect/shared/history-lock.ts), as decimal digits. */
  readonly position: string
  readonly tableName: string
  /** `rowKeyText` of the row's key, e.g. `{"id":5}`. */
  readonly rowKey: string
  readonly operation: HistoryOperation
  /** ISO-8601 UTC with milliseconds. */
  readonly at: string
  readonly actor: string | null
  /** The row as stored before the write, every column; `null` for a create. */
  readonly before: V | null
  /** The row as stored after the write, every column; `null` for a hard delete. */
  readonly after: V | null
}

/** An entry with its versions parsed: what the HISTORY route and `?as_of=` answer. */
export type HistoryEntry = StoredEntry<Row>

/** An entry with its versions kept as JSON text: what a change feed joins into one statement unparsed. */
export type HistoryTextEntry = StoredEntry<string>

/** Where a viewset's history is: the history table, and the viewset's table (`table_name`). */
export interface HistorySource {
  readonly historyTable: string
  readonly table: string
}

const operations: readonly HistoryOperation[] = ['create', 'update', 'delete', 'restore']

function isOperation (value: unknown): value is HistoryOperation {
  return operations.some((operation) => operation === value)
}

/** A stored version as JSON text; `null` for none. A driver that parsed a JSON column (a migration of your own with
 * `json`/`jsonb`) hands an object: written back as text. */
function textOf (value: unknown): string | null {
  if (value === null || value === undefined) return null
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/** A stored version parsed; `null` for none (or for text that is not an object, which the writer never writes). */
function rowOf (value: unknown): Row | null {
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value
  return isRecord(parsed) ? parsed : null
}

/** An entry from its stored row, its versions read by `version`. */
function entryOf<V> (row: Row, version: (value: unknown) => V | null): StoredEntry<V> {
  const operation = row.operation
  if (!isOperation(operation)) throw new Error(`history entry ${String(row.position)}: unknown operation`)
  return {
    position: String(row.position),
    tableName: String(row.table_name),
    rowKey: String(row.row_key),
    operation,
    at: String(row.at),
    actor: row.actor === null || row.actor === undefined ? null : String(row.actor),
    before: version(row.before),
    after: version(row.after),
  }
}

/** A position as a parameter: a number while exact, else its digits. */
function positionParameter (position: string): number | string {
  const value = Number(position)
  return Number.isSafeInteger(value) ? value : position
}

/** Whether a text is a position: decimal digits, at most 19 (a BIGINT). */
export function isPosition (text: unknown): text is string {
  return typeof text === 'string' && /^\d{1,19}$/.test(text)
}

/**
 * THE reader of a table's history after a position (the change feed's and `changed_since`'s): the entries of the
 * source's table after `after` (exclusive; `'0'` for the beginning), oldest first, at most `limit`, none past the
 * position `until` when given, their versions as JSON text (joined into one statement as they are; `JSON.parse` one
 * to read it). One statement, an index range on `(table_name, position)`. A reader that has seen position p never
 * later sees a new entry of the table below p.
 *
 * @example
 * ```ts
 * const entries = await readHistoryAfter(db, { historyTable: 'viewset_history', table: 'items' }, '0', 100)
 * const next = entries.at(-1)?.position ?? '0'
 * ```
 */
export async function readHistoryAfter (
  db: AnyDatabase, source: HistorySource, after: string, limit: number, until?: string
): Promise<HistoryTextEntry[]> {
  let select = db.selectFrom(source.historyTable).select([...historyColumns])
    .where('table_name', '=', source.table).where('position', '>', positionParameter(after))
  if (until !== undefined) select = select.where('position', '<=', positionParameter(until))
  const rows = await select.orderBy('position').limit(limit).execute()
  return rows.map((row) => entryOf(row, textOf))
}

/**
 * The highest position of the source's table's entries, `'0'` when it has none: where a feed that starts now starts.
 *
 * @example
 * ```ts
 * const start = await latestHistoryPosition(db, source)
 * ```
 */
export async function latestHistoryPosition (db: AnyDatabase, source: HistorySource): Promise<string> {
  const row = await db.selectFrom(source.historyTable).select('position').where('table_name', '=', source.table)
    .orderBy('position', 'desc').limit(1).executeTakeFirst()
  return row === undefined ? '0' : String(row.position)
}

/**
 * The lowest position of the source's table's entries still stored (pruning deletes the oldest), or `undefined` when
 * it has none: a position below it is past the retention window.
 *
 * @example
 * ```ts
 * const oldest = await oldestHistoryPosition(db, source)
 * ```
 */
export async function oldestHistoryPosition (db: AnyDatabase, source: HistorySource): Promise<string | undefined> {
  const row = await db.selectFrom(source.historyTable).select('position').where('table_name', '=', source.table)
    .orderBy('position').limit(1).executeTakeFirst()
  return row === undefined ? undefined : String(row.position)
}

/**
 * One row's entries, newest first, at most `limit`, below position `below` when given (the next page's cursor).
 *
 * @example
 * ```ts
 * const page = await readRowHistory(db, source, '{"id":5}', { limit: 20 })
 * ```
 */
export async function readRowHistory (
  db: AnyDatabase, source: HistorySource, rowKey: string, page: { readonly limit: number; readonly below?: string }
): Promise<HistoryEntry[]> {
  let select = db.selectFrom(source.historyTable).select([...historyColumns])
    .where('table_name', '=', source.table).where('row_key', '=', rowKey)
  if (page.below !== undefined) select = select.where('position', '<', positionParameter(page.below))
  const rows = await select.orderBy('position', 'desc').limit(page.limit).execute()
  return rows.map((row) => entryOf(row, rowOf))
}

/**
 * The row's latest entry at or before `at` (ISO-8601 UTC with milliseconds, as the entries' `at`), or its latest
 * entry when `at` is not given; `undefined` when there is none.
 *
 * @example
 * ```ts
 * const entry = await rowEntryAt(db, source, '{"id":5}', '2026-11-26T20:01:13.123Z')
 * const then = entry?.operation === 'delete' ? undefined : entry?.after
 * ```
 */
export async function rowEntryAt (
  db: AnyDatabase, source: HistorySource, rowKey: string, at?: string
): Promise<HistoryEntry | undefined> {
  let select = db.selectFrom(source.historyTable).select([...historyColumns])
    .where('table_name', '=', source.table).where('row_key', '=', rowKey)
  if (at !== undefined) select = select.where('at', '<=', at)
  const row = await select.orderBy('position', 'desc').limit(1).executeTakeFirst()
  return row === undefined ? undefined : entryOf(row, rowOf)
}
