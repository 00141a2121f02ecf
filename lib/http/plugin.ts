import type {
  FastifyInstance, FastifyPluginAsync, FastifySchemaCompiler, onRequestAsyncHookHandler, preHandlerAsyncHookHandler,
  RouteOptions,
} from 'fastify'
import fp from 'fastify-plugin'
import { addMethodRoutes, collectMethods, isMethodRoute, methodPaths } from './allowed-methods.js'
import type { AllowOf } from './allowed-methods.js'
import { protectCustomRoute } from './auth.js'
import { identityBodies } from './content-encoding.js'
import { wellFormedJson, wellFormedQuery } from './well-formed-input.js'
import { ViewsetErrors } from '../errors.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { notFoundHandler, problemHandler } from './problem-handler.js'
import { carryCancellationThroughUserCode } from '../execution/cancellation.js'
import { cancellable, servedBy } from './routes.js'
import type { JsonSchema } from '../schema/derive.js'
import { mergePatchType, problemResponses, problemSchema, problemSchemaId } from '../schema/openapi.js'
import { componentsValidatorCompiler } from '../schema/validator.js'
import { componentsSerializerCompiler, documentComponents } from './docs-components.js'

/**
 * A viewset once mounted: what it hands its encapsulated plugin once the catalog is read and its data
 * layer is built (lib/mount/mount-viewset.ts).
 */
export interface MountedViewset {
  /** The documented components (the row, the partial row, the bodies), added to the plugin under their `$id`. */
  readonly schemas: readonly JsonSchema[]
  /** The generated routes (routes.ts). */
  readonly routes: readonly RouteOptions[]
  /** The dialect whose errors the plugin's error handler classifies. */
  readonly dialect: ViewsetDialect
  /** The `conflictDetail` option: with `'none'`, a 409 conflict names no field. */
  readonly conflictDetail: 'field' | 'none'
  /**
   * Whether the generated routes' validators compile at startup: when a schema the user wrote reaches them besides the
   * row's fields (`static listQuery`), so that a mistake in it fails `app.ready()`; else on their first request.
   */
  readonly validatorsAtStartup: boolean
  /** Adds the subclass's own routes, after the generated ones. */
  customRoutes(fastify: FastifyInstance): void | Promise<void>
  /** The hook of protected custom routes (`config: { protected: true }` or `onRequest: protect`). */
  readonly protect: onRequestAsyncHookHandler
  /** The check of a nested viewset's parent, run before the handler of every route (http/parent-binding.ts). */
  readonly preHandler?: preHandlerAsyncHookHandler
  /** Run before a custom route's handler only: the caller's field views, which its answers and If-Match follow. */
  readonly customPreHandler?: preHandlerAsyncHookHandler
  /** The startup checks that count protected custom routes, run once they are added. */
  checkProtectedRoutes(count: number): void
}

/**
 * A custom route that documents its answers but no error: it answers errors through the viewset plugin's problem
 * handler like every route, so they are documented for it (400 when it validates input, 401 and 403 when
 * it declares `security`, 500 and 503 always). A route that documents any error is left as it is.
 */
function documentErrors (route: RouteOptions): void {
  const schema = route.schema
  if (schema === undefined || schema.hide === true || typeof schema.response !== 'object' || schema.response === null) {
    return
  }
  const response: Record<string, unknown> = { ...schema.response }
  if (Object.keys(response).some((status) => /^[45]/.test(status))) return
  const validates =
    schema.body !== undefined ||
    schema.querystring !== undefined ||
    schema.params !== undefined ||
    schema.headers !== undefined
  const secured = 'security' in schema && Array.isArray(schema.security) && schema.security.length > 0
  const statuses = [...(validates ? [400] : []), ...(secured ? [401, 403] : []), 500, 503]
  route.schema = { ...schema, response: { ...response, ...problemResponses(statuses) } }
}

/** The route with `hook` run last before its handler, when there is one. */
function withPreHandler (route: RouteOptions, hook: preHandlerAsyncHookHandler | undefined): RouteOptions {
  if (hook === undefined) return route
  const { preHandler } = route
  const given = preHandler === undefined ? [] : Array.isArray(preHandler) ? preHandler : [preHandler]
  return { ...route, preHandler: [...given, hook] }
}

/**
 * Adds the generated routes. Their schemas are ours, their fields checked at startup by the row's serializer: their
 * validators compile on first use, unless a schema the user wrote reaches them. The custom routes' validators go
 * through the scope's `compiler`, at startup.
 */
