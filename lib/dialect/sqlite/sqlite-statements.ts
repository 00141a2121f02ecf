import { CompiledQuery } from 'kysely'
import type { KyselyConfig, LogEvent, SqliteDatabase } from 'kysely'
import { cachedStatements } from './sqlite-prepared.js'
import type { BetterSqliteDatabase, CachedStatement } from './sqlite-prepared.js'
import { compiledStatementKinds } from '../shared/connection.js'
import type { DirectResult } from '../shared/connection.js'
import { answersOneRow } from '../../execution/one-row.js'
import type { Row } from '../../sql.js'
export { isBetterSqliteDatabase } from './sqlite-prepared.js'
export type { BetterSqliteDatabase, BetterSqliteStatement } from './sqlite-prepared.js'
import type { PlanReader, SqliteReaders } from './sqlite-readers.js'
import { watchLimit } from './sqlite-readers.js'

// Statements prepared once per SQLite connection opened by createDatabase. The viewset compiles its SQL
// once (at registration, or once per query shape) and runs it with `db.executeQuery`: better-sqlite3
// statements are cached by SQL text, and a compiled SELECT or write runs straight on the
// connection, skipping Kysely's executor (its connection mutex and promise chain cost as much as a short
// read), whenever that cannot be told apart from going through Kysely.

/** One SQLite connection opened by createDatabase. */
export interface SqliteHandle {
  /** Set when Kysely opens the connection, cleared when it closes it. */
  database: SqliteDatabase | undefined
  /** True while statements must go through Kysely: a transaction holds the connection, or it is closed. */
  busy: () => boolean
  prepare: (sql: string) => CachedStatement
  readonly log: KyselyConfig['log']
  /** The worker threads that run heavy SELECTs (sqlite-readers.ts), once the file is open; none for `:memory:`. */
  readers: SqliteReaders | undefined
}

/** A handle for a SQLite connection that a Kysely instance will open; `log` is the instance's. */
export function sqliteHandle (log: KyselyConfig['log']): SqliteHandle {
  return {
    database: undefined,
    busy: () => false,
    prepare: () => {
      throw new Error('SQLite is not open')
    },
    log,
    readers: undefined,
  }
}

/**
 * The connection as Kysely sees it, with its statements prepared once per SQL text (bounded, least
 * recently used first out): Kysely's driver would prepare every statement again on each query.
 */
export function attachSqlite (handle: SqliteHandle, database: BetterSqliteDatabase, size = 256): SqliteDatabase {
  const { prepare, clear } = cachedStatements(database, size, 'sqlite-prepared')
  const connection: SqliteDatabase = {
    prepare,
    close () {
      handle.database = undefined
      clear()
      void handle.readers?.close()
      handle.readers = undefined
      database.close()
    },
  }
  handle.prepare = prepare
  handle.busy = () => database.inTransaction || !database.open
  handle.database = connection
  return connection
}

/** The plan of a statement on this connection, for sqlite-readers.ts: prepared once, not kept (read once per
 * compiled statement); none when it does not prepare (the statement itself then reports why). */
export function planReader (database: BetterSqliteDatabase): PlanReader {
  return (sql, parameters) => {
    try {
      return database.prepare(`explain query plan ${sql}`).all(parameters).map((row) => String(row.detail))
    } catch {
      return []
    }
  }
}

/**
 * What a statement answers, as Kysely's SQLite driver does: the rows of one that reads (a SELECT, or a write
 * with RETURNING); the changes and last insert id of a write without RETURNING.
 */
function resultOf (statement: CachedStatement, compiled: CompiledQuery): DirectResult | undefined {
  if (statement.reader) return { rows: rowsOf(statement, compiled) }
  let info: { changes: number | bigint; lastInsertRowid: number | bigint }
  try {
    info = statement.run(compiled.parameters)
  } catch (error) {
    // better-sqlite3 refuses such a write while a stream iterates the connection, with a TypeError and before
    // running anything: Kysely's path waits for the stream to end instead. A value it cannot bind is the other
    // TypeError, and Kysely's driver throws it just as well.
    if (error instanceof TypeError) return undefined
    throw error
  }
  return { rows: [], numAffectedRows: BigInt(info.changes), insertId: BigInt(info.lastInsertRowid) }
}

