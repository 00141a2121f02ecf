import type { Eventually } from '../execution/eventually.js'
import type { AnyDatabase } from '../sql.js'
import { underlyingDatabase } from '../execution/request-transaction.js'

// A nested write (mount/writable-relations.ts) runs the parent's write and each child's through their viewsets' own
// default handlers, which know nothing of one another: while it runs, the handlers of every viewset over its
// database find its transaction here, by the request they serve (the parent's, or a child's view of it), and write in
// it, so that the parent and its children commit or roll back as one. Kept by request, not in an AsyncLocalStorage:
// on Node 20 the first `run` of one turns on async hooks for every promise of the process, for good.

interface OpenTransaction {
  /** The database the transaction was opened on: handlers over another one are not in it. */
  readonly base: AnyDatabase
  readonly trx: AnyDatabase
}

/** The open nested write of each request in one, and of each child request made for it. */
const open = new WeakMap<object, OpenTransaction>()

/**
 * The database a handler serving `request` writes to: the transaction of the nested write the request is in, when
 * that one was opened on `db`; else `db` itself.
 *
 * @example
 * ```ts
 * await resource.insert(ambientDatabase(context.db, request), values)
 * ```
 */
export function ambientDatabase (db: AnyDatabase, request: object): AnyDatabase {
  const current = open.get(request)
  return current !== undefined && current.base === underlyingDatabase(db) ? current.trx : db
}

/**
 * Runs `work` in one transaction of `db` that every handler writing to `db` for `request` joins (as
 * {@link ambientDatabase} finds it), and for each request {@link joinAmbientTransaction} adds; when `request` is in
 * such a transaction already, in that one.
 *
 * @example
 * ```ts
 * const row = await inAmbientTransaction(db, request, async () => await handlers.createElement(request, reply, token))
 * ```
 */
export async function inAmbientTransaction<T> (
  db: AnyDatabase, request: object, work: (trx: AnyDatabase) => Promise<T>
): Promise<T> {
  const current = open.get(request)
  // Every viewset wraps the user's database in a request-transaction database of its own: the one under it is the key.
  const base = underlyingDatabase(db)
  if (current !== undefined && current.base === base) return await work(current.trx)
  return await db.transaction().execute(async (trx) => {
    open.set(request, { base, trx })
    try {
      return await work(trx)
    } finally {
      open.delete(request)
    }
  })
}

/**
 * Runs `work` at once with `trx` (a synchronous transaction of `db`, execution/sync-transaction.ts) as the nested write
 * of `request`, which must be in none yet: the handlers it calls find `trx` as {@link inAmbientTransaction}'s.
 *
 * @example
 * ```ts
 * runSynchronously(db, (trx) => inAmbientTransactionNow(db, request, trx, () => handlers.createElement(request)))
 * ```
 */
export function inAmbientTransactionNow<T> (db: AnyDatabase, request: object, trx: AnyDatabase, work: () => T): T {
  open.set(request, { base: underlyingDatabase(db), trx })
  try {
    return work()
  } finally {
    open.delete(request)
  }
}

/** Whether `request` (or the request it was made for) is in a nested write's transaction now. */
export function inAmbientTransactionAlready (request: object): boolean {
  return open.has(request)
}

/**
 * Makes `child` (a request made for one child's write) write in the nested write `request` is in, until
 * {@link leaveAmbientTransaction}.
 *
 * @example
 * ```ts
 * joinAmbientTransaction(child, request)
 * try { await defaults.createElement(child, reply, token) } finally { leaveAmbientTransaction(child) }
 * ```
 */
export function joinAmbientTransaction (child: object, request: object): void {
  const current = open.get(request)
  if (current !== undefined) open.set(child, current)
}

/** Ends what {@link joinAmbientTransaction} began. */
export function leaveAmbientTransaction (child: object): void {
  open.delete(child)
}

/**
 * Runs `write` with `child` in the nested write `request` is in ({@link joinAmbientTransaction}), leaving it once
 * `write` answers, throws or settles; at once when `write` answers at once.
 *
 * @example
 * ```ts
 * const row = await inJoinedTransaction(child, request, () => defaults.createElement(child, reply, token))
 * ```
 */
export function inJoinedTransaction<T> (child: object, request: object, write: () => Eventually<T>): Eventually<T> {
  joinAmbientTransaction(child, request)
  let written: Eventually<T>
  try {
    written = write()
  } catch (error) {
    leaveAmbientTransaction(child)
    throw error
  }
  if (!(written instanceof Promise)) {
    leaveAmbientTransaction(child)
    return written
  }
  return written.finally(() => { leaveAmbientTransaction(child) })
}
