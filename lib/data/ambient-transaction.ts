import { AsyncLocalStorage } from 'node:async_hooks'
import type { AnyDatabase } from '../sql.js'
import { underlyingDatabase } from '../execution/request-transaction.js'

// A nested write (mount/writable-relations.ts) runs the parent's write and each child's through their viewsets' own
// default handlers, which know nothing of one another: while it runs, the handlers of every viewset over its
// database find its transaction here and write in it, so that the parent and its children commit or roll back as one.

interface OpenTransaction {
  /** The database the transaction was opened on: handlers over another one are not in it. */
  readonly base: AnyDatabase
  readonly trx: AnyDatabase
}

const open = new AsyncLocalStorage<OpenTransaction>()

/**
 * The database a handler writes to: the transaction of the nested write it runs in, when that one was opened on
 * `db`; else `db` itself.
 *
 * @example
 * ```ts
 * await resource.insert(ambientDatabase(context.db), values)
 * ```
 */
export function ambientDatabase (db: AnyDatabase): AnyDatabase {
  const current = open.getStore()
  return current !== undefined && current.base === underlyingDatabase(db) ? current.trx : db
}

/**
 * Runs `work` in one transaction of `db` that every handler writing to `db` joins (as {@link ambientDatabase} finds
 * it), now or after any await; inside such a transaction already, in that one.
 *
 * @example
 * ```ts
 * const row = await inAmbientTransaction(db, async (trx) => await handlers.createElement(request, reply, token))
 * ```
 */
export async function inAmbientTransaction<T> (db: AnyDatabase, work: (trx: AnyDatabase) => Promise<T>): Promise<T> {
  const current = open.getStore()
  // Every viewset wraps the user's database in a request-transaction database of its own: the one under it is the key.
  const base = underlyingDatabase(db)
  if (current !== undefined && current.base === base) return await work(current.trx)
  return await db.transaction().execute(async (trx) => await open.run({ base, trx }, async () => await work(trx)))
}
