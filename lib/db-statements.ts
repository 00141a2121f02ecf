import { isCompilable, Kysely } from 'kysely'
import type { Compilable, CompiledQuery, KyselyConfig, LogEvent, QueryId, QueryResult, SqliteDatabase, SqliteStatement } from 'kysely'
import { LruCache } from './lru-cache.js'

// Statements prepared once per connection, for the databases that createDatabase opens. The viewset
// compiles its SQL once (at registration, or once per query shape) and runs it with `db.executeQuery`:
// - SQLite: better-sqlite3 statements are cached by SQL text, and a compiled SELECT runs straight on the
//   connection, skipping Kysely's executor (its connection mutex and promise chain cost as much as a
//   short read), whenever that cannot be told apart from going through Kysely.
// - PostgreSQL: a compiled query is sent as a named statement, so that each connection parses and plans
//   it once and then only binds and executes it; a compiled SELECT goes straight to the pool.

type Row = Record<string, unknown>

/** The part of a better-sqlite3 `Database` used here. */
export interface BetterSqliteDatabase extends SqliteDatabase {
  readonly inTransaction: boolean
  prepare: (sql: string) => BetterSqliteStatement
}

/** The part of a better-sqlite3 `Statement` used here. */
export interface BetterSqliteStatement extends SqliteStatement {
  readonly busy: boolean
  columns: () => Array<{ name: string, type: string | null }>
  safeIntegers: (toggle: boolean) => unknown
}

/** An integer read with better-sqlite3's safe integers, as the other drivers give it: a number while exact, else its digits. */
function exactInteger (value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : String(value)
}

/**
 * better-sqlite3 reads every integer as a JavaScript number, so 2^53 + 1 comes back as 2^53. A statement
 * that reads columns declared with an integer type (INTEGER, BIGINT, INT8, ...) reads them as bigints
 * instead, then hands them on like mysql2's `supportBigNumbers`: a number up to 2^53 - 1 (what a
 * `Type.Integer` field serializes), the exact digits beyond (what a `Type.String` field serializes).
 * Other statements, and other columns, are untouched.
 */
function withExactIntegers (statement: BetterSqliteStatement): SqliteStatement {
  if (!statement.reader || !statement.columns().some((column) => column.type !== null && /int/i.test(column.type))) return statement
  statement.safeIntegers(true)
  // Safe integers apply to every integer the statement reads (a BOOLEAN's 0 and 1, an expression), so every cell is checked.
  const exact = (row: unknown): unknown => {
    if (typeof row !== 'object' || row === null) return row
    const cells = row as Row // better-sqlite3 rows are plain objects unless .raw() is on, which nothing here turns on
    for (const name in cells) {
      const value = cells[name]
      if (typeof value === 'bigint') cells[name] = exactInteger(value)
    }
    return row
  }
  const wrapped: SqliteStatement & { readonly busy: boolean } = {
    reader: true,
    get busy () { return statement.busy },
    all: (parameters) => statement.all(parameters).map(exact),
    run: (parameters) => statement.run(parameters),
    * iterate (parameters) {
      for (const row of statement.iterate(parameters)) yield exact(row)
    },
  }
  return wrapped
}

/** One SQLite connection opened by createDatabase. */
export interface SqliteHandle {
  /** Set when Kysely opens the connection, cleared when it closes it. */
  database: SqliteDatabase | undefined
  inTransaction: () => boolean
  prepare: (sql: string) => SqliteStatement
  readonly log: KyselyConfig['log']
}

/** A handle for a SQLite connection that a Kysely instance will open; `log` is the instance's. */
export function sqliteHandle (log: KyselyConfig['log']): SqliteHandle {
  return { database: undefined, inTransaction: () => false, prepare: () => { throw new Error('SQLite is not open') }, log }
}

/**
 * The connection as Kysely sees it, with its statements prepared once per SQL text (bounded, least
 * recently used first out): Kysely's driver would prepare every statement again on each query.
 */
