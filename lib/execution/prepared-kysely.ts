import { isCompilable, Kysely } from 'kysely'
import type {
  Compilable,
  CompiledQuery,
  ConnectionBuilder,
  ControlledTransactionBuilder,
  DatabaseIntrospector,
  Dialect,
  DrainOuterGeneric,
  Driver,
  KyselyConfig,
  KyselyPlugin,
  QueryExecutor,
  QueryResult,
  TransactionBuilder,
} from 'kysely'
import type { Eventually } from './eventually.js'
import type { Bulkhead } from './bulkhead.js'
import { costOf } from './cost-class.js'
import type { CatalogQuery, RowBounds } from './row-bound.js'
import type { AdoptedDatabase, DirectExecutor, DirectResult, SyncTransaction } from '../dialect/shared/connection.js'
import type { Row } from '../sql.js'

// The Kysely instances that give a database's compiled statements their shortcut: where a statement may answer
// synchronously (the contract in eventually.ts, 2).

/**
 * The second parameter of Kysely's `executeQuery`: a deprecated query id on Kysely 0.28, `{ signal }` on 0.29.
 * Given, the statement goes through Kysely, which alone knows what to do with it.
 */
export type ExecuteOptions = Parameters<Kysely<unknown>['executeQuery']>[1]

/** How the data layer runs its compiled statements on an instance with a shortcut: see {@link runCompiled}. */
export const executeNow = Symbol('fastify-viewsets.executeNow')

/** How execution/sync-transaction.ts reaches a database's synchronous transactions (SQLite's). */
export const transactNow = Symbol('fastify-viewsets.transactNow')

/** What a shortcut answered, as Kysely's executor would hand it on: through each plugin's `transformResult`. */
async function resultOf<R> (
  direct: DirectResult,
  compiled: CompiledQuery,
  plugins: readonly KyselyPlugin[]
): Promise<QueryResult<R>> {
  let result: QueryResult<Row> = direct
  for (const plugin of plugins) result = await plugin.transformResult({ result, queryId: compiled.queryId })
  return rowsOf<R>(result)
}

/**
 * A shortcut's result typed by the compiled query that asked for it: its rows are `R`, as the query's builder
 * typed them, which Kysely's own executor trusts too (its drivers answer untyped rows).
 *
 * @example
 * ```ts
 * const result = rowsOf<R>(direct(compiled))
 * ```
 */
export function rowsOf<R> (result: Eventually<QueryResult<Row>>): Eventually<QueryResult<R>> {
  return result as Eventually<QueryResult<R>> // the compiled query's row type, as Kysely's executor trusts it
}

/**
 * Offers a compiled query to a shortcut and answers with its result, settled when the shortcut answered at
 * once (a SQLite statement), or with `otherwise(compiled)` when the shortcut declines. May throw. Not async:
 * each async frame costs promises, and on PostgreSQL the cancel-on-disconnect hooks run for each
 * (dialect/postgres/postgres-cancel.ts).
 */
function viaShortcut<R> (
  direct: DirectExecutor,
  compiled: CompiledQuery<R>,
  otherwise: (compiled: CompiledQuery<R>) => Promise<QueryResult<R>>
): Eventually<QueryResult<R>> {
  const result = direct(compiled)
  return result === undefined ? otherwise(compiled) : rowsOf<R>(result)
}

/**
 * Runs a statement the statistics lifted out of the bulkhead, telling them how long it took (from its call, a wait
 * for a pool connection included): a run slower than they promised sends it back to the bulkhead.
 */
function timed<R> (
  bounds: RowBounds,
  compiled: CompiledQuery<R>,
  now: (compiled: CompiledQuery<R>) => Eventually<QueryResult<R>>
): Eventually<QueryResult<R>> {
  const start = performance.now()
  const result = now(compiled)
  if (!(result instanceof Promise)) return result
  return result.then((answer) => {
    bounds.ran(compiled, start, performance.now())
    return answer
  })
}

