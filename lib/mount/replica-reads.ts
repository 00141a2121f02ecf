import type { FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify'
import type { ReadRouting } from '../data/read-routing.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { RouteHandlers } from '../http/route-context.js'

/**
 * The route handlers with LIST and GET run again on `db` when they read the replica and it failed to answer, so
 * that a replica down never answers 503 by itself; the handlers as they are without a replica.
 *
 * @example
 * ```ts
 * const routes = viewsetRoutes(methods, replicaFallback(handlers, routing, dialect), context)
 * ```
 */
export function replicaFallback (
  handlers: RouteHandlers,
  routing: ReadRouting,
  dialect: ViewsetDialect
): RouteHandlers {
  if (!routing.routed) return handlers
  const unavailable = (error: unknown) => dialect.classify(error)?.kind === 'unavailable'
  return {
    ...handlers,
    list: (request, reply, token) =>
      routing.withFallback(request, unavailable, () => handlers.list(request, reply, token)),
    getElement: (request, reply, token, selection) =>
      routing.withFallback(request, unavailable, () => handlers.getElement(request, reply, token, selection)),
  }
}

/**
 * The `onSend` hook that opens a read-after-write window for the client of every write this viewset's routes (and
 * its custom routes) answered without error: all but GET, HEAD and OPTIONS.
 *
 * @example
 * ```ts
 * fastify.addHook('onSend', readAfterWriteHook(routing))
 * ```
 */
export function readAfterWriteHook (routing: ReadRouting): onSendHookHandler {
  type Done = (error: null, payload: unknown) => void
  return function (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: Done) {
    const { method } = request
    if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS') routing.wrote(reply)
    done(null, payload)
  }
}
