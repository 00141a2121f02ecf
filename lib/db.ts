import { availableParallelism } from 'node:os'
import { Kysely } from 'kysely'
import type { KyselyConfig } from 'kysely'
import { config as loadDotenv } from 'dotenv'
import { invalidOption, ViewsetErrors } from './errors.js'
import type { ConnectionSettings } from './dialect/shared/connection.js'
import { redact } from './dialect/shared/connection.js'
import { connectorFor, connectorOf, knownUrls } from './dialect/pick-dialect.js'
import { checkKyselyCopy } from './dialect/shared/kysely-copy.js'
import { rememberUrl } from './dialect/shared/database-urls.js'
import { AdoptedKysely, PreparedKysely } from './execution/prepared-kysely.js'
import { Bulkhead } from './execution/bulkhead.js'
import { statementDialectOf, tracedAdopted, tracedDatabase } from './observability/traced-database.js'

/**
 * Options of {@link createDatabase}.
 *
 * @example
 * ```ts
 * const options: CreateDatabaseOptions = { poolSize: 20, statementTimeout: 10_000 }
 * const db = createDatabase<DB>(process.env.DATABASE_URL, options)
 * ```
 */
export interface CreateDatabaseOptions {
  /** PostgreSQL / MySQL pool size per process (default 10). Keep `max × processes` under the server's
   * `max_connections`. */
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
   * `Retry-After`; the connection stays usable. A statement with no answer at all by this plus
   * max(1 s, a tenth of it) (a half-open connection) answers the same, and its connection is destroyed.
   * - PostgreSQL: `statement_timeout`, sent when each connection opens and checked on the first
   *   (FST_VIEWSET_STATEMENT_TIMEOUT_IGNORED). Behind PgBouncer, which refuses unknown startup parameters, list it
   *   in `track_extra_parameters` (PgBouncer 1.20+) or `ignore_startup_parameters` and set it on the role
   *   instead (`ALTER ROLE app SET statement_timeout = '30s'`).
   * - MariaDB: `max_statement_time`. MySQL 8: `max_execution_time`, which bounds only SELECT statements.
   * - SQLite: applies to the heavy SELECTs, which run on reader threads (`readWorkers`), waiting for a reader
   *   included; the reader is then terminated and replaced. SQLite cannot interrupt a statement on the main
   *   thread: a cheap read, a write, any statement of a `:memory:` database or of withPreparedStatements' handle.
   */
  statementTimeout?: number
  /**
   * SQLite file: how many worker threads run the heavy SELECTs (search, `contains`, relation filters and
   * ordering, counts, scans and sorts for want of an index, large to-many loads), each on its own read-only connection,
   * so that the event loop keeps serving key lookups and index-served pages (default: the CPUs less one, 1 to 4;
   * 0 runs everything on the main thread). A `:memory:` database has none.
   */
  readWorkers?: number
  /**
   * PostgreSQL / MySQL: how many of the pool's connections heavy statements may hold at once (default 2, or
   * `poolSize − 1` when smaller, at least 1), so that a key lookup always finds one however many clients send
   * expensive requests, and the database server's CPUs are not all taken by them: set it near the server's core
   * count. A heavy statement also takes a connection only when no other statement waits for one. The others
   * wait, at most `connectionTimeout`, in a queue of `heavyQueue`.
   */
  heavyConnections?: number
  /**
   * How many heavy statements may wait for a connection (PostgreSQL / MySQL) or a reader thread (SQLite); past it
   * they answer 503 `FST_VIEWSET_UNAVAILABLE` with `Retry-After` at once (default 50). Queue depth and refusals
   * are published on the `fastify-viewsets:bulkhead` diagnostics channel.
   */
  heavyQueue?: number
  /** Passed to Kysely, for example to log or count queries. */
  log?: KyselyConfig['log']
  /**
   * PostgreSQL: send the SQL that viewsets compile ahead of time (`db.executeQuery(compiled)`) as named
   * prepared statements, parsed and planned once per connection (default true; false with a `pooler`, which
   * cannot keep them: PgBouncer in transaction mode before 1.21). Left to its default, the first connection
   * fails with FST_VIEWSET_POOLER_NOT_NAMED when a pooler sits there unnamed. A pool that outlives
   * DDL changing a table's columns answers "cached plan must not change result type": open a new one.
   */
  preparedStatements?: boolean
  /**
   * PostgreSQL: when a client hangs up before its answer is sent, cancel the query serving it (default true;
   * with `pooler: 'pgbouncer'`, false unless the pooler answers `SHOW VERSION` with 1.20.1 or later).
   * The generated routes know which request each of their queries serves at a small CPU cost per request;
   * once a viewset runs user code in its requests (an overridden handler or `beforeWrite`, a `beforeWrite`
   * option, a custom route), that takes V8's promise hooks on every promise of the process, which costs more
   * (figures: benchmarks/analysis.md#cancel-on-disconnect-cost). Turn it off where such a server is CPU-bound
   * and `statementTimeout` is bound enough for abandoned queries.
   */
  cancelOnDisconnect?: boolean
  /**
   * PostgreSQL: the connection pooler between the app and the server (default none). `'pgbouncer'` (PgBouncer
   * in transaction mode) changes two defaults: `preparedStatements` becomes false (a named statement lives on
   * one server connection, which the next transaction may not get: "prepared statement already exists / does
   * not exist"), and `cancelOnDisconnect` becomes false unless the pooler answers `SHOW VERSION` with 1.20.1 or
   * later (PgBouncer before 1.19.1/1.20.1 can crash on a cancel request that races a disconnect). Set either
   * to true yourself for a PgBouncer that handles it (1.21+ with `max_prepared_statements`, 1.20.1+).
   * With any pooler, the first connection checks that the server's `statement_timeout` is `statementTimeout`
   * and fails with `FST_VIEWSET_STATEMENT_TIMEOUT_IGNORED` when a pooler dropped it.
   *
   * @example
   * ```ts
   * const db = createDatabase<DB>('postgres://app@pgbouncer:6432/app', { pooler: 'pgbouncer' })
   * ```
   */
  pooler?: 'pgbouncer'
}

