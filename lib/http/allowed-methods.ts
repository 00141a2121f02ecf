import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { ViewsetErrors } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'
import { acceptPatch } from '../schema/openapi.js'

/** The handlers of the routes added here: they run no user code (see {@link isMethodRoute}). */
const methodRouteHandlers = new WeakSet<object>()

/** Whether a route is one of the OPTIONS and 405 routes {@link addMethodRoutes} adds (a HEAD route Fastify derives
 * keeps the handler). */
export function isMethodRoute (route: RouteOptions): boolean {
  return methodRouteHandlers.has(route.handler)
}

/** The methods `Allow` lists first, in this order; any other method a path serves follows. */
const commonMethods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

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
 * The paths of a viewset whose unserved methods answer 405: the collection, the element, where the key is an
 * integer (so that no row can be named `bulk`) `/bulk`, whose GET would otherwise reach `/:id` and answer 400, and
 * `/:id/history`, `/:id/restore` and `/:id/purge` when HISTORY, RESTORE and PURGE are served.
 */
export function methodPaths (routes: readonly RouteOptions[]): string[] {
  const params = routes.find((route) => route.url === '/:id')?.schema?.params
  const id = isRecord(params) && isRecord(params.properties) ? params.properties.id : undefined
  // A row's history, RESTORE and PURGE (`/:id/history`, `/:id/restore`, `/:id/purge`) when registered: paths of
  // their own, whose other methods are 405s.
  const actions = routes.map((route) => route.url)
    .filter((url) => url === '/:id/history' || url === '/:id/restore' || url === '/:id/purge')
  return [...(isRecord(id) && id.type === 'integer' ? ['', '/:id', '/bulk'] : ['', '/:id']), ...actions]
}

/** The `Allow` of a concrete path of the scope, or `undefined` when the viewset does not serve it. */
export type AllowOf = (path: string) => string | undefined

function isCommon (method: string): boolean {
  return commonMethods.some((common) => common === method)
}

function allowHeader (methods: ReadonlySet<string>): string {
  const others = [...methods].filter((method) => !isCommon(method)).sort()
  return [...commonMethods.filter((method) => methods.has(method)), ...others].join(', ')
}

/**
 * Adds, on each of `paths`, one route: a 405 for every method Fastify's router knows (TRACE and QUERY too) that is not
 * registered there (with an `Allow` header listing those that are), and `OPTIONS` answering 204 with `Allow`.
 * The 405 answers from the route's `onRequest`, before any body is read: whatever its Content-Type (or none), an
 * unserved method is a 405. OPTIONS is left alone when the application already answers it (an `OPTIONS *` route such
 * as @fastify/cors adds; a CORS onRequest hook answers preflights before any route runs). Routes that another scope
 * already declares on the same path are left alone too, so that registration never fails on a duplicate.
 * Returns the `Allow` of a concrete path, for the methods the router does not know (PROPFIND, PURGE, ...): those
 * reach the not-found handler, which answers 405 with it (see problem-handler.ts).
 */
export function addMethodRoutes (
  fastify: FastifyInstance,
  paths: readonly string[],
  registered: ReadonlyMap<string, ReadonlySet<string>>
): AllowOf {
  const allows = new Map<string, string>()
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
    const allow = allowHeader(new Set([...own, ...(options ? ['OPTIONS'] : [])]))
    allows.set(url, allow)
    const missing = [...commonMethods, ...fastify.supportedMethods.filter((method) => !isCommon(method))]
      .filter((method) => method !== 'OPTIONS' && !taken(method))
    if (!options && missing.length === 0) continue
    // One route for OPTIONS and the 405s of the path: each route costs Fastify as much at startup as a generated one.
    // OPTIONS reaches the handler as before; the other methods are answered by onRequest, before any body is read.
    const notAllowed = async (request: FastifyRequest, reply: FastifyReply) => {
      if (request.method === 'OPTIONS') return
      reply.header('allow', allow)
      throw new ViewsetErrors.MethodNotAllowed()
    }
    // Only OPTIONS gets here: notAllowed answers every other method of the route.
    const handler = async (_request: FastifyRequest, reply: FastifyReply) => {
      // RFC 5789: where PATCH is served, OPTIONS says which body types it takes.
      if (servesPatch) reply.header('accept-patch', acceptPatch)
      return await reply.header('allow', allow).code(204).send()
    }
    methodRouteHandlers.add(handler)
    const methods = [...(options ? ['OPTIONS'] : []), ...missing]
    fastify.route({ method: methods, url: path, schema: { hide: true }, onRequest: notAllowed, handler })
  }
  return (path) => allowOf(fastify.prefix, allows, registered, path)
}

/** The `Allow` of a served path: the list path, a static path of the scope (`/bulk`), or a row path (`/:id`). */
function allowOf (
  prefix: string,
  allows: ReadonlyMap<string, string>,
  registered: ReadonlyMap<string, ReadonlySet<string>>,
  path: string
): string | undefined {
  const exact = allows.get(path)
  if (exact !== undefined) return exact
  const statics = registered.get(path)
  if (statics !== undefined && statics.size > 0) return allowHeader(statics)
  const rest = path.slice(prefix.length)
  return path.startsWith(`${prefix}/`) && rest.length > 1 && !rest.includes('/', 1)
    ? allows.get(`${prefix}/:id`)
    : undefined
}
