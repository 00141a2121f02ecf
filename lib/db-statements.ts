import type { CompiledQuery, KyselyConfig, LogEvent, SqliteDatabase, SqliteStatement } from 'kysely'

// Statements prepared once per connection, for the databases that createDatabase opens:
// - SQLite: better-sqlite3 statements are cached by SQL text, and a read compiled at registration runs
//   straight on the connection, skipping Kysely's executor (its connection mutex and promise chain
//   cost as much as the read itself), whenever that cannot be told apart from going through Kysely.
// - PostgreSQL: SQL compiled at registration is sent as a named statement, so that each connection
//   parses and plans it once and then only binds and executes it.

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

const sqliteHandles = new WeakMap<object, SqliteHandle>()

/** A handle for a SQLite connection that a Kysely instance will open; `log` is the instance's. */
export function sqliteHandle (log: KyselyConfig['log']): SqliteHandle {
  return { database: undefined, inTransaction: () => false, prepare: () => { throw new Error('SQLite is not open') }, log }
}

/** Makes the handle's direct reads available on `db` (the Kysely instance the handle belongs to). */
export function registerSqlite (db: object, handle: SqliteHandle): void {
  sqliteHandles.set(db, handle)
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
 * Runs a read compiled at registration straight on a SQLite connection opened by createDatabase, and
 * returns its rows; `undefined` when the caller must go through Kysely instead: another instance (a
 * transaction, a plugin), a connection not open yet, a transaction in progress (Kysely holds the only
 * connection until it ends; reading now would see its uncommitted rows), or an array-form `log`. A
 * function `log` gets the same events Kysely would send. better-sqlite3 runs reads beside an open
 * iterator (Kysely's `stream()`), unless it iterates the very same statement.
 */
export function readDirect (db: object, compiled: CompiledQuery, parameters: readonly unknown[]): Row[] | Promise<Row[]> | undefined {
  const handle = sqliteHandles.get(db)
  if (handle === undefined || handle.database === undefined || handle.inTransaction()) return undefined
  const { log } = handle
  const statement = handle.prepare(compiled.sql) as SqliteStatement & { readonly busy?: boolean }
  // A statement is busy while a stream iterates it; Kysely would make this read wait for the stream.
  if (!statement.reader || statement.busy === true) return undefined
  if (log === undefined) return statement.all(parameters) as Row[]
  if (typeof log !== 'function') return undefined
  const query: CompiledQuery = { ...compiled, parameters }
  const start = performance.now()
  let rows: Row[]
  try {
    rows = statement.all(parameters) as Row[]
  } catch (error) {
    void log({ level: 'error', error, query, queryDurationMillis: performance.now() - start })
    throw error
  }
  const logged = log({ level: 'query', isStream: false, query, queryDurationMillis: performance.now() - start } satisfies LogEvent)
  return logged instanceof Promise ? logged.then(() => rows) : rows
}

// ---- PostgreSQL ----------------------------------------------------------------------------------

/** How many SQL texts get a name; past it, statements run unnamed (parsed each time) as before. */
const maxNames = 2048
const statementNames = new Map<string, string>()

/**
 * Marks SQL compiled at registration for preparation: on connections of createDatabase's PostgreSQL pools
 * it is sent as a named statement. Names follow the text, so every connection and instance agrees on them.
 */
export function nameStatement (sql: string): void {
  if (!statementNames.has(sql) && statementNames.size < maxNames) statementNames.set(sql, `fastify_viewsets_${statementNames.size + 1}`)
}

/** The subset of a pg `Client` that named statements need. */
export interface PgClient {
  query: (...args: never[]) => unknown
}

/** Makes a pg client send the SQL marked by {@link nameStatement} as named (prepared) statements. */
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
