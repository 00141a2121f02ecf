import type { RouteHandlerMethod, RouteOptions } from 'fastify'
import { handlerChannel, traceEventually } from './channels.js'
import type { HandlerContext } from './channels.js'
import type { Eventually } from '../execution/eventually.js'
import type { DatabaseFault } from '../errors.js'
import { answeredProblem } from './problem-code.js'

/**
 * A viewset route whose handler runs are published on `fastify-viewsets:handler` (channels.ts): while nobody
 * subscribes, the handler runs as it is, with no context built.
 *
 * @example
 * ```ts
 * const route = tracedRoute(listRoute(handlers, context), 'items', 'LIST', '/items', dialect.classify)
 * ```
 */
export function tracedRoute (
  route: RouteOptions,
  viewset: string,
  method: string,
  prefix: string,
  classify: (error: unknown) => DatabaseFault | undefined
): RouteOptions {
  const handler = route.handler
  const path = `${prefix}${route.url}`
  const traced: RouteHandlerMethod = function (request, reply) {
    if (!handlerChannel.hasSubscribers) return handler.call(this, request, reply)
    const context: HandlerContext = { viewset, method, route: path, request, reply }
    // Fastify's handlers answer a value or a promise of one: both handed on as they are.
    return traceEventually(
      handlerChannel,
      context,
      (): Eventually<unknown> => handler.call(this, request, reply),
      undefined,
      (error) => { context.problem = answeredProblem(error, classify, request.method) }
    )
  }
  return { ...route, handler: traced }
}