/** Kysely's `executeQuery` over {@link viaShortcut}: always a promise, and a throw becomes a rejection. */
function promised<R> (
  query: CompiledQuery<R> | Compilable<R>,
  execute: (compiled: CompiledQuery<R>) => Eventually<QueryResult<R>>
): Promise<QueryResult<R>> {
  try {
    const result = execute(isCompilable(query) ? query.compile() : query)
    return result instanceof Promise ? result : Promise.resolve(result)
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * Runs a statement the data layer compiled: on an instance createDatabase opened or withPreparedStatements
 * adopted, through its shortcut, whose SQLite statements answer at once rather than as a promise (see
 * eventually.ts); on any other instance (a transaction, a plain Kysely) with `executeQuery`. May throw.
 *
 * @example
 * ```ts
 * const rows = andThen(runCompiled(db, withParameters(byId, [7])), resultRows)
 * ```
 */
export function runCompiled<DB, R> (db: Kysely<DB>, compiled: CompiledQuery<R>): Eventually<QueryResult<R>> {
  return hasShortcut(db) ? db[executeNow](compiled) : db.executeQuery(compiled)
}

/**
 * An instance that runs compiled statements its own way: createDatabase's, withPreparedStatements', and the database a
 * request transaction wraps (request-transaction.ts), which hands them to the one it wraps outside any transaction.
 */
interface WithShortcut {
  [executeNow]<R>(compiled: CompiledQuery<R>): Eventually<QueryResult<R>>
}

function hasShortcut<DB> (db: Kysely<DB>): db is Kysely<DB> & WithShortcut {
  return executeNow in db
}

/**
 * The Kysely instance createDatabase returns. Only `db.executeQuery(compiled)`, which runs SQL compiled
 * ahead of time, behaves differently: it first offers the query to the database's shortcut (on SQLite a
 * SELECT may run straight on the connection, on PostgreSQL straight on the pool, as a named statement).
 * Queries built and executed with the builder, and transactions (other instances), go through Kysely as usual.
 *
 * @example
 * ```ts
 * const { dialect, direct } = sqliteConnector.connect('sqlite::memory:', settings)
 * const db = new PreparedKysely<DB>({ dialect }, direct)
 * ```
 */
export class PreparedKysely<DB> extends Kysely<DB> {
  readonly #direct: DirectExecutor
  /** Its synchronous transactions (SQLite's), if it has them. */
  readonly [transactNow]: SyncTransaction | undefined
  // Made once, not per statement: the shortcut, else Kysely's executor.
  readonly #now: <R>(compiled: CompiledQuery<R>) => Eventually<QueryResult<R>>

  /**
   * `bulkhead`: where heavy statements (cost-class.ts) wait for one of the connections they may hold; `rowBounds`
   * makes what lifts those the database's statistics bound to cheap (row-bound.ts), given how to run catalog queries;
   * `transact`, its synchronous transactions.
   */
  constructor (
    config: KyselyConfig,
    direct: DirectExecutor,
    bulkhead?: Bulkhead,
    rowBounds?: (catalog: CatalogQuery) => RowBounds,
    transact?: SyncTransaction
  ) {
    super(config)
    this.#direct = direct
    this[transactNow] = transact
    const viaKysely = <R>(compiled: CompiledQuery<R>): Promise<QueryResult<R>> => super.executeQuery(compiled)
    const now = <R>(compiled: CompiledQuery<R>): Eventually<QueryResult<R>> => viaShortcut(direct, compiled, viaKysely)
    if (bulkhead === undefined) {
      this.#now = now
      return
    }
    const bounds = rowBounds?.(viaKysely)
    this.#now = (compiled) => {
      if (costOf(compiled.query) !== 'heavy') return now(compiled)
      if (bounds?.bounded(compiled) === true) return timed(bounds, compiled, now)
      return bulkhead.run(async () => await now(compiled))
    }
  }

  override executeQuery<R>(query: CompiledQuery<R> | Compilable<R>, options?: ExecuteOptions): Promise<QueryResult<R>> {
    return options === undefined ? promised(query, this.#now) : super.executeQuery(query, options)
  }

  /** {@link runCompiled}: the shortcut, else Kysely's executor. */
  [executeNow]<R>(compiled: CompiledQuery<R>): Eventually<QueryResult<R>> {
    return this.#now(compiled)
  }
}

function delegated (): never {
  throw new Error('fastify-viewsets: withPreparedStatements hands this to the Kysely instance it wraps')
}

// Kysely's constructor takes a dialect and a driver; AdoptedKysely hands every method that reads them
// (transactions, connections, introspection, destroy) to the instance it wraps, so these are never called.
export const wrappedDialect: Dialect = {
  createDriver: delegated,
  createQueryCompiler: delegated,
  createAdapter: delegated,
  createIntrospector: delegated,
}
export const wrappedDriver: Driver = {
  init: delegated,
  acquireConnection: delegated,
  beginTransaction: delegated,
  commitTransaction: delegated,
  rollbackTransaction: delegated,
  releaseConnection: delegated,
  destroy: delegated,
}

/**
 * Whether a Kysely instance logs: Kysely wraps the `executeQuery` of each connection it hands out when it
 * has a `log`, and not otherwise. Its log function is private, so the shortcut cannot call it.
 */
async function logs (executor: QueryExecutor): Promise<boolean> {
  return await executor.provideConnection(async (connection) => Object.hasOwn(connection, 'executeQuery'))
}

/**
 * A user's own Kysely instance, with the shortcut of a database createDatabase opens (withPreparedStatements
 * in db.ts). It builds and compiles queries with the wrapped instance's executor (its plugins included) and
 * hands transactions, connections, introspection and `destroy` to it. `db.executeQuery(compiled)` takes the
 * shortcut, the rows going through the plugins' `transformResult`, unless the wrapped instance logs: its log
 * function cannot be reached, so then every statement goes through it and is logged there (on PostgreSQL
 * still as a named statement).
 *
 * @example
 * ```ts
 * const kysely = new Kysely<DB>({ dialect: new SqliteDialect({ database }) })
 * const db = new AdoptedKysely(kysely, sqliteConnector.adopt(database))
 * ```
 */
export class AdoptedKysely<DB> extends Kysely<DB> {
  readonly #db: Kysely<DB>
  readonly #adopted: AdoptedDatabase
  readonly #plugins: readonly KyselyPlugin[]
  /** Whether the wrapped instance logs, once known. */
  #logs: boolean | undefined
  // Made once, not per statement, as PreparedKysely's: once the wrapped instance is known not to log, a shortcut
  // without plugins answers with no async frame.
  readonly #now: <R>(compiled: CompiledQuery<R>) => Eventually<QueryResult<R>>

  constructor (db: Kysely<DB>, adopted: AdoptedDatabase) {
    const executor = db.getExecutor()
    super({ config: { dialect: wrappedDialect }, executor, dialect: wrappedDialect, driver: wrappedDriver })
    this.#db = db
    this.#adopted = adopted
    this.#plugins = executor.plugins
    const viaKysely = <R>(compiled: CompiledQuery<R>): Promise<QueryResult<R>> => db.executeQuery(compiled)
    const bare = executor.plugins.length === 0 // the plugins are fixed with the instance
    this.#now = (compiled) =>
      bare && this.#logs === false ? viaShortcut(adopted.direct, compiled, viaKysely) : this.#executeQuery(compiled)
  }

  override executeQuery<R>(query: CompiledQuery<R> | Compilable<R>, options?: ExecuteOptions): Promise<QueryResult<R>> {
    return options === undefined ? promised(query, this.#now) : this.#db.executeQuery(query, options)
  }

  /**
   * The adopted connection's synchronous transactions (SQLite's), once the wrapped instance is known not to log and
   * while it has no plugins: their statements would pass by its log and its plugins' `transformResult`.
   */
  get [transactNow] (): SyncTransaction | undefined {
    return this.#logs === false && this.#plugins.length === 0 ? this.#adopted.transact : undefined
  }

  /** {@link runCompiled}. */
  [executeNow]<R>(compiled: CompiledQuery<R>): Eventually<QueryResult<R>> {
    return this.#now(compiled)
  }

  async #executeQuery<R>(compiled: CompiledQuery<R>): Promise<QueryResult<R>> {
    this.#logs ??= await logs(this.getExecutor())
    if (this.#logs) {
      this.#adopted.viaKysely(compiled)
      return await this.#db.executeQuery(compiled)
    }
    const result = this.#adopted.direct(compiled)
    if (result === undefined) return await this.#db.executeQuery(compiled)
    return await resultOf<R>(await result, compiled, this.#plugins)
  }

  override get introspection (): DatabaseIntrospector {
    return this.#db.introspection
  }

  override transaction (): TransactionBuilder<DB> {
    return this.#db.transaction()
  }

  override startTransaction (): ControlledTransactionBuilder<DB> {
    return this.#db.startTransaction()
  }

  override connection (): ConnectionBuilder<DB> {
    return this.#db.connection()
  }

  override withPlugin (plugin: KyselyPlugin): Kysely<DB> {
    return new AdoptedKysely(this.#db.withPlugin(plugin), this.#adopted)
  }

  override withoutPlugins (): Kysely<DB> {
    return new AdoptedKysely(this.#db.withoutPlugins(), this.#adopted)
  }

  override withSchema (schema: string): Kysely<DB> {
    return new AdoptedKysely(this.#db.withSchema(schema), this.#adopted)
  }

  override withTables<T extends Record<string, Record<string, unknown>>>(): Kysely<DrainOuterGeneric<DB & T>> {
    return new AdoptedKysely(this.#db.withTables<T>(), this.#adopted)
  }

  override async destroy (): Promise<void> {
    await this.#db.destroy()
  }
}

/**
 * The synchronous transactions (SQLite's) of a database createDatabase opened or withPreparedStatements wrapped,
 * where it has them now: execution/sync-transaction.ts runs them.
 *
 * @example
 * ```ts
 * const transact = transactionsOfPrepared(db) // undefined: take Kysely's transaction
 * ```
 */
export function transactionsOfPrepared (db: object): SyncTransaction | undefined {
  return db instanceof PreparedKysely || db instanceof AdoptedKysely ? db[transactNow] : undefined
}
