import type { CompiledQuery, Dialect, KyselyConfig } from 'kysely'
import type { Row } from '../../sql.js'
import type { CatalogQuery, RowBounds } from '../../execution/row-bound.js'

// The opening half of the dialect seam: what createDatabase hands a database's connector, and what it
// gets back. Types and pure helpers only; each <db>-connector.ts implements it.

/** createDatabase's options, checked and with their defaults: what a connector opens a database with. */
export interface ConnectionSettings {
  /** PostgreSQL / MySQL pool size. */
  readonly poolSize: number
  /** Milliseconds to wait for a connection (SQLite: for its one connection) before a 503. */
  readonly connectionTimeout: number
  /** SQLite busy timeout in milliseconds. */
  readonly busyTimeout: number
  /** Milliseconds one statement may run; 0 leaves the server's setting. A whole number. */
  readonly statementTimeout: number
  /**
   * PostgreSQL: compiled queries become named prepared statements; `undefined` when not given: on unless a
   * pooler is named (and the first connection checks that no pooler sits there unnamed).
   */
  readonly preparedStatements: boolean | undefined
  /**
   * PostgreSQL: a request whose client hung up has its query cancelled (postgres-cancel.ts); `undefined` when
   * not given: on, unless a pooler may crash on it (postgres-server-check.ts decides at the first connection).
   */
  readonly cancelOnDisconnect: boolean | undefined
  /** PostgreSQL: the connection pooler between the app and the server, if any. */
  readonly pooler: 'pgbouncer' | undefined
  /** SQLite file: how many worker threads run heavy SELECTs (0: none, all on the main thread). */
  readonly readWorkers: number
  /** How many heavy statements may wait for a connection (or a SQLite reader) before a 503. */
  readonly heavyQueue: number
  readonly log: KyselyConfig['log']
  /** PostgreSQL / MySQL: told the pool once it opens, so that heavy statements only take a free connection. */
  readonly lending?: (lending: PoolLending) => void
}

/**
 * What a pool can lend now without a wait, and when one of its connections comes back: read by the bulkhead of
 * heavy statements (execution/bulkhead.ts), so that they never queue in the pool ahead of a key lookup.
 */
export interface PoolLending {
  /** Connections idle or yet to open, less the callers already waiting for one (negative when they outnumber them). */
  readonly free: () => number
  /** Calls `listener` each time a connection goes back to the pool. */
  readonly onRelease: (listener: () => void) => void
}

/**
 * Runs a compiled query outside Kysely's executor, where that cannot be told apart from going through
 * it (see prepared-kysely.ts), and returns its rows; `undefined` when it must go through Kysely.
 */
export type DirectExecutor = (compiled: CompiledQuery) => DirectResult | Promise<DirectResult> | undefined

/** The statements Kysely compiles from its builders, which a shortcut may run (never raw SQL such as DDL or BEGIN). */
export const compiledStatementKinds: ReadonlySet<string> = new Set([
  'SelectQueryNode',
  'InsertQueryNode',
  'UpdateQueryNode',
  'DeleteQueryNode',
])

/** What a shortcut answers, as the database's Kysely driver would: the rows, and a write's affected rows where the
 * driver reports them. */
export interface DirectResult {
  readonly rows: Row[]
  readonly numAffectedRows?: bigint
  readonly insertId?: bigint
}

/**
 * Runs `work` at once in a transaction of the connection's own (`BEGIN IMMEDIATE` … `COMMIT`; `ROLLBACK` when it
 * throws), each of its statements through `run`, at once: `undefined`, having run nothing, when it cannot now (a
 * transaction of Kysely's holds the connection, a stream iterates it, it is not open, the instance logs). SQLite's.
 */
export type SyncTransaction =
  <T>(work: (run: (compiled: CompiledQuery) => DirectResult) => T) => { value: T } | undefined

/** A database a connector opened: Kysely's dialect (its pool opens on first use) and its shortcut, if any. */
export interface OpenedDatabase {
  readonly dialect: Dialect
  readonly direct: DirectExecutor | undefined
  /** Its synchronous transactions, where it has them (SQLite). */
  readonly transact?: SyncTransaction | undefined
}

/**
 * A connection or pool that the user opened and handed to their own Kysely, adopted by withPreparedStatements
 * (db.ts): the shortcut that runs compiled queries on it, and `viaKysely`, called for each compiled query
 * that goes through Kysely instead (while the user's Kysely logs), so it can still be prepared there.
 */
export interface AdoptedDatabase {
  readonly direct: DirectExecutor
  readonly viaKysely: (compiled: CompiledQuery) => void
  /** Its synchronous transactions, where it has them (SQLite): as {@link OpenedDatabase}'s. */
  readonly transact?: SyncTransaction | undefined
}

/**
 * Opens one kind of database from a URL: part of the dialect seam, one implementation per database.
 *
 * @example
 * ```ts
 * const { dialect } = sqliteConnector.connect('sqlite::memory:', settings)
 * const db = new Kysely<DB>({ dialect })
 * ```
 */
export interface DatabaseConnector {
  /** How its URLs begin, lower-case: `['postgres://', 'postgresql://']`. The scheme is the part before the colon. */
  readonly urls: readonly string[]
  /** Returns at once: the connection or pool opens when Kysely first asks for it. */
  connect(url: string, settings: ConnectionSettings): OpenedDatabase
  /**
   * Adopts the connection or pool a user opened for their own Kysely (a better-sqlite3 `Database`, a pg
   * `Pool`): `undefined` when this database has no shortcut. Throws InvalidOption for a handle of another kind.
   */
  adopt(handle: unknown): AdoptedDatabase | undefined
  /**
   * Lifts heavy statements that the database's statistics bound to few rows out of the bulkhead
   * (execution/row-bound.ts), given how to run catalog queries; none: every heavy statement waits in it.
   */
  readonly rowBounds?: (catalog: CatalogQuery) => RowBounds
}

/**
 * Milliseconds after which the client gives up on an answer and destroys the connection: a margin above
 * `statementTimeout`, by which the server has answered a statement it stopped itself. Only a connection
 * that went half-open (a failover, a partition: no reset, no data) gets there; 0 when there is no
 * statement timeout to be above. The margin, max(1 s, a tenth of the timeout), stays under the issue's
 * bound of max(1 s, statementTimeout).
 */
export function readTimeout (statementTimeout: number): number {
  return statementTimeout === 0 ? 0 : statementTimeout + Math.max(1000, Math.ceil(statementTimeout / 10))
}

/** Milliseconds of idleness before TCP keepalive probes a pooled connection, so a dead idle one is found. */
export const keepAliveDelay = 10_000

/** Hides the password of a URL in error messages. */
export function redact (url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@')
}
