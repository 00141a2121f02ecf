import type { KyselyPlugin } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { lockedHistoryInsert, lockHistory } from '../dialect/shared/history-lock.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { RowDecoder } from './json-text.js'
import { StatementCache } from './statement-cache.js'
import { andThen } from '../execution/eventually.js'
import type { Eventually } from '../execution/eventually.js'

// The writer of the history (issue 39 item 3): one entry per row a write changed, inserted through the write's own
// transaction (a write that rolls back leaves none), with the row before and after as stored, every column of the
// table, read in that transaction.

/** What happened to a row. */
export type HistoryOperation = 'create' | 'update' | 'delete' | 'restore'

/** A column of a row's key, and whether the database holds it as a BIGINT (written as a JSON string). */
export interface KeyColumn {
  readonly name: string
  readonly bigint: boolean
}

/** One entry to record: the operation, the row before and after as stored (`null` where there is none), who. */
export interface HistoryRecord {
  readonly operation: HistoryOperation
  readonly before: Row | null
  readonly after: Row | null
  readonly actor: string | null
}

/** What the writer of one viewset's history knows: where it writes and how rows of its table are keyed. */
export interface HistoryTarget {
  readonly dialect: ViewsetDialect['name']
  /** The history table. */
  readonly historyTable: string
  /** The viewset's table, `table_name` of its entries. */
  readonly table: string
  /** The key's columns, in key order. */
  readonly keyColumns: readonly KeyColumn[]
  /** Every column of the table, in the catalog's order (a whole row's); absent, the row after is always read again. */
  readonly columns?: readonly string[] | undefined
  /** The JSON text columns of the table parsed as the viewset reads them (data/json-text.ts). */
  readonly decode?: RowDecoder | undefined
  /** The dialect's plugin of the data layer's statements (DialectSyntax.statementPlugin). */
  readonly statementPlugin?: KyselyPlugin | undefined
  /** Wakes the change feeds of every process in the write's transaction (PostgreSQL's NOTIFY, with `changes`). */
  readonly notify?: ((trx: AnyDatabase, table: string) => Promise<void>) | undefined
}

/** A key value as canonical JSON: a BIGINT as its digits (a string), any other value as the driver answered it. */
function keyValue (column: KeyColumn, value: unknown): unknown {
  if (typeof value === 'bigint' || (column.bigint && (typeof value === 'number' || typeof value === 'string'))) {
    return String(value)
  }
  return value instanceof Date ? value.toISOString() : value
}

/**
 * THE text of a row's key in the history (`row_key`): a JSON object of the key's columns in key order, BIGINT values
 * as strings, e.g. `{"id":5}`. Every writer and reader of the history keys rows through it.
 *
 * @example
 * ```ts
 * rowKeyText([{ name: 'id', bigint: false }], { id: 5, title: 'x' }) // '{"id":5}'
 * rowKeyText([{ name: 'id', bigint: true }], { id: '9007199254740993' }) // '{"id":"9007199254740993"}'
 * ```
 */
export function rowKeyText (keyColumns: readonly KeyColumn[], row: Row): string {
  const entries = keyColumns.map((column) => [column.name, keyValue(column, row[column.name])])
  return JSON.stringify(Object.fromEntries(entries))
}

/** A stored row as JSON text: BIGINTs as digits, binary as base64, dates as ISO text; `null` for none. */
export function historyText (row: Row | null): string | null {
  if (row === null) return null
  return JSON.stringify(row, function (this: unknown, key: string, value: unknown) {
    if (typeof value === 'bigint') return value.toString()
    const original: unknown = typeof this === 'object' && this !== null ? Reflect.get(this, key) : undefined
    return original instanceof Uint8Array ? Buffer.from(original).toString('base64') : value
  })
}

/**
 * The operation of a write, by the viewset method that made it: DELETE's (a soft delete's too) is `delete`,
 * RESTORE's `restore`; else `create` when there was no row before, `update` otherwise.
 *
 * @example
 * ```ts
 * operationOf('PATCH', before, after) // 'update'
 * ```
 */
export function operationOf (method: string, before: Row | null, after: Row | null): HistoryOperation {
  if (method === 'DELETE' || method === 'DELETE_MANY' || method === 'PURGE' || after === null) return 'delete'
  if (method === 'RESTORE') return 'restore'
  return before === null ? 'create' : 'update'
}

/** The rows a write read back as stored (UPDATE … RETURNING), which the writer need not read again when whole. */
const asStored = new WeakSet<Row>()

/**
 * Marks `row` (and answers it) as read back from the database by the write that made it, not the values sent: its
 * history entry is then written from it, without reading the row again, when it holds every column of the table.
 *
 * @example
 * ```ts
 * const written = readBack(await update(trx, id, values))
 * ```
 */
export function readBack (row: Row): Row {
  asStored.add(row)
  return row
}

/** The history locks each open transaction holds, by table (dialect/shared/history-lock.ts). */
const lockedIn = new WeakMap<AnyDatabase, Set<string>>()

/** Whether a row has every key column with a value. */
function keyed (keyColumns: readonly KeyColumn[], row: Row): boolean {
  return keyColumns.every((column) => row[column.name] !== undefined && row[column.name] !== null)
}