/** The rows of a statement that reads. */
function rowsOf (statement: CachedStatement, compiled: CompiledQuery): Row[] {
  // `.get()` resets the statement after its first row: enough for a SELECT by primary key, the only statements
  // marked (one-row.ts). A write is stepped to its end whatever it answers: SQLite runs its WAL hook, the
  // auto-checkpoint, only when a statement returns SQLITE_DONE, so writes reset after their first row grew the
  // WAL without bound, every read slower as it grew (benchmarks/analysis.md#sqlite-wal-growth).
  if (!answersOneRow(compiled.query)) return statement.all(compiled.parameters)
  const row = statement.get(compiled.parameters)
  return row === undefined ? [] : [row]
}

/** A heavy SELECT on a reader thread, with the events Kysely's log would get. */
async function offThread (
  readers: SqliteReaders,
  compiled: CompiledQuery,
  log: ((event: LogEvent) => void | Promise<void>) | undefined
): Promise<DirectResult> {
  const start = performance.now()
  try {
    const result = await readers.run(compiled)
    await log?.({ level: 'query', isStream: false, query: compiled, queryDurationMillis: performance.now() - start })
    return result
  } catch (error) {
    void Promise.resolve()
      .then(() => log?.({ level: 'error', error, query: compiled, queryDurationMillis: performance.now() - start }))
      .catch(() => {})
    throw error
  }
}

// The process's CPU time, read at most every 20 ms (a getrusage call costs microseconds under load): a watched run's
// CPU time is bounded from above by the CPU time since the last reading before it, which it needs only when slow.
const cpuClock = { at: -Infinity, usage: process.cpuUsage() }

function cpuBefore (now: number): NodeJS.CpuUsage {
  if (now - cpuClock.at > 20) {
    cpuClock.at = now
    cpuClock.usage = process.cpuUsage()
  }
  return cpuClock.usage
}

/**
 * A statement the statistics lifted to the main thread, timed: a run past their promise sends it to the readers.
 * A slow run is judged by the CPU time the process spent since just before it, when less than its wall time: a run the
 * scheduler held up (a loaded machine descheduling the thread for 50 ms and more) read no more rows than promised, and
 * judging it by its wall time started a reader thread (about 20 MiB) that nothing then needed.
 */
function watched (
  readers: SqliteReaders,
  statement: CachedStatement,
  compiled: CompiledQuery,
  log: ((event: LogEvent) => void | Promise<void>) | undefined
): DirectResult | Promise<DirectResult> | undefined {
  const start = performance.now()
  const cpu = cpuBefore(start)
  try {
    return log === undefined ? resultOf(statement, compiled) : logged(statement, compiled, log, start)
  } finally {
    let ms = performance.now() - start
    if (ms > watchLimit) {
      const { user, system } = process.cpuUsage(cpu)
      ms = Math.min(ms, (user + system) / 1000)
    }
    void readers.ran(compiled, ms)
  }
}

/**
 * Runs a compiled SELECT or write straight on a SQLite connection opened by createDatabase (or adopted by
 * withPreparedStatements) and answers as Kysely's driver would; `undefined` when it must go through Kysely
 * instead: a connection not open yet, a transaction in progress (Kysely holds the only connection until it
 * ends; reading now would see its uncommitted rows, writing would join it), a stream iterating this very
 * statement, a write without RETURNING while any stream iterates, or an array-form `log`. A function `log`
 * gets the events Kysely would send. better-sqlite3 runs reads, and writes that read back (RETURNING), beside
 * other open iterators, so those need no waiting. A heavy SELECT (sqlite-readers.ts) runs on a reader thread
 * when the file has readers.
 */
