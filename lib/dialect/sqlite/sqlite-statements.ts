import type { CompiledQuery, KyselyConfig, LogEvent, SqliteDatabase, SqliteStatement } from 'kysely'
import { LruCache } from '../../execution/lru-cache.js'
import { compiledStatementKinds } from '../shared/connection.js'
import type { DirectResult } from '../shared/connection.js'
import { answersOneRow } from '../../execution/one-row.js'
import type { Row } from '../../sql.js'

// Statements prepared once per SQLite connection opened by createDatabase. The viewset compiles its SQL
// once (at registration, or once per query shape) and runs it with `db.executeQuery`: better-sqlite3
// statements are cached by SQL text, and a compiled SELECT or write runs straight on the
// connection, skipping Kysely's executor (its connection mutex and promise chain cost as much as a short
// read), whenever that cannot be told apart from going through Kysely.

/** The part of a better-sqlite3 `Database` used here. */
export interface BetterSqliteDatabase {
  readonly inTransaction: boolean
  readonly open: boolean
  prepare: (sql: string) => BetterSqliteStatement
  close: () => unknown
}

/** The part of a better-sqlite3 `Statement` used here; rows are plain objects (nothing turns `.raw()` on). */
export interface BetterSqliteStatement extends SqliteStatement {
  readonly busy: boolean
  all: (parameters: readonly unknown[]) => Row[]
  get: (parameters: readonly unknown[]) => Row | undefined
  iterate: (parameters: readonly unknown[]) => IterableIterator<Row>
  columns: () => Array<{ name: string; type: string | null }>
  safeIntegers: (toggle: boolean) => unknown
}

/** A statement as the cache keeps it: rows are objects, and `busy` while a stream iterates it. */
interface CachedStatement extends SqliteStatement {
  readonly busy: boolean
  all: (parameters: readonly unknown[]) => Row[]
  get: (parameters: readonly unknown[]) => Row | undefined
}

/** An integer read with better-sqlite3's safe integers, as the other drivers give it: a number while exact, else its
 * digits. */
function exactInteger (value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : String(value)
}

/** Declared types that ask for 64-bit integers (BIGINT, INT8, UNSIGNED BIG INT); a plain INTEGER does not. */
const wideInteger = /big|int8/i

/**
 * better-sqlite3 reads every integer as a JavaScript number, so 2^53 + 1 comes back as 2^53. A statement
 * that reads a column declared as a 64-bit integer (BIGINT, INT8, UNSIGNED BIG INT) reads its integers as
 * bigints instead (every statement reading an INTEGER key would pay for converting each cell), then hands them on like
 * mysql2's `supportBigNumbers`: a number up to 2^53 - 1 (what a
 * `Type.Integer` field serializes), the exact digits beyond (what a `Type.String` field serializes).
 * Other statements, and other columns, are untouched.
 */
function withExactIntegers (statement: BetterSqliteStatement): CachedStatement {
  const wide = (column: { type: string | null }): boolean => column.type !== null && wideInteger.test(column.type)
  if (!statement.reader || !statement.columns().some(wide)) {
    return statement
  }
  statement.safeIntegers(true)
  // Safe integers apply to every integer the statement reads (a BOOLEAN's 0 and 1, an expression), so every cell is
  // checked.
  const exact = (row: Row): Row => {
    for (const name in row) {
      const value = row[name]
      if (typeof value === 'bigint') row[name] = exactInteger(value)
    }
    return row
  }
  return {
    reader: true,
    get busy () {
      return statement.busy
    },
    all: (parameters) => statement.all(parameters).map(exact),
    get: (parameters) => {
      const row = statement.get(parameters)
      return row === undefined ? undefined : exact(row)
    },
    run: (parameters) => statement.run(parameters),
    * iterate (parameters) {
      for (const row of statement.iterate(parameters)) yield exact(row)
    },
  }
}

/** One SQLite connection opened by createDatabase. */
export interface SqliteHandle {
  /** Set when Kysely opens the connection, cleared when it closes it. */
  database: SqliteDatabase | undefined
  /** True while statements must go through Kysely: a transaction holds the connection, or it is closed. */
  busy: () => boolean
  prepare: (sql: string) => CachedStatement
  readonly log: KyselyConfig['log']
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
  }
}

/**
 * The connection as Kysely sees it, with its statements prepared once per SQL text (bounded, least
 * recently used first out): Kysely's driver would prepare every statement again on each query.
 */
export function attachSqlite (handle: SqliteHandle, database: BetterSqliteDatabase, size = 256): SqliteDatabase {
  const statements = new LruCache<string, CachedStatement>(size, undefined, 'sqlite-prepared')
  const prepare = (sql: string): CachedStatement => {
    let statement = statements.get(sql)
    if (statement === undefined) {
      statement = withExactIntegers(database.prepare(sql))
      statements.set(sql, statement)
    }
    return statement
  }
  const connection: SqliteDatabase = {
    prepare,
    close () {
      handle.database = undefined
      statements.clear()
      database.close()
    },
  }
  handle.prepare = prepare
  handle.busy = () => database.inTransaction || !database.open
  handle.database = connection
  return connection
}

/** Whether a value is a better-sqlite3 `Database` (what a user hands SqliteDialect), open or not. */
export function isBetterSqliteDatabase (value: unknown): value is BetterSqliteDatabase {
  return (
    typeof value === 'object' &&
    value !== null &&
    'prepare' in value &&
    typeof value.prepare === 'function' &&
    'inTransaction' in value &&
    typeof value.inTransaction === 'boolean' &&
    'open' in value &&
    typeof value.open === 'boolean'
  )
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

/**
 * Runs a compiled SELECT or write straight on a SQLite connection opened by createDatabase (or adopted by
 * withPreparedStatements) and answers as Kysely's driver would; `undefined` when it must go through Kysely
 * instead: a connection not open yet, a transaction in progress (Kysely holds the only connection until it
 * ends; reading now would see its uncommitted rows, writing would join it), a stream iterating this very
 * statement, a write without RETURNING while any stream iterates, or an array-form `log`. A function `log`
 * gets the events Kysely would send. better-sqlite3 runs reads, and writes that read back (RETURNING), beside
 * other open iterators, so those need no waiting.
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
  const statement = handle.prepare(compiled.sql)
  if (statement.busy) return undefined
  if (log === undefined) return resultOf(statement, compiled)
  const start = performance.now()
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
  const logged = log({
    level: 'query',
    isStream: false,
    query: compiled,
    queryDurationMillis: performance.now() - start,
  } satisfies LogEvent)
  return logged instanceof Promise ? logged.then(() => result) : result
}