// `.env` is read here only, the first time a URL is asked for without one: importing the library, or opening a
// database by its URL, leaves the process's environment as it was.
let envLoaded = false

/**
 * The database URL in effect: the argument, else `DATABASE_URL` (from the environment, or from `.env` in the
 * working directory, loaded with dotenv on the first call without a URL), else `sqlite:base.db`.
 *
 * @example
 * ```ts
 * databaseUrl('sqlite::memory:') // 'sqlite::memory:'
 * databaseUrl()                  // DATABASE_URL from the environment or .env, else 'sqlite:base.db'
 * ```
 */
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
  const settings = connectionSettings(options)
  const scheme = /^([a-z0-9+]+):/i.exec(target)?.[1]?.toLowerCase() ?? ''
  const connector = connectorFor(scheme)
  if (connector === undefined) throw new ViewsetErrors.InvalidDatabaseUrl(redact(target), `use ${knownUrls()}`)
  const name = statementDialectOf(scheme)
  // SQLite's heavy reads wait for its reader threads instead (sqlite-readers.ts).
  const bulkhead = name === 'sqlite' ? undefined : poolBulkhead(name, settings, options.heavyConnections)
  const lent = bulkhead === undefined ? settings : { ...settings, lending: bulkhead.lendFrom.bind(bulkhead) }
  const { dialect, direct, transact } = tracedDatabase(connector.connect(target, lent), name)
  const config: KyselyConfig = options.log === undefined ? { dialect } : { dialect, log: options.log }
  const db = direct === undefined && bulkhead === undefined
    ? new Kysely<DB>(config)
    : new PreparedKysely<DB>(config, direct ?? (() => undefined), bulkhead, connector.rowBounds, transact)
  rememberUrl(db, target)
  return db
}

/**
 * The bulkhead of a pool's heavy statements: `heavyConnections` of its connections (default 2, or all but one of a
 * smaller pool). Heavy statements are bound by the database server's CPU, not its connections: more at once than
 * it has cores adds no throughput, only latency for every request (benchmarks/analysis.md, the PostgreSQL attack).
 */
function poolBulkhead (name: string, settings: ConnectionSettings, heavyConnections: unknown): Bulkhead {
  const capacity = heavyConnections ?? Math.max(1, Math.min(defaultHeavyConnections, settings.poolSize - 1))
  if (typeof capacity !== 'number' || !Number.isInteger(capacity) || capacity < 1) {
    invalidOption('heavyConnections', 'must be a whole number of connections, 1 or more')
  }
  return new Bulkhead({ name, capacity, queueBound: settings.heavyQueue, wait: settings.connectionTimeout })
}

