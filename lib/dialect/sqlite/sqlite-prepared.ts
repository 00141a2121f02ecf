import type { SqliteStatement } from 'kysely'
import { LruCache } from '../../execution/lru-cache.js'
import type { Row } from '../../sql.js'

// better-sqlite3 statements prepared once per SQL text, on the main connection (sqlite-statements.ts) and on each
// reader thread's (sqlite-read-worker.ts): kept apart from Kysely so that a reader thread starts without loading it.

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
export interface CachedStatement extends SqliteStatement {
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

/**
 * The statements of a connection, prepared once per SQL text (bounded, least recently used first out), reading
 * 64-bit integer columns exactly.
 */
export function cachedStatements (
  database: BetterSqliteDatabase,
  size: number,
  name?: string
): { prepare: (sql: string) => CachedStatement, clear: () => void } {
  const statements = new LruCache<string, CachedStatement>(size, undefined, name)
  const prepare = (sql: string): CachedStatement => {
    let statement = statements.get(sql)
    if (statement === undefined) {
      statement = withExactIntegers(database.prepare(sql))
      statements.set(sql, statement)
    }
    return statement
  }
  return { prepare, clear: () => { statements.clear() } }
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