export function attachSqlite (handle: SqliteHandle, database: BetterSqliteDatabase, size = 256): SqliteDatabase {
  const statements = new LruCache<string, SqliteStatement>(size)
  const prepare = (sql: string): SqliteStatement => {
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
  handle.inTransaction = () => database.inTransaction
  handle.database = connection
  return connection
}

/**
 * Runs a compiled SELECT straight on a SQLite connection opened by createDatabase and returns its rows;
 * `undefined` when it must go through Kysely instead: a connection not open yet, a transaction in
 * progress (Kysely holds the only connection until it ends; reading now would see its uncommitted rows),
 * a stream iterating this very statement, or an array-form `log`. A function `log` gets the events
 * Kysely would send. better-sqlite3 runs reads beside other open iterators, so other streams need no waiting.
 */
function readDirect (handle: SqliteHandle, compiled: CompiledQuery): Row[] | Promise<Row[]> | undefined {
  if (handle.database === undefined || compiled.query.kind !== 'SelectQueryNode' || handle.inTransaction()) return undefined
  const { log } = handle
  if (log !== undefined && typeof log !== 'function') return undefined
  const statement = handle.prepare(compiled.sql) as SqliteStatement & { readonly busy?: boolean }
  if (!statement.reader || statement.busy === true) return undefined
  if (log === undefined) return statement.all(compiled.parameters) as Row[]
  const start = performance.now()
  let rows: Row[]
  try {
    rows = statement.all(compiled.parameters) as Row[]
  } catch (error) {
    // The query's error is the one to report, whatever the logger does.
    void Promise.resolve().then(() => log({ level: 'error', error, query: compiled, queryDurationMillis: performance.now() - start })).catch(() => {})
    throw error
  }
  const logged = log({ level: 'query', isStream: false, query: compiled, queryDurationMillis: performance.now() - start } satisfies LogEvent)
  return logged instanceof Promise ? logged.then(() => rows) : rows
}

// ---- PostgreSQL ----------------------------------------------------------------------------------

/** Named (prepared) statements one PostgreSQL connection keeps; past it, the least recently used is deallocated. */
export const maxNamedStatements = 256

/** Queries that may be prepared: the four statements, never raw SQL such as DDL. */
const preparable = new Set(['SelectQueryNode', 'InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode'])

/**
 * SQL texts compiled by Kysely (never raw SQL), which connections may prepare. Bounded like every cache: a
 * text that falls out runs unnamed (parsed each time) until it is compiled again.
 */
const preparableTexts = new LruCache<string, true>(2048)

/** Records that the SQL of a compiled query may become a named statement. */
function markPreparable (compiled: CompiledQuery): void {
  if (preparable.has(compiled.query.kind) && !preparableTexts.has(compiled.sql)) preparableTexts.set(compiled.sql, true)
}

/** The part of a pg `Pool` that direct reads use. */
export interface PgPool {
  connect: () => Promise<{ query: (text: string, values: unknown[]) => Promise<{ rows: Row[] }>, release: () => void }>
  readonly ending: boolean
}

/**
 * Runs one query on a pooled client. Like `pool.query`, but awaited: the query starts in the caller's async
 * context (pool.query may start it from whichever request released the client), which the cancel on
 * client disconnect relies on (dialect/postgres-cancel.ts). The client goes back healthy after an error.
 */
async function pooledQuery (pool: PgPool, text: string, values: unknown[]): Promise<Row[]> {
  const client = await pool.connect()
  try {
    return (await client.query(text, values)).rows
  } finally {
    client.release()
  }
}

/** The pool of a PostgreSQL database opened by createDatabase. */
export interface PostgresHandle {
  /** Set when Kysely opens the pool. */
  pool: PgPool | undefined
  readonly named: boolean
  readonly log: KyselyConfig['log']
}

/** A handle for the pool that a Kysely instance will open; `log` is the instance's. */
export function postgresHandle (log: KyselyConfig['log'], named: boolean): PostgresHandle {
  return { pool: undefined, named, log }
}

/**
 * Runs a compiled SELECT on the pool of a PostgreSQL database opened by createDatabase (as a named statement
 * when they are on: see {@link useNamedStatements}). Outside a transaction Kysely does the same (a pooled
 * connection per query), with a few more promises per query. `undefined` when it must go through Kysely: the
 * pool not open yet or ended, or an array-form `log`.
 */
function queryDirect (handle: PostgresHandle, compiled: CompiledQuery): Promise<Row[]> | undefined {
  const { pool, log } = handle
  if (pool === undefined || pool.ending || compiled.query.kind !== 'SelectQueryNode') return undefined
  if (log !== undefined && typeof log !== 'function') return undefined
  if (handle.named) markPreparable(compiled)
  const values = compiled.parameters.slice()
  if (log === undefined) return pooledQuery(pool, compiled.sql, values)
  const start = performance.now()
  return pooledQuery(pool, compiled.sql, values).then(async (rows) => {
    await log({ level: 'query', isStream: false, query: compiled, queryDurationMillis: performance.now() - start })
    return rows
  }, async (error: unknown) => {
    await Promise.resolve(log({ level: 'error', error, query: compiled, queryDurationMillis: performance.now() - start })).catch(() => {})
    throw error
  })
}

/** The subset of a pg `Client` that named statements need; the rest is read with guards (see below). */
export interface PgClient {
  query: (...args: never[]) => unknown
}

/** pg's transaction status of a client: 'I' when idle outside a transaction (pg 8.16+; `undefined` before). */
function transactionStatus (client: object): unknown {
  return 'getTransactionStatus' in client && typeof client.getTransactionStatus === 'function' ? client.getTransactionStatus() as unknown : undefined
}

/** pg's own record of the statements a connection parsed, which it checks before sending a Parse. */
function parsedStatements (client: object): Record<string, unknown> | undefined {
  const connection = 'connection' in client ? client.connection : undefined
  if (typeof connection !== 'object' || connection === null || !('parsedStatements' in connection)) return undefined
  const parsed = connection.parsedStatements
  return typeof parsed === 'object' && parsed !== null ? parsed as Record<string, unknown> : undefined // a plain object of name → SQL in pg 8
}

/**
 * Makes a pg client send the SQL of compiled queries (see {@link PreparedKysely}) as named (prepared)
 * statements, at most {@link maxNamedStatements} per connection: a connection parses and plans each one
 * once, and a flood of distinct query shapes cannot grow its memory without bound. Evicted statements
 * are deallocated the next time the connection is outside a transaction (a failing DEALLOCATE must never
 * abort a caller's transaction). Names are never reused on a connection, so a late DEALLOCATE cannot
 * hit a newer statement.
 */
export function useNamedStatements (client: PgClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown
  let counter = 0
  let evicted: string[] = []
  const names = new LruCache<string, string>(maxNamedStatements, (name) => { evicted.push(name) })
  const deallocate = () => {
    const stale = evicted
    evicted = []
    const forget = () => {
      const parsed = parsedStatements(client)
      if (parsed !== undefined) for (const name of stale) delete parsed[name]
    }
    const done = query(stale.map((name) => `deallocate "${name}"`).join('; '))
    if (done instanceof Promise) done.then(forget, forget)
  }
  client.query = ((text: unknown, values: unknown, ...rest: unknown[]) => {
    if (typeof text === 'string' && Array.isArray(values) && rest.length <= 1) {
      let name = names.get(text)
      if (name === undefined && preparableTexts.get(text) === true) {
        name = `fastify_viewsets_${++counter}`
        names.set(text, name)
      }
      if (evicted.length > 0 && transactionStatus(client) === 'I') deallocate()
      if (name !== undefined) return query({ name, text, values }, ...rest)
    }
    return query(text, values, ...rest)
  }) as PgClient['query']
}

// ---- the Kysely instance ----------------------------------------------------------------------------

/**
 * The Kysely instance createDatabase returns. Only `db.executeQuery(compiled)`, which runs SQL compiled
 * ahead of time, behaves differently: on SQLite a SELECT may run straight on the connection, and on
 * PostgreSQL the SQL becomes a named statement. Queries built and executed with the builder, and
 * transactions (other instances), go through Kysely as usual.
 */
export class PreparedKysely<DB> extends Kysely<DB> {
  readonly #sqlite: SqliteHandle | undefined
  readonly #postgres: PostgresHandle | undefined

  constructor (config: KyselyConfig, prepared: { sqlite?: SqliteHandle, postgres?: PostgresHandle }) {
    super(config)
    this.#sqlite = prepared.sqlite
    this.#postgres = prepared.postgres
  }

  override async executeQuery<R> (query: CompiledQuery<R> | Compilable<R>, queryId?: QueryId): Promise<QueryResult<R>> {
    const compiled = isCompilable(query) ? query.compile() : query
    if (this.#sqlite !== undefined) {
      const rows = readDirect(this.#sqlite, compiled)
      if (rows !== undefined) return { rows: await rows as R[] }
    } else if (this.#postgres !== undefined) {
      const rows = queryDirect(this.#postgres, compiled)
      if (rows !== undefined) return { rows: await rows as R[] }
      if (this.#postgres.named) markPreparable(compiled)
    }
    return await (queryId === undefined ? super.executeQuery(compiled) : super.executeQuery(compiled, queryId))
  }
}
