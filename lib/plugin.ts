import type { FastifyInstance, FastifyPluginAsync, onRequestAsyncHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { addMethodRoutes, collectMethods } from './allowed-methods.js'
import { protectCustomRoute } from './auth.js'
import type { ViewsetDialect } from './dialect/dialect.js'
import { notFoundHandler, problemHandler } from './problem-handler.js'
import { cancellable } from './routes.js'
import type { JsonSchema } from './schema/derive.js'
import { problemSchema, problemSchemaId } from './schema/openapi.js'
import { viewsetValidatorCompiler } from './schema/validator.js'

/** What a viewset hands its scope once its data layer is built. */
export interface ViewsetScope {
  /** The entity schema, added to the scope under its `$id`. */
  readonly entity: JsonSchema
  /** The generated routes (routes.ts). */
  readonly routes: readonly RouteOptions[]
  /** The dialect whose errors the scope's error handler classifies. */
  readonly dialect: ViewsetDialect
  /** Adds the subclass's own routes, after the generated ones. */
  customRoutes (fastify: FastifyInstance): void | Promise<void>
  /** The hook of protected custom routes (`config: { protected: true }` or `onRequest: protect`). */
  readonly protect: onRequestAsyncHookHandler
  /** The startup checks that count protected custom routes, run once they are added. */
  checkProtectedRoutes (count: number): void
}

/**
 * The plugin of one viewset. `setup` runs when Fastify registers it (it reads the catalog, builds the data
 * layer and declares the routes); this shell then gives the scope what every viewset scope has: the
 * validator compiler, the problem+json error and not-found handlers, JSON-only bodies, the routes, and
 * 405/OPTIONS answers on the viewset's paths. Encapsulated, so `{ prefix }` and the handlers stay inside.
 *
 * @example
 * ```ts
 * return viewsetPlugin('items', async (fastify) => ({ entity, routes, dialect, protect, customRoutes: () => {}, checkProtectedRoutes: () => {} }))
 * ```
 */
export function viewsetPlugin (table: string, setup: (fastify: FastifyInstance) => Promise<ViewsetScope>): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (fastify) => {
    const scope = await setup(fastify)
    fastify.addSchema(scope.entity)
    if (fastify.getSchema(problemSchemaId) === undefined) fastify.addSchema(problemSchema)
    if (!fastify.hasRequestDecorator('viewsetToken')) fastify.decorateRequest('viewsetToken', null)
    fastify.setValidatorCompiler(viewsetValidatorCompiler)
    fastify.setErrorHandler(problemHandler(() => scope.dialect))
    fastify.setNotFoundHandler(notFoundHandler)
    // Bodies are JSON only: Fastify's text/plain parser would turn a text body into a string that fails as a 400, not a 415.
    fastify.removeContentTypeParser('text/plain')

    const registered = collectMethods(fastify)
    for (const route of scope.routes) fastify.route(route)
    // Custom routes are cancellable too (the generated ones already are: routes.ts), and protected when they ask.
    let protectedRoutes = 0
    fastify.addHook('onRoute', (route) => {
      route.handler = cancellable(route.handler)
      if (protectCustomRoute(route, scope.protect)) protectedRoutes++
    })
    await scope.customRoutes(fastify)
    scope.checkProtectedRoutes(protectedRoutes)
    // After the custom routes, so that a custom route on a generated path counts as allowed.
    addMethodRoutes(fastify, ['', '/:id'], registered)
  }
  return fp(plugin, { fastify: '5.x', name: `fastify-viewsets:${table}`, encapsulate: true })
}
