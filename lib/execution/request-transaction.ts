import { AsyncLocalStorage } from 'node:async_hooks'
import { CompiledQuery, Kysely } from 'kysely'
import type {
  Compilable, ConnectionProvider, DatabaseConnection, DatabaseIntrospector, Dialect, Driver, QueryResult,
  TransactionBuilder, TransactionSettings,
} from 'kysely'
import type { Eventually } from './eventually.js'
import { executeNow, runCompiled, transactionsOfPrepared, transactNow } from './prepared-kysely.js'
import type { SyncTransaction } from '../dialect/shared/connection.js'
import type { ExecuteOptions } from './prepared-kysely.js'

// One transaction per request, on one connection, for every statement the request runs through a viewset's
// database (`rowLevelSecurity`, http/row-level-security.ts; the atomic batch, http/batch-plugin.ts): the settings
// that make PostgreSQL enforce its policies are transaction-local, and a batch's operations commit or roll back
// together, so a statement that ran beside the transaction would escape it. Every viewset's database hands the
// request's connection to every query of the request, found through an AsyncLocalStorage (which follows awaits,
// timers and callbacks), and turns a transaction opened inside it into a savepoint; outside any request
// transaction it is the database it wraps (its shortcut and its own transactions included).

/** A request's open transaction: its connection, and the savepoints opened in it one after another. */
interface OpenTransaction {
  readonly base: object
  readonly connection: DatabaseConnection
  /** How many savepoints are open, the innermost last. */
  depth: number
  /** Settled when the savepoint open now ends: nested transactions of one request run one after another. */
  turn: Promise<void>
  /** Ends the open savepoint's turn, one per open savepoint, innermost last. */
  readonly ends: Array<() => void>
  /** Set once it committed or rolled back: its connection may already serve someone else. */
  ended: boolean
}

const current = new AsyncLocalStorage<OpenTransaction>()

/**
 * What a request transaction reads of the database it wraps: its executor (connections, compiler, adapter) and
 * how it closes. Whatever its tables.
 *
 * @example
 * ```ts
 * const base: WrappedDatabase = createDatabase<DB>(url)
 * ```
 */
export type WrappedDatabase = Pick<Kysely<unknown>, 'getExecutor' | 'destroy' | 'introspection'>

/** The request's transaction when it is on `base`'s connections. */
function openOn (base: object): OpenTransaction | undefined {
  const open = current.getStore()
  return open?.base === base ? open : undefined
}

async function run (connection: DatabaseConnection, text: string): Promise<void> {
  await connection.executeQuery(CompiledQuery.raw(text))
}

/** `begin`, with the isolation level and access mode a `transaction()` asked for. */
function beginOf ({ isolationLevel, accessMode }: TransactionSettings): string {
  const modes = [
    ...(isolationLevel === undefined ? [] : [`isolation level ${isolationLevel}`]),
    ...(accessMode === undefined ? [] : [accessMode]),
  ]
  return modes.length === 0 ? 'begin' : `start transaction ${modes.join(', ')}`
}

/** Queries of a request in a transaction run on its connection; any other on a connection of `base`. */
class RequestConnections implements ConnectionProvider {
  readonly #base: WrappedDatabase

  constructor (base: WrappedDatabase) {
    this.#base = base
  }

  async provideConnection<T>(consumer: (connection: DatabaseConnection) => Promise<T>): Promise<T> {
    const open = openOn(this.#base)
    if (open?.ended === true) throw new Error('fastify-viewsets: the request\'s transaction has ended')
    if (open !== undefined) return await consumer(open.connection)
    return await this.#base.getExecutor().provideConnection(consumer)
  }
}

/**
 * The transactions of the wrapping database: on a request's connection a savepoint (PostgreSQL does not nest
 * `begin`), elsewhere a transaction as the wrapped database's driver would write it. Connections come from
 * {@link RequestConnections}, never from this driver.
 */
class RequestDriver implements Driver {
  readonly #base: WrappedDatabase

  constructor (base: WrappedDatabase) {
    this.#base = base
  }

  async init (): Promise<void> {}

  async acquireConnection (): Promise<DatabaseConnection> {
    throw new Error('fastify-viewsets: connections come from the request or the wrapped database')
  }

  async releaseConnection (): Promise<void> {}

  async beginTransaction (connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const open = openOn(this.#base)
    if (open?.connection !== connection) return await run(connection, beginOf(settings))
    const previous = open.turn
    let end = () => {}
    open.turn = new Promise((resolve) => { end = resolve })
    await previous
    open.ends.push(end)
    open.depth++
    await run(connection, `savepoint fastify_viewsets_${open.depth}`)
  }

  async commitTransaction (connection: DatabaseConnection): Promise<void> {
    await this.#end(connection, 'commit', 'release savepoint')
  }

  async rollbackTransaction (connection: DatabaseConnection): Promise<void> {
    await this.#end(connection, 'rollback', 'rollback to savepoint')
  }

  async #end (connection: DatabaseConnection, whole: string, savepoint: string): Promise<void> {
    const open = openOn(this.#base)
    if (open?.connection !== connection || open.depth === 0) return await run(connection, whole)
    try {
      await run(connection, `${savepoint} fastify_viewsets_${open.depth}`)
    } finally {
      open.depth--
      open.ends.pop()?.()
    }
  }

  async destroy (): Promise<void> {
    await this.#base.destroy()
  }
}

function notHere (): never {
  throw new Error('fastify-viewsets: a request-transaction database compiles with the database it wraps')
}

/**
 * A database whose queries, while a request's transaction is open on it ({@link RequestTransaction}), run in
 * that transaction; elsewhere (startup, a script, another request) on the database it wraps, as they would.
 * Compiled SQL, plugins and the adapter are the wrapped database's; `db.transaction()` inside a request is a
 * savepoint of the request's transaction.
 *
 * @example
 * ```ts
 * const db = new RequestTransactionDatabase(createDatabase<DB>(url))
 * await RequestTransaction.open(db.base, settings).then((trx) => trx.run(() => db.selectFrom('items').execute()))
 * ```
 */
export class RequestTransactionDatabase<DB> extends Kysely<DB> {
  /** The database wrapped: whose connections the requests' transactions hold. */
  readonly base: Kysely<DB>

