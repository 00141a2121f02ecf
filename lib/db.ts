import { isAbsolute, resolve } from 'node:path'
import { CompiledQuery, MysqlDialect, PostgresDialect, SqliteDialect } from 'kysely'
import type { DatabaseConnection, Dialect, Kysely, KyselyConfig, MysqlPool, SqliteDatabase } from 'kysely'
import { config as loadDotenv } from 'dotenv'
import { attachSqlite, postgresHandle, PreparedKysely, sqliteHandle, useNamedStatements } from './db-statements.js'
import type { BetterSqliteDatabase, PgPool, PostgresHandle, SqliteHandle } from './db-statements.js'
import { ViewsetErrors } from './errors.js'
import { errorProperty } from './dialect/dialect.js'
import { BoundedSqliteDialect } from './dialect/sqlite-driver.js'
import { cancelOnClientGone } from './dialect/postgres-cancel.js'

/** Options of {@link createDatabase}. */
export interface CreateDatabaseOptions {
  /** PostgreSQL / MySQL pool size per process (default 10). Keep `max × processes` under the server's `max_connections`. */
  poolSize?: number
  /**
   * Milliseconds to wait for a connection from the pool (or a new one) before failing with 503 (default 5000).
   * SQLite has one connection, which a transaction holds until it ends: a query waits for it at most this long.
   */
  connectionTimeout?: number
  /** SQLite busy timeout in milliseconds (default 5000). */
  busyTimeout?: number
  /**
   * Milliseconds any one statement may run, raw SQL included (default 30000; 0 leaves the server's own
   * setting). Past it the statement is stopped and the request answers 503 `FST_VIEWSET_TIMEOUT` with
   * `Retry-After`; the connection stays usable.
   * - PostgreSQL: `statement_timeout`, sent when each connection opens. Behind PgBouncer, which refuses
   *   unknown startup parameters, list it in `track_extra_parameters` (PgBouncer 1.20+) or
   *   `ignore_startup_parameters` and set it on the role instead (`ALTER ROLE app SET statement_timeout = '30s'`).
   * - MariaDB: `max_statement_time`. MySQL 8: `max_execution_time`, which bounds only SELECT statements.
   * - SQLite cannot interrupt a statement: the option is ignored.
   */
  statementTimeout?: number
  /** Passed to Kysely, for example to log or count queries. */
  log?: KyselyConfig['log']
  /**
   * PostgreSQL: send the SQL that viewsets compile ahead of time (`db.executeQuery(compiled)`) as named
   * prepared statements, parsed and planned once per connection (default true). Turn it off behind a
   * pooler that cannot keep them, such as PgBouncer in transaction mode before 1.21. A pool that outlives
   * DDL changing a table's columns answers "cached plan must not change result type": open a new one.
   */
  preparedStatements?: boolean
}

let envLoaded = false

/** The database URL in effect: the argument, else `DATABASE_URL` (from the environment or `.env`), else `sqlite:base.db`. */
export function databaseUrl (url?: string): string {
  if (url !== undefined && url !== '') return url
  if (!envLoaded) {
    loadDotenv({ quiet: true })
    envLoaded = true
  }
  const fromEnv = process.env.DATABASE_URL
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : 'sqlite:base.db'
}

/**
 * Creates a Kysely instance for a database URL. It returns at once; the connection opens on first use.
 * Whoever creates a database closes it (`await db.destroy()`, for example in an `onClose` hook).
 *
 * - `postgres://user@host:5432/name` or `postgresql://...` → a pg Pool
 * - `mysql://user@host:3306/name` or `mariadb://...` → a mysql2 pool (install `mysql2`); query parameters are
 *   mysql2 options (`?ssl={"rejectUnauthorized":true}`). Sessions run in UTC, BOOLEAN (TINYINT(1)) comes back
 *   as true/false and MariaDB JSON parsed, like on PostgreSQL.
 * - `sqlite:path/to/file.db` (relative to the working directory, or absolute) or `sqlite::memory:` → better-sqlite3
 * - no URL and no `DATABASE_URL` → the SQLite file `./base.db`
 *
 * SQLite files opened here get WAL journaling, a busy timeout and `foreign_keys = ON`.
 *
 * @example
 * ```ts
 * interface DB { items: { id: Generated<number>, name: string } }
 * const db = createDatabase<DB>()                       // DATABASE_URL or ./base.db
 * const pg = createDatabase<DB>('postgres://postgres@127.0.0.1:5432/test')
 * ```
 */
