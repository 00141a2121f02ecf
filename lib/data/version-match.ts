import type { StoredColumn, StoredRows } from '../dialect/dialect.js'
import { storedVersionColumn } from '../dialect/dialect.js'
import type { Condition } from '../query/condition.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { RowDecoder } from './json-text.js'
import type { HistoryTextEntry } from './history-reader.js'
import { parametersOf, shapeOf } from './condition-shape.js'

// Which changes a subscriber sees: each history entry's version before and after the write, evaluated against the
// LIST statement's filters and the caller's row rule in ONE statement per batch of entries and group of subscribers
// (same filter shape, same values, same rule parameters). A version is the row as stored, so a deleted row's rule is
// evaluated on its last version, and a change replayed later is decided exactly as it was the first time.

/** What the feed knows of its table: the columns of the stored versions, and what rows are read and decoded with. */
export interface VersionTable {
  readonly table: string
  readonly catalog: readonly StoredColumn[]
  /** The columns an event's row is read with (LIST's). */
  readonly selected: readonly string[]
  /** The dialect's derived table of stored versions (DialectSyntax.storedRows). */
  readonly storedRows: StoredRows
  readonly decode: RowDecoder | undefined
}

/** One change as a subscriber of a group sees it. */
export interface MatchedChange {
  /** The entry's position (a feed's positions stay below 2^53: `Last-Event-ID` takes 15 digits). */
  readonly position: number
  readonly event: 'insert' | 'update' | 'delete'
  /** The row after the change (insert, update). */
  readonly row?: Row
  /** The key's JSON text (delete). */
  readonly rowKey: string
}

/** The key of a group of subscribers: the statement's shape and every value it binds. */
export function groupKey (conditions: readonly Condition[]): string {
  const values = JSON.stringify(parametersOf(conditions), (_key, value: unknown) =>
    typeof value === 'bigint' ? `${value}n` : value)
  return `${shapeOf(conditions)}\u0000${values}`
}

/** The versions to evaluate: per entry, the index of its version before (or 0) and after (or 0). */
function versionsOf (entries: readonly HistoryTextEntry[]): { documents: string, slots: Array<[number, number]> } {
  const texts: string[] = []
  const slot = (text: string | null): number => (text === null ? 0 : texts.push(text))
  // A restore's earlier version is a deleted row, a soft delete's later one too: neither is in the list.
  const slots = entries.map((entry): [number, number] => [
    entry.operation === 'restore' || entry.operation === 'create' ? 0 : slot(entry.before),
    entry.operation === 'delete' ? 0 : slot(entry.after),
  ])
  return { documents: `[${texts.join(',')}]`, slots }
}

/** The event a version pair makes: in then in, an update; out then in, an insert; in then out, a delete. */
function changeOf (entry: HistoryTextEntry, before: boolean, after: Row | undefined): MatchedChange | undefined {
  const { rowKey } = entry
  const position = Number(entry.position)
  if (after !== undefined) return { position, rowKey, event: before ? 'update' : 'insert', row: after }
  return before ? { position, rowKey, event: 'delete' } : undefined
}

/**
 * The changes of `entries` that the conditions (filters and rule) admit, in position order: one statement, over the
 * stored versions as a derived table named like the table.
 *
 * @example
 * ```ts
 * const changes = await matchChanges(db, versionTable, [...query.conditions, scope], entries)
 * ```
 */
export async function matchChanges (
  db: AnyDatabase,
  target: VersionTable,
  conditions: readonly Condition[],
  entries: readonly HistoryTextEntry[]
): Promise<MatchedChange[]> {
  if (entries.length === 0) return []
  const { documents, slots } = versionsOf(entries)
  const { table, catalog, selected } = target
  let select = db.selectFrom(target.storedRows(table, catalog, documents)).select([...selected, storedVersionColumn])
  if (conditions.length > 0) select = select.where((eb) => eb.and(conditions.map((term) => term.expression(eb))))
  const read = { rows: await select.execute() }
  const rows = target.decode === undefined ? read.rows : target.decode(read).rows
  const matched = new Map<number, Row>()
  for (const row of rows) {
    const version = Number(row[storedVersionColumn])
    delete row[storedVersionColumn]
    matched.set(version, row)
  }
  const changes: MatchedChange[] = []
  entries.forEach((entry, index) => {
    const [before, after] = slots[index] ?? [0, 0]
    const change = changeOf(entry, before !== 0 && matched.has(before), after === 0 ? undefined : matched.get(after))
    if (change !== undefined) changes.push(change)
  })
  return changes
}
