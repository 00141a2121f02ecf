import { AsyncLocalStorage } from 'node:async_hooks'
import { Kysely } from 'kysely'
import type { AnyDatabase } from '../sql.js'
import { underlyingDatabase } from './request-transaction.js'

// The transaction of the write a `beforeWrite` runs in (issue 38 item 8), so that the helpers it calls
// (`this.query()`, `this.findById()` …) read through it rather than through the pool: consistent with the write, and
// on SQLite, whose one connection the transaction holds, without waiting for that connection forever. Carried by an
// AsyncLocalStorage, as the served request is (served-request.ts), set only while a `beforeWrite` runs.

/** The open write: the database it was opened on, and its transaction. */
interface OpenWrite {
  readonly db: object
  readonly trx: AnyDatabase
}

const open = new AsyncLocalStorage<OpenWrite>()

/**
 * Runs `work` (a `beforeWrite`) so that the helpers of a viewset over `db` that it calls, at once or after any await,
 * read and write through `trx`, the write's transaction on `db`.
 *
 * @example
 * ```ts
 * const values = await inWrite(db, trx, () => viewset.beforeWrite(sent, context, trx))
 * ```
 */
export function inWrite<T> (db: object, trx: AnyDatabase, work: () => T): T {
  // Every viewset wraps the user's database in a request-transaction database of its own: the one under it is the key.
  return db === trx ? work() : open.run({ db: baseOf(db), trx }, work)
}

/** The transaction of the write being prepared on `db`, or `undefined` outside one (or on another database). */
export function writeTransactionOn (db: object): AnyDatabase | undefined {
  const write = open.getStore()
  return write !== undefined && write.db === baseOf(db) ? write.trx : undefined
}

/** The database under a viewset's request-transaction wrapper (or `db` itself). */
function baseOf (db: object): object {
  return db instanceof Kysely ? underlyingDatabase(db) : db
}
