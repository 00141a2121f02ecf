import type { KyselyPlugin } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { lockHistory } from '../dialect/shared/history-lock.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { RowDecoder } from './json-text.js'
import { StatementCache } from './statement-cache.js'

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
  /** The JSON text columns of the table parsed as the viewset reads them (data/json-text.ts). */
  readonly decode?: RowDecoder | undefined
  /** The dialect's plugin of the data layer's statements (DialectSyntax.statementPlugin). */
  readonly statementPlugin?: KyselyPlugin | undefined
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
    const { historyTable, table, keyColumns, dialect } = this.target
    const keyRow = entry.after ?? entry.before
    if (keyRow === null || !keyed(keyColumns, keyRow)) throw new Error('a history entry needs the row\'s key')
    const after = entry.after === null ? null : await this.#whole(trx, entry.after)
    // Once per transaction and table: the lock is held to its end (a savepoint is a transaction object of its own).
    const held = lockedIn.get(trx) ?? new Set<string>()
    if (!held.has(table)) {
      await lockHistory(trx, dialect, historyTable, table)
      if (trx.isTransaction) lockedIn.set(trx, held.add(table))
    }
    const values = {
      table_name: table,
      row_key: rowKeyText(keyColumns, keyRow),
      operation: entry.operation,
      at: new Date().toISOString(),
      actor: entry.actor === null ? null : entry.actor.slice(0, 255),
      before: historyText(entry.before),
      after: historyText(after),
    }
    await this.#statements.execute(trx, 'history-insert', Object.values(values),
      () => trx.insertInto(historyTable).values(values))
  }

  /** The row as stored now, every column, read by its key in `trx` (or as written, when it is not there). */
  async #whole (trx: AnyDatabase, row: Row): Promise<Row> {
    const { table, keyColumns } = this.target
    const key = keyColumns.map((column) => row[column.name])
    const { rows } = await this.#statements.execute(trx, 'history-whole', key, () => {
      let select = trx.selectFrom(table).selectAll()
      for (const column of keyColumns) select = select.where(column.name, '=', row[column.name])
      return select
    }, true)
    return rows[0] ?? row
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
