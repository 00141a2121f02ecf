import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { ViewsetErrors } from '../errors.js'
import { acceptPatch } from '../schema/openapi.js'

/** The handlers of the routes added here: they run no user code (see {@link isMethodRoute}). */
const methodRouteHandlers = new WeakSet<object>()

/** Whether a route is one of the OPTIONS and 405 routes {@link addMethodRoutes} adds (a HEAD route Fastify derives
 * keeps the handler). */
export function isMethodRoute (route: RouteOptions): boolean {
  return methodRouteHandlers.has(route.handler)
}

/** The methods a viewset's paths answer: each one either serves it, or says 405 and which ones it serves. */
const knownMethods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

/**
 * Collects the methods registered on each path of a scope (generated, HEAD and custom routes alike),
 * through an `onRoute` hook added before the routes.
 */
export function collectMethods (fastify: FastifyInstance): Map<string, Set<string>> {
  const byPath = new Map<string, Set<string>>()
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    const path = route.url
    let set = byPath.get(path)
    if (set === undefined) byPath.set(path, (set = new Set()))
    for (const method of methods) set.add(method.toUpperCase())
  })
  return byPath
}

/**
 * Adds, on each of `paths`, a 405 route for every known method that is not registered there (with an
 * `Allow` header listing those that are), and an `OPTIONS` route answering 204 with `Allow`. OPTIONS is
 * left alone when the application already answers it (an `OPTIONS *` route such as @fastify/cors adds;
 * a CORS onRequest hook answers preflights before any route runs). Routes that another scope already
 * declares on the same path are left alone too, so that registration never fails on a duplicate.
 */
export function addMethodRoutes (
  fastify: FastifyInstance,
  paths: readonly string[],
  registered: ReadonlyMap<string, ReadonlySet<string>>
): void {
  for (const path of paths) {
    const url = `${fastify.prefix}${path}`
    const own = registered.get(url)
    // A path with no route of the viewset (`/:id` of a LIST-only viewset) is not a known path: it stays 404.
    if (own === undefined || own.size === 0) continue
    const taken = (method: string): boolean => own.has(method) || fastify.hasRoute({ method, url })
    const wildcardOptions =
      fastify.hasRoute({ method: 'OPTIONS', url: '*' }) || fastify.hasRoute({ method: 'OPTIONS', url: '/*' })
    const options = !taken('OPTIONS') && !wildcardOptions
    // Read now: the 405 route added below is collected into `own` too.
    const servesPatch = own.has('PATCH')
    const allow = knownMethods.filter((method) => own.has(method) || (method === 'OPTIONS' && options)).join(', ')
    if (options) {
      const handler = async (_request: FastifyRequest, reply: FastifyReply) => {
        // RFC 5789: where PATCH is served, OPTIONS says which body types it takes.
        if (servesPatch) reply.header('accept-patch', acceptPatch)
        return await reply.header('allow', allow).code(204).send()
      }
      methodRouteHandlers.add(handler)
      fastify.route({ method: 'OPTIONS', url: path, schema: { hide: true }, handler })
    }
    const missing = knownMethods.filter((method) => method !== 'OPTIONS' && !taken(method))
    if (missing.length === 0) continue
    const handler = async (_request: FastifyRequest, reply: FastifyReply) => {
      reply.header('allow', allow)
      throw new ViewsetErrors.MethodNotAllowed()
    }
    methodRouteHandlers.add(handler)
    fastify.route({ method: missing, url: path, schema: { hide: true }, handler })
  }
}