/** PostgreSQL already gives one heavy statement up to three processes (`max_parallel_workers_per_gather` 2). */
const defaultHeavyConnections = 2

/**
 * Your own Kysely instance, made as fast under viewsets as one from {@link createDatabase}: the statements
 * viewsets compile ahead of time are prepared once (SQLite: cached better-sqlite3 statements; PostgreSQL:
 * named statements on each pooled client) and reads run straight on the connection or pool you pass, the
 * one your Kysely's dialect was given. Everything else is your instance's: plugins, `db.transaction()`,
 * `destroy()`, pool settings. Pass the result to `createViewset({ db })`; keep using either instance elsewhere.
 *
 * - SQLite: pass the better-sqlite3 `Database` given to `SqliteDialect`.
 * - PostgreSQL: pass the pg `Pool` given to `PostgresDialect`. Its clients then send the SQL that viewsets
 *   compile as named statements (see `preparedStatements` of {@link CreateDatabaseOptions} for poolers).
 * - MySQL: pass the mysql2 pool; the instance is returned as it is (createDatabase has no shortcut there either).
 *
 * When your Kysely has a `log`, every statement goes through it so that the log sees each one (Kysely keeps
 * its log function private): on PostgreSQL still as named statements, on SQLite without the shortcut.
 *
 * @example
 * ```ts
 * import Database from 'better-sqlite3'
 * import { Kysely, SqliteDialect } from 'kysely'
 *
 * const database = new Database('app.db')
 * const db = withPreparedStatements(new Kysely<DB>({ dialect: new SqliteDialect({ database }) }), database)
 * // PostgreSQL: const db = withPreparedStatements(new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }), pool)
 * app.register(createViewset({ db, table: 'items', schema: Item }), { prefix: '/items' })
 * ```
 */
export function withPreparedStatements<DB> (db: Kysely<DB>, handle: object): Kysely<DB> {
  checkKyselyCopy('db', db)
  // a boolean: narrowing would lose DB
  const prepared: boolean = db instanceof PreparedKysely || db instanceof AdoptedKysely
  if (prepared) return db
  // A transaction's statements must run on its connection: the shortcut would run them beside it.
  if (db.isTransaction) invalidOption('db', 'withPreparedStatements takes a Kysely instance, not a transaction')
  const connector = connectorOf(db)
  const adopted = connector.adopt(handle)
  if (adopted === undefined) return db
  return new AdoptedKysely(db, tracedAdopted(adopted, statementDialectOf(connector.urls[0] ?? '')))
}

/** The options with their defaults, checked now rather than when the first connection opens. */
function connectionSettings (options: CreateDatabaseOptions): ConnectionSettings {
  const statementTimeout = options.statementTimeout ?? 30_000
  if (!Number.isFinite(statementTimeout) || statementTimeout < 0) {
    invalidOption('statementTimeout', 'must be a number of milliseconds, 0 or more')
  }
  return {
    poolSize: options.poolSize ?? 10,
    connectionTimeout: options.connectionTimeout ?? 5000,
    busyTimeout: options.busyTimeout ?? 5000,
    statementTimeout: Math.floor(statementTimeout),
    preparedStatements: options.preparedStatements,
    cancelOnDisconnect: options.cancelOnDisconnect,
    pooler: poolerOption(options.pooler),
    log: options.log,
    readWorkers: count('readWorkers', options.readWorkers, Math.max(1, Math.min(4, availableParallelism() - 1))),
    heavyQueue: count('heavyQueue', options.heavyQueue, 50),
  }
}

/** A count option, checked: a whole number, 0 or more. */
function count (option: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    invalidOption(option, 'must be a whole number, 0 or more')
  }
  return value
}

/** The `pooler` option, checked: a JavaScript caller may pass anything. */
function poolerOption (pooler: unknown): 'pgbouncer' | undefined {
  if (pooler !== undefined && pooler !== 'pgbouncer') invalidOption('pooler', "must be 'pgbouncer' or left out")
  return pooler
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
  return defaultDatabase as Kysely<DB> // one instance serves whatever DB the caller declares: the caller's word
}