export function createDatabase<DB> (url?: string, options: CreateDatabaseOptions = {}): Kysely<DB> {
  const target = databaseUrl(url)
  statementTimeout(options) // checked now rather than when the first connection opens
  const config = options.log === undefined ? {} : { log: options.log }
  const sqlite = sqliteHandle(options.log)
  const postgres = postgresHandle(options.log, options.preparedStatements !== false)
  const dialect = dialectFor(target, options, sqlite, postgres)
  return new PreparedKysely<DB>({ ...config, dialect }, {
    ...(dialect instanceof SqliteDialect ? { sqlite } : {}),
    ...(dialect instanceof PostgresDialect ? { postgres } : {}),
  })
}

function dialectFor (url: string, options: CreateDatabaseOptions, sqlite: SqliteHandle, postgres: PostgresHandle): Dialect {
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase()
  switch (scheme) {
    case 'postgres':
    case 'postgresql':
      return new PostgresDialect({ pool: async () => await openPostgres(url, options, postgres) })
    case 'mysql':
    case 'mariadb':
      return new MysqlDialect({ pool: async () => await openMysql(url, options), onCreateConnection: mysqlSession(statementTimeout(options)) })
    case 'sqlite': {
      const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
      if (path === '') throw new ViewsetErrors.InvalidDatabaseUrl(url, 'a SQLite URL needs a path, as in sqlite:base.db or sqlite::memory:')
      return new BoundedSqliteDialect({ database: async () => await openSqlite(path, options, sqlite) }, options.connectionTimeout ?? 5000)
    }
    default:
      throw new ViewsetErrors.InvalidDatabaseUrl(redact(url), 'use postgres://, postgresql://, mysql://, mariadb:// or sqlite:')
  }
}

/** Hides the password of a URL in error messages. */
function redact (url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@')
}

async function openPostgres (url: string, options: CreateDatabaseOptions, handle: PostgresHandle) {
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectionTimeout ?? 5000,
    // A startup parameter rather than a SET per connection: no extra round trip, and no window in which
    // a connection runs unbounded. pg leaves it out when it is 0.
    statement_timeout: statementTimeout(options),
  })
  // An idle client that loses its server emits 'error' on the pool; unhandled, it would crash the process.
  pool.on('error', () => {})
  // A client in use has no pool listener, and pg emits 'error' on it as well as failing its query when
  // the server goes away (a restart, a failover): without this listener the process would crash.
  pool.on('connect', (client) => { client.on('error', () => {}) })
  pool.on('connect', cancelOnClientGone)
  if (options.preparedStatements !== false) pool.on('connect', useNamedStatements)
  handle.pool = pool as unknown as PgPool
  return pool
}

async function openMysql (url: string, options: CreateDatabaseOptions): Promise<MysqlPool> {
  const mysql = await import('mysql2').catch(() => {
    throw new ViewsetErrors.InvalidDatabaseUrl(redact(url), 'MySQL needs the mysql2 package: npm install mysql2')
  })
  const parsed = new URL(url.replace(/^mariadb:/i, 'mysql:'))
  const timeout = options.connectionTimeout ?? 5000
  const pool = mysql.createPool({
    // Query parameters (such as ?ssl={"rejectUnauthorized":true} or ?charset=...) are mysql2 options.
    uri: parsed.toString(),
    port: parsed.port === '' ? 3306 : Number(parsed.port),
    connectionLimit: options.poolSize ?? 10,
    connectTimeout: timeout,
    // DATETIME/TIMESTAMP are read and written in UTC, like pg's timestamptz; the session is set to UTC below.
    timezone: 'Z',
    // BIGINT as a number while it is exact, as a string beyond 2^53; DECIMAL as a string, like pg's numeric.
    supportBigNumbers: true,
    typeCast: mysqlTypeCast,
  })
  return withAcquireTimeout(pool, timeout)
}

