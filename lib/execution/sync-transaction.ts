import { Kysely } from 'kysely'
import type { CompiledQuery, ConnectionProvider, QueryResult } from 'kysely'
import type { DirectResult } from '../dialect/shared/connection.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { Eventually } from './eventually.js'
import {
  executeNow, rowsOf, transactionsOfPrepared, transactNow, wrappedDialect, wrappedDriver,
} from './prepared-kysely.js'
import { RequestTransactionDatabase } from './request-transaction.js'

// A write that must be all or none yet runs nothing asynchronous (no hook of the user's inside it) runs as one
// synchronous transaction on SQLite's one connection: BEGIN, its statements, COMMIT with no await between them, so
// that nothing else runs on the connection meanwhile, and none of the promises of Kysely's transaction is made.

/** A statement built on the transaction but run through Kysely's executor: a fault of the code, not of a request. */
const refused: ConnectionProvider = {
  provideConnection: async () => {
    throw new Error('a synchronous transaction runs its statements through runCompiled only')
  },
}

/**
 * The transaction a synchronous write runs on: a Kysely instance that builds and compiles as the database's does,
 * and runs the data layer's compiled statements (runCompiled) on the connection, at once, while its transaction is
 * open. One per database, reused: a transaction is open on one at a time (the work is synchronous).
 */
class SyncTransactionKysely extends Kysely<Record<string, Row>> {
  /** The open transaction's runner, `undefined` between transactions. */
  #run: ((compiled: CompiledQuery) => DirectResult) | undefined

  constructor (db: AnyDatabase) {
    const executor = db.getExecutor().withConnectionProvider(refused)
    super({ config: { dialect: wrappedDialect }, executor, dialect: wrappedDialect, driver: wrappedDriver })
  }

  override get isTransaction (): boolean { return true }

  /** Runs `work` with its statements through `run`. */
  within<T>(run: (compiled: CompiledQuery) => DirectResult, work: (trx: AnyDatabase) => T): T {
    this.#run = run
    try {
      return work(this)
    } finally {
      this.#run = undefined
    }
  }

  [executeNow]<R>(compiled: CompiledQuery<R>): Eventually<QueryResult<R>> {
    if (this.#run === undefined) throw new Error('the synchronous transaction has ended')
    return rowsOf<R>(this.#run(compiled))
  }
}

const transactions = new WeakMap<AnyDatabase, SyncTransactionKysely>()

/** The synchronous transactions of `db`, when it has them now (SQLite's, outside a request transaction). */
function transactionsOf (db: AnyDatabase) {
  return db instanceof RequestTransactionDatabase ? db[transactNow] : transactionsOfPrepared(db)
}

/**
 * Whether {@link runSynchronously} may run a transaction of `db`: false where it would surely decline (not SQLite, or
 * inside a request transaction). It may still decline at the time (a transaction of Kysely's, an array `log`).
 *
 * @example
 * ```ts
 * if (transactsAtOnce(db)) prepareEverythingThatAwaits()
 * ```
 */
export function transactsAtOnce (db: AnyDatabase): boolean {
  return transactionsOf(db) !== undefined
}

/**
 * Runs `work` at once in a transaction of `db` (SQLite's, opened by createDatabase or adopted by
 * withPreparedStatements), its statements run through runCompiled on it answering at once; commits when it returns,
 * rolls back when it throws. `undefined`, having run nothing, where `db` has no such transaction or cannot open one
 * now (see SyncTransaction): take Kysely's then.
 * `work` must not answer a promise (it would outlive the transaction): that throws, and rolls back.
 *
 * @example
 * ```ts
 * const done = runSynchronously(db, (trx) => andThen(read(trx), (row) => write(trx, row)))
 * const row = done === undefined ? await db.transaction().execute(async (trx) => ...) : done.value
 * ```
 */
export function runSynchronously<T> (
  db: AnyDatabase,
  work: (trx: AnyDatabase) => Eventually<T>
): { value: T } | undefined {
  const transact = transactionsOf(db)
  if (transact === undefined) return undefined
  let trx = transactions.get(db)
  if (trx === undefined) transactions.set(db, trx = new SyncTransactionKysely(db))
  const on = trx
  return transact((run) => on.within(run, (opened) => {
    const value = work(opened)
    if (value instanceof Promise) {
      value.catch(() => {}) // its fault is this one's
      throw new Error('a synchronous transaction answered a promise')
    }
    return value
  }))
}
