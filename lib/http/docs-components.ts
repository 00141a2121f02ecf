import type { FastifyInstance, FastifySerializerCompiler } from 'fastify'
import { rootOf } from '../mount/registry.js'
import type { JsonSchema } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import { sharedSerializer } from '../schema/serializer.js'

// The viewsets' components in the document viewsetDocs serves. @fastify/swagger resolves every route schema part
// against every shared schema of the app (those added with `addSchema`), so the first `/docs/json` grew as the
// square of the number of viewsets (each adds about five). With viewsetDocs registered (first: docs.ts), a
// viewset hands its components to it instead of `addSchema`: its routes name them by local references
// (`#/components/schemas/Items`), which @fastify/swagger leaves as they are, and the document gets each component
// once, converted here as @fastify/swagger converts shared schemas for OpenAPI 3.1.

const collectors = new WeakMap<FastifyInstance, Map<string, JsonSchema>>()

/**
 * Starts collecting the components of the viewsets registered after this in `fastify`'s application, and returns
 * where they are collected, by `$id` (viewsetDocs calls it).
 *
 * @example
 * ```ts
 * const components = collectComponents(fastify) // filled as viewsets register
 * ```
 */
export function collectComponents (fastify: FastifyInstance): ReadonlyMap<string, JsonSchema> {
  const root = rootOf(fastify)
  const collected = collectors.get(root) ?? new Map<string, JsonSchema>()
  collectors.set(root, collected)
  return collected
}

/**
 * Hands a viewset's components to viewsetDocs when it documents the application: true when taken, false when the
 * viewset must add them with `addSchema` itself (no viewsetDocs; @fastify/swagger registered by the app).
 *
 * @example
 * ```ts
 * if (!documentComponents(fastify, mounted.schemas)) for (const schema of mounted.schemas) fastify.addSchema(schema)
 * ```
 */
export function documentComponents (fastify: FastifyInstance, schemas: readonly JsonSchema[]): boolean {
  const collected = collectors.get(rootOf(fastify))
  if (collected === undefined) return false
  for (const schema of schemas) {
    if (typeof schema.$id === 'string') collected.set(schema.$id, schema)
  }
  return true
}

/**
 * The serializer compiler of a viewset's scope whose components the docs took: a custom route's answer may still
 * name them (`{ $ref: 'Items#' }`), and the scope's shared schemas, as Fastify's own compiler would let it.
 *
 * @example
 * ```ts
 * fastify.setSerializerCompiler(componentsSerializerCompiler(fastify, mounted.schemas))
 * ```
 */
export function componentsSerializerCompiler (
  fastify: FastifyInstance,
  components: readonly JsonSchema[]
): FastifySerializerCompiler<unknown> {
  return ({ schema }) => {
    const externals: Record<string, JsonSchema> = {}
    for (const shared of [...Object.values(fastify.getSchemas()), ...components]) {
      if (isRecord(shared) && typeof shared.$id === 'string') externals[shared.$id] = shared
    }
    return sharedSerializer(isRecord(schema) ? schema : {}, externals)
  }
}

/** `schema` with each `$ref` to a collected component (`Items#`) made local (`#/components/schemas/Items`). */
export function withLocalReferences (schema: unknown, components: ReadonlyMap<string, JsonSchema>): unknown {
  if (Array.isArray(schema)) return schema.map((item) => withLocalReferences(item, components))
  if (!isRecord(schema)) return schema
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    const id = key === '$ref' && typeof value === 'string' && value.endsWith('#') ? value.slice(0, -1) : undefined
    copy[key] = id !== undefined && components.has(id)
      ? `#/components/schemas/${id}`
      : withLocalReferences(value, components)
  }
  return copy
}

/**
 * A component as @fastify/swagger writes shared schemas into an OpenAPI 3.1 document: no `$id`, `$schema` or
 * `definitions`, `const` as a one-value `enum` (Swagger UI reads no `const`), `contentEncoding` as `format`,
 * and `nullable` as a `null` type.
 */
export function openapiComponent (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(openapiComponent)
  if (!isRecord(schema)) return schema
  const converted: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$id' || key === '$schema' || key === 'definitions') continue
    if (key === 'const') converted.enum = [value]
    else if (key === 'contentEncoding' && (value === 'binary' || value === 'base64')) {
      converted.format = value === 'binary' ? 'binary' : 'byte'
    } else if (key === 'properties' && isRecord(value)) {
      const fields = Object.entries(value).map(([name, field]) => [name, openapiComponent(field)])
      converted.properties = Object.fromEntries(fields)
    } else if (key !== 'nullable') converted[key] = openapiComponent(value)
  }
  return withNullType(converted, schema.nullable)
}

/** OpenAPI 3.0's `nullable: true` (a relation field's) as JSON Schema 2020-12 says it: `null` among the types. */
function withNullType (schema: Record<string, unknown>, nullable: unknown): Record<string, unknown> {
  const type = schema.type
  if (nullable !== true || type === undefined) return schema
  const types: unknown[] = Array.isArray(type) ? type : [type]
  return types.includes('null') ? schema : { ...schema, type: [...types, 'null'] }
}