/** The mysql2 subset of a column's metadata that {@link mysqlTypeCast} reads. */
interface MysqlField {
  type: string
  length: number
  extendedFormat?: string
  string: () => string | null
}

/**
 * Answers in the types the other dialects use: BOOLEAN (TINYINT(1)) as true/false, and MariaDB's
 * JSON (a LONGTEXT underneath) parsed, like MySQL's JSON type and PostgreSQL's json/jsonb.
 */
function mysqlTypeCast (field: MysqlField, next: () => unknown): unknown {
  if (field.type === 'TINY' && field.length === 1) {
    const value = field.string()
    return value === null ? null : value !== '0'
  }
  if (field.extendedFormat === 'json') {
    const value = field.string()
    return value === null ? null : JSON.parse(value) as unknown
  }
  return next()
}

function statementTimeout (options: CreateDatabaseOptions): number {
  const timeout = options.statementTimeout ?? 30_000
  if (!Number.isFinite(timeout) || timeout < 0) throw new ViewsetErrors.InvalidOption('statementTimeout', 'must be a number of milliseconds, 0 or more')
  return Math.floor(timeout)
}

/**
 * The session settings every MySQL connection gets: UTC, so that NOW() agrees with the UTC dates mysql2
 * writes, and the statement timeout: MariaDB's `max_statement_time` (seconds), else MySQL's
 * `max_execution_time` (milliseconds, SELECT only); MySQL does not know the first (error 1193).
 */
function mysqlSession (timeout: number) {
  return async function onMysqlConnection (connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("set time_zone = '+00:00'"))
    if (timeout === 0) return
    try {
      await connection.executeQuery(CompiledQuery.raw(`set session max_statement_time = ${timeout / 1000}`))
    } catch (error) {
      if (errorProperty(error, 'errno') !== '1193') throw error
      await connection.executeQuery(CompiledQuery.raw(`set session max_execution_time = ${timeout}`))
    }
  }
}

/**
 * mysql2's pool queues requests for a connection without limit. Fail after `timeout` milliseconds
 * instead, like pg's `connectionTimeoutMillis`, so that an exhausted pool answers 503 rather than hang.
 */
function withAcquireTimeout (pool: MysqlPool, timeout: number): MysqlPool {
  return {
    getConnection (callback) {
      let waiting = true
      const timer = setTimeout(() => {
        waiting = false
        callback(new ViewsetErrors.Unavailable(), undefined as never)
      }, timeout)
      pool.getConnection((error, connection) => {
        clearTimeout(timer)
        if (waiting) {
          waiting = false
          callback(error, connection)
        } else if (error === null || error === undefined) {
          // The caller gave up on this connection: hand it back to the pool.
          connection.release()
        }
      })
    },
    end: (callback) => { pool.end(callback) },
  }
}

async function openSqlite (path: string, options: CreateDatabaseOptions, handle: SqliteHandle): Promise<SqliteDatabase> {
  const { default: Database } = await import('better-sqlite3')
  const file = path === ':memory:' || isAbsolute(path) ? path : resolve(process.cwd(), path)
  const database = new Database(file)
  // WAL lets readers run beside the writer; the busy timeout makes concurrent writers wait instead of failing.
  database.pragma('journal_mode = WAL')
  database.pragma(`busy_timeout = ${options.busyTimeout ?? 5000}`)
  database.pragma('foreign_keys = ON')
  // Kysely's driver prepares every statement again on each query; the handle keeps them (see db-statements.ts).
  return attachSqlite(handle, database as unknown as BetterSqliteDatabase)
}

let defaultDatabase: Kysely<unknown> | undefined

/**
 * The default database of this process, created on first call from `DATABASE_URL` (or `./base.db`).
 *
 * @example
 * ```ts
 * const db = getDatabase<DB>()
 * app.addHook('onClose', () => db.destroy())
 * ```
 */
export function getDatabase<DB> (): Kysely<DB> {
  defaultDatabase ??= createDatabase<unknown>()
  return defaultDatabase as Kysely<DB>
}
