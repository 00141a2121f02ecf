import { isCompilable, Kysely } from 'kysely'
import type { Compilable, CompiledQuery, KyselyConfig, LogEvent, QueryId, QueryResult, SqliteDatabase, SqliteStatement } from 'kysely'

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
 * recently prepared first out): Kysely's driver would prepare every statement again on each query.
 */
export function attachSqlite (handle: SqliteHandle, database: BetterSqliteDatabase, size = 256): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>()
  const prepare = (sql: string): SqliteStatement => {
    let statement = statements.get(sql)
    if (statement === undefined) {
      statement = database.prepare(sql)
      if (statements.size >= size) statements.delete(statements.keys().next().value as string)
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

/** How many SQL texts get a name; past it, statements run unnamed (parsed each time) as before. */
const maxNames = 2048
const statementNames = new Map<string, string>()

/** Queries that may be prepared: the four statements, never raw SQL such as DDL. */
const preparable = new Set(['SelectQueryNode', 'InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode'])

/** Names the SQL of a compiled query; names follow the text, so every connection and instance agrees on them. */
function nameStatement (compiled: CompiledQuery): void {
  if (statementNames.size < maxNames && preparable.has(compiled.query.kind) && !statementNames.has(compiled.sql)) {
    statementNames.set(compiled.sql, `fastify_viewsets_${statementNames.size + 1}`)
  }
}

/** The part of a pg `Pool` that direct reads use. */
export interface PgPool {
  query: (config: { name?: string, text: string, values: unknown[] }) => Promise<{ rows: Row[] }>
  readonly ending: boolean
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
 * Runs a compiled SELECT on the pool of a PostgreSQL database opened by createDatabase, as a named statement
 * when they are on. Outside a transaction Kysely does the same (a pooled connection per query), with a few
 * more promises per query. `undefined` when it must go through Kysely: the pool not open yet or ended, or an
 * array-form `log`.
 */
function queryDirect (handle: PostgresHandle, compiled: CompiledQuery): Promise<Row[]> | undefined {
  const { pool, log } = handle
  if (pool === undefined || pool.ending || compiled.query.kind !== 'SelectQueryNode') return undefined
  if (log !== undefined && typeof log !== 'function') return undefined
  if (handle.named) nameStatement(compiled)
  const name = handle.named ? statementNames.get(compiled.sql) : undefined
  const config = { text: compiled.sql, values: compiled.parameters as unknown[], ...(name === undefined ? {} : { name }) }
  if (log === undefined) return pool.query(config).then((result) => result.rows)
  const start = performance.now()
  return pool.query(config).then(async (result) => {
    await log({ level: 'query', isStream: false, query: compiled, queryDurationMillis: performance.now() - start })
    return result.rows
  }, async (error: unknown) => {
    await Promise.resolve(log({ level: 'error', error, query: compiled, queryDurationMillis: performance.now() - start })).catch(() => {})
    throw error
  })
}

/** The subset of a pg `Client` that named statements need. */
export interface PgClient {
  query: (...args: never[]) => unknown
}

/** Makes a pg client send the SQL of compiled queries (see {@link PreparedKysely}) as named (prepared) statements. */
export function useNamedStatements (client: PgClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown
  client.query = ((text: unknown, values: unknown, ...rest: unknown[]) => {
    if (typeof text === 'string' && rest.length === 0 && Array.isArray(values)) {
      const name = statementNames.get(text)
      if (name !== undefined) return query({ name, text, values })
    }
    return rest.length === 0 ? query(text, values) : query(text, values, ...rest)
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
      if (this.#postgres.named) nameStatement(compiled)
    }
    return await (queryId === undefined ? super.executeQuery(compiled) : super.executeQuery(compiled, queryId))
  }
}
