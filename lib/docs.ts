import type { FastifyInstance, FastifySchema } from 'fastify'
import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { securitySchemeName } from './http/auth.js'
import { ViewsetErrors } from './errors.js'
import { viewsetsOf } from './mount/registry.js'
import { collectComponents, openapiComponent, withLocalReferences } from './http/docs-components.js'
import { keyTemplateOf } from './http/key-path.js'
import { isRecord } from './schema/object-schema.js'
import type { JsonSchema } from './schema/derive.js'

/**
 * Options of {@link viewsetDocs}.
 *
 * @example
 * ```ts
 * await app.register(viewsetDocs, { title: 'Shop', version: '2.1.0', routePrefix: '/docs' })
 * ```
 */
export interface ViewsetDocsOptions {
  /** Title of the API (default `'API'`). */
  title?: string
  /** Version of the API (default `'1.0.0'`). */
  version?: string
  description?: string
  /** Where Swagger UI is served (default `/docs`; the document is at `/docs/json`). */
  routePrefix?: string
  /**
   * The OAuth2 password-flow token endpoint shown by the Authorize button (default `/token`). The scheme is
   * declared only when an operation uses it (a protected method, or a custom route with `security`).
   */
  tokenUrl?: string
  /** The document's `servers` (default `[{ url: '/' }]`: the API is served where the document is). */
  servers?: Array<{ url: string; description?: string }>
  /**
   * The document's top-level `tags`, which name and describe the tags of its operations (a viewset's `tags`
   * option). A tag an operation uses and this list leaves out is added after them, with its name only.
   *
   * @example
   * ```ts
   * await app.register(viewsetDocs, { tags: [{ name: 'items', description: 'What the shop sells' }] })
   * ```
   */
  tags?: Array<{ name: string; description?: string }>
  /** `info.license`, such as `{ name: 'MIT', identifier: 'MIT' }` (OpenAPI 3.1: `identifier` or `url`). */
  license?: { name: string; identifier?: string; url?: string }
  /** `info.contact`, such as `{ name: 'Shop team', email: 'api@example.com' }`. */
  contact?: { name?: string; email?: string; url?: string }
}

/** An OpenAPI document as plain data, its parts read with guards. */
type OpenApiObject = Record<string, unknown>

/** The operations of a document: every value of every path item. */
function operationsOf (document: OpenApiObject): unknown[] {
  const paths = isRecord(document.paths) ? Object.values(document.paths) : []
  return paths.flatMap((item) => (isRecord(item) ? Object.values(item) : []))
}

/** Whether an operation of the document names the security scheme. */
function schemeUsed (document: OpenApiObject, scheme: string): boolean {
  const requirements = (value: unknown): boolean =>
    Array.isArray(value) &&
    value.some((requirement) => typeof requirement === 'object' && requirement !== null && scheme in requirement)
  if (requirements(document.security)) return true
  return operationsOf(document).some((operation) => isRecord(operation) && requirements(operation.security))
}

/**
 * The document with a top-level entry for each tag its operations use and `tags` does not declare: tools
 * (Spectral's operation-tag-defined) expect every tag to be declared, and Swagger UI lists them in that order.
 */
function withDeclaredTags (document: OpenApiObject): OpenApiObject {
  const declared: unknown[] = Array.isArray(document.tags) ? document.tags : []
  const names = new Set(
    declared.map((tag) => (typeof tag === 'object' && tag !== null && 'name' in tag ? tag.name : tag))
  )
  const used = operationsOf(document).flatMap((operation) =>
    isRecord(operation) && Array.isArray(operation.tags)
      ? operation.tags.filter((tag): tag is string => typeof tag === 'string')
      : []
  )
  const missing = [...new Set(used)].filter((name) => !names.has(name))
  return missing.length === 0 ? document : { ...document, tags: [...declared, ...missing.map((name) => ({ name }))] }
}

/** A route's schema whose references to the viewsets' components are local (docs-components.ts). */
function routeSchemaWithLocalReferences (
  schema: FastifySchema,
  components: ReadonlyMap<string, JsonSchema>
): FastifySchema {
  // A route without a schema has none to rewrite: @fastify/swagger's types say otherwise.
  if (components.size === 0 || !isRecord(schema)) return schema
  const parts = Object.entries(schema).map(([part, value]) => [part, withLocalReferences(value, components)])
  return Object.fromEntries(parts)
}

/** A route's URL with its `:id` segment spelled as its composite key's parts, when it has a key template. */
function withKeyTemplate (url: string, template: string | undefined): string {
  if (template === undefined) return url
  return url.split('/').map((segment) => (segment === ':id' ? template : segment)).join('/')
}

