import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { AnyDatabase, Row } from '../../sql.js'
import type { ViewsetDialect } from '../dialect.js'
import { postgresPositionCache } from '../postgres/postgres-history-sequence.js'

// The history's positions are monotonic in commit order per table (issue 39 item 3; the change feed of issue 40
// reads past a position and must never miss an entry that commits later below it): each write takes, just before
// its history INSERT, a lock per viewset table held until its transaction ends, so that two writers of one table
// draw positions and commit one after the other. PostgreSQL: a transaction-level advisory lock (released at commit
// or rollback; fine behind PgBouncer in transaction mode). MySQL/MariaDB: `SELECT … FOR UPDATE` on the table's row of
// a small lock table, `<history table>_locks`. SQLite: one writer at a time already.

/** The lock table of a history table, on MySQL/MariaDB. */
export function historyLockTable (historyTable: string): string {
  return `${historyTable}_locks`
}

/**
 * The advisory lock key of a viewset table on PostgreSQL: a signed 64-bit number from a hash of its name, the same in
 * every process (and every version of the library), as decimal digits.
 *
 * @example
 * ```ts
 * historyLockKey('items') // '-4181390455034573290' (say)
 * ```
 */
export function historyLockKey (table: string): string {
  return createHash('sha256').update(`viewset_history:${table}`).digest().readBigInt64BE(0).toString()
}

/**
 * Takes the history lock of `table` in `trx`, held until it commits or rolls back (see the file's comment).
 *
 * @example
 * ```ts
 * await lockHistory(trx, 'postgres', 'viewset_history', 'items')
 * await trx.insertInto('viewset_history').values(entry).execute()
 * ```
 */
export async function lockHistory (
  trx: AnyDatabase,
  dialect: ViewsetDialect['name'],
  historyTable: string,
  table: string
): Promise<void> {
  if (dialect === 'postgres') {
    await sql`select pg_advisory_xact_lock(cast(${historyLockKey(table)} as bigint))`.execute(trx)
  } else if (dialect === 'mysql') {
    await trx.selectFrom(historyLockTable(historyTable)).select('table_name').where('table_name', '=', table)
      .forUpdate().execute()
  }
}

/**
 * PostgreSQL's history INSERT that takes the lock itself, once per transaction and table: the advisory lock is taken
 * in a subquery the inserted row is selected from, so before the identity draws the position (the row's projection
 * runs after its subquery), and the lock costs no round trip of its own. Its parameters are `values`', in order.
 *
 * @example
 * ```ts
 * await lockedHistoryInsert(trx, 'viewset_history', 'items', entry).execute()
 * ```
 */
export function lockedHistoryInsert (trx: AnyDatabase, historyTable: string, table: string, values: Row) {
  const names = Object.keys(values)
  // The key is digits computed here, never input: a literal keeps the parameters the values' alone.
  const locked = sql`(select pg_advisory_xact_lock(cast(${sql.lit(historyLockKey(table))} as bigint)))`.as('l')
  return trx.insertInto(historyTable).columns(names)
    .expression(trx.selectFrom(locked).select(names.map((name) => sql.val(values[name]).as(name))))
}

/**
 * At startup, what the lock needs, else what is wrong: on MySQL/MariaDB the lock table (created with `create`) and its
 * row for `table`; on PostgreSQL positions drawn from a sequence without cache (a cache hands each connection its own
 * block, committed out of order whatever the lock).
 */
export async function prepareHistoryLock (
  db: AnyDatabase,
  dialect: ViewsetDialect['name'],
  historyTable: string,
  table: string,
  create: boolean
): Promise<string | undefined> {
  if (dialect === 'postgres') {
    const cache = await postgresPositionCache(db, historyTable)
    if (cache === undefined || cache === 1) return undefined
    return `the position of the history table "${historyTable}" is drawn from a sequence with a cache of ${cache}: ` +
      'positions would commit out of order; ALTER SEQUENCE … CACHE 1 (the README\'s migration creates it so)'
  }
  if (dialect !== 'mysql') return undefined
  const locks = historyLockTable(historyTable)
  if (create) {
    await db.schema.createTable(locks).ifNotExists()
      .addColumn('table_name', 'varchar(255)', (column) => column.primaryKey()).execute()
  }
  try {
    await sql`insert ignore into ${sql.table(locks)} (table_name) values (${table})`.execute(db)
    return undefined
  } catch {
    return `the lock table "${locks}" of the history does not exist: run the migration in the README, or set ` +
      'history: { createTable: true }'
  }
}