  constructor (base: Kysely<DB>) {
    const executor = base.getExecutor().withConnectionProvider(new RequestConnections(base))
    const driver = new RequestDriver(base)
    const dialect: Dialect = {
      createDriver: () => driver,
      createQueryCompiler: notHere,
      createAdapter: () => executor.adapter,
      createIntrospector: (): DatabaseIntrospector => base.introspection,
    }
    super({ config: { dialect }, executor, driver, dialect })
    this.base = base
  }

  /** Outside a request transaction, the wrapped database's own (its driver writes `begin` as its database reads it). */
  override transaction (): TransactionBuilder<DB> {
    return openOn(this.base) === undefined ? this.base.transaction() : super.transaction()
  }

  /**
   * Outside a request transaction, the wrapped database's `executeQuery`: its shortcut and its bulkhead of heavy
   * statements, which Kysely's executor (the connection provider) would pass by, as relation batches once did.
   */
  override executeQuery<R>(query: CompiledQuery<R> | Compilable<R>, options?: ExecuteOptions): Promise<QueryResult<R>> {
    return openOn(this.base) === undefined ? this.base.executeQuery(query, options) : super.executeQuery(query, options)
  }

  /** Outside a request transaction, the wrapped database's synchronous transactions (SQLite's); none inside one. */
  get [transactNow] (): SyncTransaction | undefined {
    return openOn(this.base) === undefined ? transactionsOfPrepared(this.base) : undefined
  }

  /** The data layer's compiled statements: in the request's transaction, else through the wrapped one's shortcut. */
  [executeNow]<R>(compiled: CompiledQuery<R>): Eventually<QueryResult<R>> {
    return openOn(this.base) === undefined ? runCompiled(this.base, compiled) : this.executeQuery(compiled)
  }
}

/**
 * The database a viewset is registered under: the wrapped one for a {@link RequestTransactionDatabase}, so that
 * viewsets over one database find each other's rules whichever of them runs requests in transactions.
 *
 * @example
 * ```ts
 * registerViewset(fastify, { table, db: underlyingDatabase(db), prefix, viewset, rule })
 * ```
 */
export function underlyingDatabase<DB> (db: Kysely<DB>): Kysely<DB> {
  return db instanceof RequestTransactionDatabase ? db.base : db
}

/**
 * A request's transaction, open on one connection of `base` from {@link open} until {@link end}: the statements
 * `work` runs through a {@link RequestTransactionDatabase} over `base` (at once or after any await) run in it.
 *
 * @example
 * ```ts
 * const trx = await RequestTransaction.open(db.base, sql`select set_config('role', ${role}, true)`.compile(db))
 * try { await trx.run(work) } finally { await trx.end(false) }
 * ```
 */
export class RequestTransaction {
  readonly #open: OpenTransaction
  /** Gives the connection back to the pool. */
  readonly #release: () => void
  /** Settled once the connection is back. */
  readonly #held: Promise<void>

  private constructor (open: OpenTransaction, release: () => void, held: Promise<void>) {
    this.#open = open
    this.#release = release
    this.#held = held
  }

  /** Takes a connection of `base` (waiting as any query would), begins a transaction and runs `settings` in it. */
  static async open (base: WrappedDatabase, settings?: CompiledQuery): Promise<RequestTransaction> {
    let release = () => {}
    const released = new Promise<void>((resolve) => { release = resolve })
    let held: Promise<void> = Promise.resolve()
    const connection = await new Promise<DatabaseConnection>((resolve, reject) => {
      held = base.getExecutor().provideConnection(async (taken) => {
        resolve(taken)
        await released
      }).catch(reject)
    })
    const trx = new RequestTransaction(
      { base, connection, depth: 0, turn: Promise.resolve(), ends: [], ended: false }, release, held
    )
    try {
      await run(connection, 'begin')
    } catch (error) {
      await trx.#giveBack()
      throw error
    }
    try {
      if (settings !== undefined) await connection.executeQuery(settings)
    } catch (error) {
      await trx.end(false)
      throw error
    }
    return trx
  }

  /** Whether a request transaction is open on `base` where this is called (a batch's operation runs in one). */
  static isOpen (base: object): boolean {
    return openOn(base) !== undefined
  }

  /** Runs `work` so that its statements, now or after any await, run in this transaction. */
  run<T>(work: () => T): T {
    return current.run(this.#open, work)
  }

  /** Commits (`commit`) or rolls back, then gives the connection back, whether or not that succeeded. */
  async end (commit: boolean): Promise<void> {
    this.#open.ended = true
    try {
      await run(this.#open.connection, commit ? 'commit' : 'rollback')
    } finally {
      await this.#giveBack()
    }
  }

  async #giveBack (): Promise<void> {
    this.#release()
    await this.#held
  }
}