/** The document with the viewsets' components (docs-components.ts), each converted once, after its own. */
function withComponents (document: OpenApiObject, components: ReadonlyMap<string, JsonSchema>): OpenApiObject {
  if (components.size === 0) return document
  const existing = isRecord(document.components) ? document.components : {}
  const schemas = isRecord(existing.schemas) ? existing.schemas : {}
  const added = Object.fromEntries([...components].map(([id, schema]) => [id, openapiComponent(schema)]))
  return { ...document, components: { ...existing, schemas: { ...schemas, ...added } } }
}

/** The document without the viewsets' security scheme when no operation uses it: it would promise a token endpoint. */
function withoutUnusedScheme (document: OpenApiObject): OpenApiObject {
  const components = document.components
  if (!isRecord(components)) return document
  const schemes = components.securitySchemes
  if (!isRecord(schemes) || !(securitySchemeName in schemes) || schemeUsed(document, securitySchemeName)) {
    return document
  }
  const { [securitySchemeName]: _unused, ...others } = schemes
  const { securitySchemes: _schemes, ...rest } = components
  return { ...document, components: Object.keys(others).length > 0 ? { ...rest, securitySchemes: others } : rest }
}

/**
 * The OAuth2 password-flow security scheme that protected operations reference, keyed by
 * {@link securitySchemeName}. Use it when you register @fastify/swagger yourself.
 *
 * @example
 * ```ts
 * const securitySchemes = viewsetSecuritySchemes('/token')
 * await app.register(fastifySwagger, { openapi: { components: { securitySchemes } } })
 * ```
 */
export function viewsetSecuritySchemes (
  tokenUrl = '/token'
): Record<string, { type: 'oauth2'; flows: { password: { tokenUrl: string; scopes: Record<string, string> } } }> {
  return { [securitySchemeName]: { type: 'oauth2', flows: { password: { tokenUrl, scopes: {} } } } }
}

/** Fails when viewsets were registered before the docs: @fastify/swagger would never see their routes. */
function checkRegisteredFirst (fastify: FastifyInstance): void {
  const earlier = viewsetsOf(fastify)
  if (earlier.length === 0) return
  const named = earlier.slice(0, 3).map((entry) => entry.prefix === '' ? entry.table : entry.prefix)
  const more = earlier.length > named.length ? ` and ${String(earlier.length - named.length)} more` : ''
  const viewsets = `${String(earlier.length)} viewset${earlier.length === 1 ? '' : 's'} (${named.join(', ')}${more})`
  throw new ViewsetErrors.DocsAfterViewsets(viewsets)
}

/**
 * Registers @fastify/swagger (OpenAPI 3.1) and @fastify/swagger-ui. Register it before the viewsets:
 * @fastify/swagger collects routes as they are added, so registered after one it fails with
 * `FST_VIEWSET_DOCS_ORDER` (at `ready()`, or at once when its `register` is awaited).
 *
 * @example
 * ```ts
 * await app.register(viewsetDocs, { title: 'Shop API' })      // Swagger UI at /docs, JSON at /docs/json
 * // With the token endpoint elsewhere than /token: viewsetDocs with { tokenUrl: '/auth/token' }
 * await app.register(createViewset({ db, table: 'items', schema: Item }), { prefix: '/items' })
 * ```
 */
export const viewsetDocs = fp<ViewsetDocsOptions>(
  async function viewsetDocs (fastify, options) {
    checkRegisteredFirst(fastify)
    const components = collectComponents(fastify)
    const {
      title = 'API',
      version = '1.0.0',
      description,
      routePrefix = '/docs',
      tokenUrl = '/token',
      servers = [{ url: '/' }],
      tags,
      license,
      contact,
    } = options
    await fastify.register(fastifySwagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title,
          version,
          ...(description === undefined ? {} : { description }),
          ...(license === undefined ? {} : { license }),
          ...(contact === undefined ? {} : { contact }),
        },
        servers,
        ...(tags === undefined ? {} : { tags }),
        // Only protected operations reference the scheme (`security` per operation, none globally).
        components: { securitySchemes: viewsetSecuritySchemes(tokenUrl) },
      },
      // The viewsets' routes name their components by local references, added to the document once each.
      // A composite key's element routes show their parts: `/book-tags/{book_id},{tag_id}` (http/key-path.ts).
      transform: ({ schema, url, route }) => ({
        schema: routeSchemaWithLocalReferences(schema, components),
        url: withKeyTemplate(url, keyTemplateOf(route.config)),
      }),
      // Which routes are protected is known only once they are all registered, so the scheme is dropped here.
      transformObject: (documents) =>
        'openapiObject' in documents
          ? withDeclaredTags(withoutUnusedScheme(withComponents(documents.openapiObject, components)))
          : documents.swaggerObject,
      // Components keep their `$id` as name (Items, AdminItems, ViewsetProblem) instead of def-0, def-1, ...
      refResolver: {
        buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
      },
    })
    await fastify.register(fastifySwaggerUi, { routePrefix })
  },
  { fastify: '5.x', name: 'fastify-viewsets-docs' }
)