/**
 * The history writer of one viewset. {@link record} runs in the write's transaction: the row after the write is read
 * again whole (every column), the table's history lock is taken (dialect/shared/history-lock.ts), and the entry is
 * inserted; all commit or roll back with the write.
 *
 * @example
 * ```ts
 * const target = { dialect: 'postgres', historyTable: 'viewset_history', table: 'items', keyColumns } as const
 * const writer = new HistoryWriter(target)
 * await writer.record(trx, { operation: 'update', before, after, actor: 'alice' })
 * ```
 */
export class HistoryWriter {
  readonly target: HistoryTarget
  /** Its two statements, compiled once: building a Kysely query costs more than running it on SQLite. */
  readonly #statements: StatementCache

  constructor (target: HistoryTarget) {
    this.target = Object.freeze({ ...target })
    this.#statements = new StatementCache(target.statementPlugin, target.decode)
    Object.freeze(this)
  }

  /** Records one entry through `trx`, the write's transaction. See the class. */
  async record (trx: AnyDatabase, entry: HistoryRecord): Promise<void> {
    const { historyTable, table, dialect } = this.target
    const keyRow = this.#keyRow(entry)
    const after = entry.after === null ? null : await this.#whole(trx, entry.after)
    // Once per transaction and table: the lock is held to its end (a savepoint is a transaction object of its own).
    const held = lockedIn.get(trx) ?? new Set<string>()
    const lock = !held.has(table)
    // PostgreSQL takes its lock in the INSERT itself (one round trip less while it is held); the others before it.
    if (lock && dialect !== 'postgres') await lockHistory(trx, dialect, historyTable, table)
    if (lock && trx.isTransaction) lockedIn.set(trx, held.add(table))
    const values = this.#values(entry, keyRow, after)
    if (lock && dialect === 'postgres') {
      await this.#statements.execute(trx, 'history-insert-locked', Object.values(values),
        () => lockedHistoryInsert(trx, historyTable, table, values))
    } else {
      await this.#insert(trx, values)
    }
    await this.target.notify?.(trx, table)
  }

  /** Whether {@link recordNow} may record: on SQLite (its one writer is the lock), with no change feed to wake. */
  get synchronous (): boolean {
    return this.target.dialect === 'sqlite' && this.target.notify === undefined
  }

  /**
   * {@link record} at once, in a synchronous transaction (execution/sync-transaction.ts), where {@link synchronous}:
   * the same entry, from the same reads.
   */
  recordNow (trx: AnyDatabase, entry: HistoryRecord): Eventually<void> {
    const keyRow = this.#keyRow(entry)
    return andThen(entry.after === null ? null : this.#whole(trx, entry.after), (after) =>
      andThen(this.#insert(trx, this.#values(entry, keyRow, after)), () => undefined))
  }

  /** The row whose key the entry is filed under. */
  #keyRow (entry: HistoryRecord): Row {
    const keyRow = entry.after ?? entry.before
    if (keyRow === null || !keyed(this.target.keyColumns, keyRow)) {
      throw new Error('a history entry needs the row\'s key')
    }
    return keyRow
  }

  /** The entry's columns, in the INSERT's order. */
  #values (entry: HistoryRecord, keyRow: Row, after: Row | null): Row {
    return {
      table_name: this.target.table,
      row_key: rowKeyText(this.target.keyColumns, keyRow),
      operation: entry.operation,
      at: new Date().toISOString(),
      actor: entry.actor === null ? null : entry.actor.slice(0, 255),
      before: historyText(entry.before),
      after: historyText(after),
    }
  }

  #insert (trx: AnyDatabase, values: Row): Eventually<unknown> {
    return this.#statements.execute(trx, 'history-insert', Object.values(values),
      () => trx.insertInto(this.target.historyTable).values(values))
  }

  /** The row as stored now, every column, read by its key in `trx` (or as written, when it is not there); the row
   * itself, its columns in the catalog's order, when the write read it back with every column. */
  #whole (trx: AnyDatabase, row: Row): Eventually<Row> {
    const { table, keyColumns, columns } = this.target
    if (columns !== undefined && asStored.has(row) && columns.every((column) => column in row)) {
      return Object.fromEntries(columns.map((column) => [column, row[column]]))
    }
    const key = keyColumns.map((column) => row[column.name])
    return andThen(this.#statements.execute(trx, 'history-whole', key, () => {
      let select = trx.selectFrom(table).selectAll()
      for (const column of keyColumns) select = select.where(column.name, '=', row[column.name])
      return select
    }, true), ({ rows }) => rows[0] ?? row)
  }
}

/**
 * Records one history entry of `writer`'s table through `trx`: for the writes that do not pass through `afterWrite`
 * (a soft delete's `delete`, a `restore`), called by their code in their transaction.
 *
 * @example
 * ```ts
 * await recordHistory(trx, writer, { operation: 'restore', before, after, actor: token?.sub ?? null })
 * ```
 */
export async function recordHistory (trx: AnyDatabase, writer: HistoryWriter, entry: HistoryRecord): Promise<void> {
  await writer.record(trx, entry)
}