export function runDirect (
  handle: SqliteHandle,
  compiled: CompiledQuery
): DirectResult | Promise<DirectResult> | undefined {
  if (handle.database === undefined || !compiledStatementKinds.has(compiled.query.kind) || handle.busy()) {
    return undefined
  }
  const { log } = handle
  if (log !== undefined && typeof log !== 'function') return undefined
  const { readers } = handle
  const placement = readers?.placement(compiled)
  if (placement === 'reader' && readers !== undefined) return offThread(readers, compiled, log)
  const statement = handle.prepare(compiled.sql)
  if (statement.busy) return undefined
  if (placement === 'watched' && readers !== undefined) return watched(readers, statement, compiled, log)
  if (log === undefined) return resultOf(statement, compiled)
  return logged(statement, compiled, log, performance.now())
}

/** A statement on the main connection, with the events Kysely's log would get. */
function logged (
  statement: CachedStatement,
  compiled: CompiledQuery,
  log: (event: LogEvent) => void | Promise<void>,
  start: number
): DirectResult | Promise<DirectResult> | undefined {
  let result: DirectResult | undefined
  try {
    result = resultOf(statement, compiled)
    if (result === undefined) return undefined
  } catch (error) {
    // The query's error is the one to report, whatever the logger does.
    void Promise.resolve()
      .then(() => log({ level: 'error', error, query: compiled, queryDurationMillis: performance.now() - start }))
      .catch(() => {})
    throw error
  }
  const done = log({
    level: 'query',
    isStream: false,
    query: compiled,
    queryDurationMillis: performance.now() - start,
  } satisfies LogEvent)
  return done instanceof Promise ? done.then(() => result) : result
}

// Compiled once: a compiled query is frozen, and building one per transaction was Kysely's node work each time.
const begin = CompiledQuery.raw('begin immediate')
const commit = CompiledQuery.raw('commit')
const rollback = CompiledQuery.raw('rollback')

/**
 * A transaction run at once on the connection (shared/connection.ts SyncTransaction): nothing else can run on it
 * until `work` returns, so it cannot be told apart from one of Kysely's. Declined while Kysely holds a transaction,
 * and when `BEGIN` cannot run beside an iterating stream (better-sqlite3 refuses it with a TypeError, before running
 * anything). A function `log` gets each statement's event, `BEGIN` and `COMMIT` included, as Kysely's would; a promise
 * it answers is not waited for (a write cannot wait with its transaction open).
 */
export function transactDirect<T> (
  handle: SqliteHandle,
  work: (run: (compiled: CompiledQuery) => DirectResult) => T
): { value: T } | undefined {
  const { log } = handle
  if (handle.database === undefined || (log !== undefined && typeof log !== 'function') || handle.busy()) {
    return undefined
  }
  const step = (compiled: CompiledQuery): DirectResult | undefined => {
    const start = performance.now()
    try {
      const result = resultOf(handle.prepare(compiled.sql), compiled)
      const queryDurationMillis = performance.now() - start
      if (result !== undefined) told(log, { level: 'query', isStream: false, query: compiled, queryDurationMillis })
      return result
    } catch (error) {
      told(log, { level: 'error', error, query: compiled, queryDurationMillis: performance.now() - start })
      throw error
    }
  }
  if (step(begin) === undefined) return undefined
  try {
    const value = work((compiled) => {
      const result = step(compiled)
      if (result === undefined) throw new Error('a statement of a synchronous transaction did not run')
      return result
    })
    step(commit)
    return { value }
  } catch (error) {
    // SQLite may have rolled back already (a full disk): the error to report is the statement's.
    try { step(rollback) } catch {}
    throw error
  }
}

/** Gives `log` an event, its fault (or its promise's) dropped: the statement's outcome is what the caller gets. */
function told (log: ((event: LogEvent) => void | Promise<void>) | undefined, event: LogEvent): void {
  if (log === undefined) return
  try {
    const done = log(event)
    if (done instanceof Promise) done.catch(() => {})
  } catch {}
}
