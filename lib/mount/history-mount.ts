import type { ColumnInfo, StoredColumn, ViewsetDialect } from '../dialect/dialect.js'
import { notifyChange } from '../dialect/postgres/postgres-listener.js'
import type { HistoryActor } from '../data/history-options.js'
import { prepareHistoryTable } from '../data/history-table.js'
import { HistoryWriter, operationOf } from '../data/history-writer.js'
import type { RowDecoder } from '../data/json-text.js'
import { invalidOption } from '../errors.js'
import { underlyingDatabase } from '../execution/request-transaction.js'
import type { DefaultHandlerContext } from '../http/default-handler-context.js'
import type { HistoryContext } from '../http/route-context.js'
import type { AfterWriteMethod, ResolvedOptions, RowChange, RowContext, ViewsetMethod } from '../options.js'
import { propertiesOf } from '../schema/derive.js'
import type { JsonSchema } from '../schema/derive.js'
import type { AnyDatabase, Row } from '../sql.js'

// Mounting `history` (issue 39 item 3): the history table checked (or created) before any route exists, the writer
// chained after the viewset's `afterWrite` (the one funnel every write of the default handlers passes through: POST,
// BULK, PUT, PATCH, DELETE, upserts, the bulk writes, nested children and batch operations), and what the HISTORY
// route and `?as_of=` read. Without the option nothing here runs, and the writes run no extra statement.

/** A mounted history: its writer, and who it says wrote. */
export interface MountedHistory {
  readonly writer: HistoryWriter
  readonly actor: HistoryActor
}

/** The catalog's names of a 64-bit integer: a key of one is written as a JSON string. */
const bigintTypes = new Set(['bigint', 'int8'])

/**
 * Checks the history table (created with `createTable`) and builds the viewset's writer; `undefined` when the option
 * is off (then `'HISTORY'` in `methods` fails). Fails at startup naming the option.
 *
 * @example
 * ```ts
 * const history = await mountHistory(resolved, methods, { db, dialect, columns, decode })
 * ```
 */
export async function mountHistory (
  resolved: Pick<ResolvedOptions, 'history' | 'table' | 'primaryKey' | 'keyColumns'> &
    Partial<Pick<ResolvedOptions, 'changes'>>,
  methods: readonly ViewsetMethod[],
  table: {
    db: AnyDatabase; dialect: ViewsetDialect; columns: ReadonlyMap<string, ColumnInfo>; decode: RowDecoder | undefined
  }
): Promise<MountedHistory | undefined> {
  const options = resolved.history
  if (options === undefined) {
    if (methods.includes('HISTORY')) invalidOption('methods', '\'HISTORY\' needs the history option')
    return undefined
  }
  const { db, dialect, columns, decode } = table
  await prepareHistoryTable(underlyingDatabase(db), options, dialect.name, resolved.table)
  // Every column of the key, a composite one's too (issue 39 item 1): the entry's row_key names them all.
  const keyColumns = (resolved.keyColumns ?? [resolved.primaryKey])
    .map((name) => ({ name, bigint: bigintTypes.has((columns.get(name)?.type ?? '').toLowerCase()) }))
  const writer = new HistoryWriter({
    dialect: dialect.name,
    historyTable: options.table,
    table: resolved.table,
    keyColumns,
    columns: [...columns.keys()],
    decode,
    statementPlugin: dialect.syntax.statementPlugin,
    // The change feed's listeners on PostgreSQL (changes/change-feed.ts); the other databases' feeds poll.
    notify: dialect.name === 'postgres' && resolved.changes !== undefined ? notifyChange : undefined,
  })
  return { writer, actor: options.actor }
}

/**
 * The row rules with the history recorded after the viewset's own `afterWrite`, in the write's transaction, for each
 * row written; as they are without a history.
 *
 * @example
 * ```ts
 * const rowRules = withHistory(servedRowRules(declaration, parent), history)
 * ```
 */
export function withHistory<R extends Pick<DefaultHandlerContext, 'afterWrite'>> (
  rules: R,
  history: MountedHistory | undefined
): R & Pick<DefaultHandlerContext, 'recordHistory' | 'afterWriteNow'> {
  if (history === undefined) return rules
  const { afterWrite } = rules
  const { writer, actor } = history
  // One entry, whichever way it is recorded.
  const entryOf = (method: string, context: RowContext<AfterWriteMethod> | undefined, change: RowChange<Row>) => ({
    operation: operationOf(method, change.before, change.after),
    before: change.before,
    after: change.after,
    actor: context === undefined ? null : actor(context),
  })
  const recordHistory: NonNullable<DefaultHandlerContext['recordHistory']> = async (trx, method, context, change) => {
    await writer.record(trx, entryOf(method, context, change))
  }
  const recorded: DefaultHandlerContext['afterWrite'] = async (trx, context, change) => {
    await afterWrite?.(trx, context, change)
    await recordHistory(trx, context.method, context, change)
  }
  // With no afterWrite of the viewset's, the entry can be recorded at once, in a synchronous transaction (SQLite).
  const afterWriteNow: DefaultHandlerContext['afterWriteNow'] = afterWrite === undefined && writer.synchronous
    ? (trx, context, change) => writer.recordNow(trx, entryOf(context.method, context, change))
    : undefined
  return { ...rules, afterWrite: recorded, recordHistory, afterWriteNow }
}

/**
 * What the HISTORY route and `?as_of=` read, with the option on: the entries' source, the row as documented (the
 * schema's columns, none required: a stored row is served as it was), LIST's `limit` bounds and the row rules.
 *
 * @example
 * ```ts
 * const history = historyContextOf({ history: mounted, described }, { entity, columns, resolved, scopeOf })
 * ```
 */
export function historyContextOf (
  table: {
    readonly history?: MountedHistory | undefined
    /** The table's catalog: every column (a deleted row's rule is evaluated on its last version of them). */
    readonly described: { readonly columns: readonly StoredColumn[] }
  },
  given: {
    readonly entity: JsonSchema
    readonly columns: readonly string[]
    readonly resolved: Pick<ResolvedOptions, 'maxLimit' | 'defaultLimit'>
    readonly scopeOf: HistoryContext['scopeOf']
  }
): HistoryContext | undefined {
  const mounted = table.history
  if (mounted === undefined) return undefined
  const { target } = mounted.writer
  const properties = propertiesOf(given.entity)
  const row: JsonSchema = {
    type: 'object',
    properties: Object.fromEntries(given.columns.flatMap((column) => {
      const property = properties[column]
      return property === undefined ? [] : [[column, property]]
    })),
  }
  return {
    source: { historyTable: target.historyTable, table: target.table },
    keyColumns: target.keyColumns,
    catalog: table.described.columns,
    row,
    limits: { maxLimit: given.resolved.maxLimit, defaultLimit: given.resolved.defaultLimit },
    scopeOf: given.scopeOf,
  }
}