function addGeneratedRoutes (
  fastify: FastifyInstance,
  mounted: MountedViewset,
  compiler: FastifySchemaCompiler<unknown>
): void {
  const { schemas, validatorsAtStartup } = mounted
  const generated = validatorsAtStartup ? compiler : componentsValidatorCompiler(schemas, 'on first use')
  for (const route of mounted.routes) {
    fastify.route({ ...withPreHandler(route, mounted.preHandler), validatorCompiler: generated })
  }
}

/**
 * The plugin of one viewset. `mount` runs when Fastify registers it (it reads the catalog, builds the data
 * layer and declares the routes); this shell then gives the plugin what every viewset's plugin has: the
 * validator compiler, the problem+json error and not-found handlers, JSON-only bodies, the routes, and
 * 405/OPTIONS answers on the viewset's paths. Encapsulated, so `{ prefix }` and the handlers stay inside.
 *
 * @example
 * ```ts
 * return viewsetPlugin('items', async (fastify) => ({
 *   schemas: [row], routes, dialect, protect, customRoutes: () => {}, checkProtectedRoutes: () => {},
 * }))
 * ```
 */
export function viewsetPlugin (
  table: string,
  mount: (fastify: FastifyInstance) => Promise<MountedViewset>
): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (fastify) => {
    const mounted = await mount(fastify)
    // Under viewsetDocs the document takes the components (docs-components.ts); else @fastify/swagger finds them here.
    if (!documentComponents(fastify, mounted.schemas)) for (const schema of mounted.schemas) fastify.addSchema(schema)
    else fastify.setSerializerCompiler(componentsSerializerCompiler(fastify, mounted.schemas))
    if (fastify.getSchema(problemSchemaId) === undefined) fastify.addSchema(problemSchema)
    if (!fastify.hasRequestDecorator('viewsetToken')) fastify.decorateRequest('viewsetToken', null)
    const validatorCompiler = componentsValidatorCompiler(mounted.schemas)
    fastify.setValidatorCompiler(validatorCompiler)
    fastify.setErrorHandler(problemHandler(() => mounted.dialect, mounted.conflictDetail))
    // Filled once the routes are known (below): the not-found handler answers 405 on a served path.
    let allowOf: AllowOf = () => undefined
    fastify.setNotFoundHandler(notFoundHandler((path) => allowOf(path)))
    // Bodies are JSON only: Fastify's text/plain parser would turn a text body into a string that fails as a 400, not a
    // 415.
    fastify.removeContentTypeParser('text/plain')
    // RFC 7396 names PATCH's semantics (top-level fields replace, the rest stay): PATCH takes that type too.
    // Bodies are read as bytes and checked (UTF-8, well-formed strings) before they are parsed: well-formed-input.ts.
    const json = wellFormedJson(fastify.getDefaultJsonParser('error', 'error'))
    fastify.removeContentTypeParser('application/json')
    fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, json)
    fastify.addContentTypeParser(mergePatchType, { parseAs: 'buffer' }, (request, body, done) => {
      if (request.method !== 'PATCH') {
        done(new ViewsetErrors.UnsupportedMediaType(mergePatchType), undefined)
        return
      }
      json(request, body, done)
    })
    fastify.addHook('onRequest', identityBodies)
    fastify.addHook('onRequest', wellFormedQuery)

    const registered = collectMethods(fastify)
    addGeneratedRoutes(fastify, mounted, validatorCompiler)
    // Custom routes are cancellable too (the generated ones already are: routes.ts), and protected when they ask.
    let protectedRoutes = 0
    fastify.addHook('onRoute', (route) => {
      // A custom route awaits where it likes before its queries: their cancellation scope rides on the promises.
      if (!isMethodRoute(route)) carryCancellationThroughUserCode()
      // Its viewset helpers apply the rule of the request it serves (execution/served-request.ts).
      route.handler = cancellable(servedBy(route.handler))
      if (protectCustomRoute(route, mounted.protect)) protectedRoutes++
      documentErrors(route)
      if (!isMethodRoute(route)) {
        Object.assign(route, withPreHandler(withPreHandler(route, mounted.preHandler), mounted.customPreHandler))
      }
    })
    await mounted.customRoutes(fastify)
    mounted.checkProtectedRoutes(protectedRoutes)
    // After the custom routes, so that a custom route on a generated path counts as allowed.
    allowOf = addMethodRoutes(fastify, methodPaths(mounted.routes), registered)
  }
  return fp(plugin, { fastify: '5.x', name: `fastify-viewsets:${table}`, encapsulate: true })
}
