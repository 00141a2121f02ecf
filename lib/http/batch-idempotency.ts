import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import type { IdempotencyStore } from '../data/idempotency-store.js'
import type { ResolvedIdempotency } from '../data/idempotency-options.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { RequestTransactionDatabase } from '../execution/request-transaction.js'
import { mountIdempotency } from '../mount/idempotent-routes.js'
import type { AnyDatabase, Row } from '../sql.js'
import { openTokenHook } from './auth.js'
import { underBatch } from './batch-options.js'
import { callerOf } from './idempotency.js'
import type { RouteIdempotency } from './idempotency.js'

// `viewsetBatch({ idempotency })` (issue 38 item 5): the batch route honours `Idempotency-Key` as a viewset's routes
// do (http/idempotency.ts, the same table and semantics), but its database is known only once every viewset is
// registered, and it has no token of its own: the batch's bearer token is verified here to name the key's caller.

/**
 * The batch route's `Idempotency-Key`: the table of keys mounted when the app is ready ({@link mount}), the caller
 * of a key read from the batch's verified bearer token ({@link identifyCaller}).
 *
 * @example
 * ```ts
 * const idempotency = new BatchIdempotency(checkIdempotency(options.idempotency))
 * fastify.route(withIdempotency(batchRoute, idempotency))
 * fastify.addHook('onReady', async () => { await idempotency.mount(db, await dialectOf(db)) })
 * ```
 */
export class BatchIdempotency implements RouteIdempotency {
  readonly #options: ResolvedIdempotency
  #mounted: RouteIdempotency | undefined
  /** The caller of each batch request that carries a key, as its onRequest hook found it. */
  readonly #callers = new WeakMap<FastifyRequest, string>()

  constructor (options: ResolvedIdempotency) {
    this.#options = options
  }

  get store (): IdempotencyStore {
    return this.#route().store
  }

  get db (): RequestTransactionDatabase<Record<string, Row>> {
    return this.#route().db
  }

  /** The caller `identifyCaller` found, else as a viewset route names it. */
  readonly caller = (request: FastifyRequest): string => this.#callers.get(request) ?? callerOf(request)

  /** Checks (or creates) the table of keys on the viewsets' database; fails `ready()` naming the option. */
  async mount (db: AnyDatabase, dialect: ViewsetDialect): Promise<void> {
    try {
      this.#mounted = await mountIdempotency({ idempotency: this.#options }, db, dialect)
    } catch (error) {
      throw underBatch(error)
    }
  }

  /**
   * The onRequest hook naming a keyed batch's caller: its bearer token verified by @fastify/jwt when the app has it
   * (an invalid one is a 401 before anything is reserved); without it, the exact credential sent, so that a key and
   * its stored answer belong to that credential alone.
   */
  identifyCaller (fastify: FastifyInstance): onRequestAsyncHookHandler {
    const verify = fastify.hasRequestDecorator('jwtVerify') ? openTokenHook({}) : undefined
    return async (request: FastifyRequest, reply: FastifyReply) => {
      if (request.headers['idempotency-key'] === undefined) return
      const { authorization } = request.headers
      if (authorization === undefined || authorization === '') return
      if (verify !== undefined) await verify.call(fastify, request, reply)
      const caller = request.viewsetToken === null || request.viewsetToken === undefined
        ? `credential:${createHash('sha256').update(authorization).digest('hex')}`
        : callerOf(request)
      this.#callers.set(request, caller)
    }
  }

  #route (): RouteIdempotency {
    if (this.#mounted === undefined) throw new TypeError('viewsetBatch serves requests only once the app is ready')
    return this.#mounted
  }
}
