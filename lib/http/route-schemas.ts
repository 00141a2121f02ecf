import type { FastifySerializerCompiler } from 'fastify'
import type { ViewsetMethod } from '../options.js'
import { bodyComponentId, exampleOf } from '../schema/components.js'
import type { JsonSchema } from '../schema/derive.js'
import { deriveBody, deriveParams, propertiesOf } from '../schema/derive.js'
import {
  acceptPatch,
  collectionMethods,
  documentedHeaders,
  errorStatuses,
  mergePatchType,
  partialMediaType,
  problemResponses,
  problemSchema,
  problemSchemaId,
} from '../schema/openapi.js'
import { sharedSerializer } from '../schema/serializer.js'
import { isRecord } from '../schema/object-schema.js'
import { securitySchemeName } from './auth.js'
import { ignoreDuplicates, mergeDuplicates, returnMinimal } from './prefer-header.js'
import type { RouteAuth, RouteContext, RouteSchemas } from './route-context.js'
import { documentChangesSince } from './changes-since-schema.js'

// The schema of each generated route: what it validates, and what OpenAPI says of it (operationId, bodies,
// responses, security). routes.ts adds the handler of each.

/** A route's schema: every part Fastify and @fastify/swagger read, the responses by status. */
export type RouteSchema = Record<string, unknown> & { response: Record<number, JsonSchema> }

const etagHeaders = { ETag: documentedHeaders.etag }

const summaries: Record<ViewsetMethod, (name: string) => string> = {
  LIST: (name) => `List ${name}`,
  GET: (name) => `Get one of ${name} by id`,
  POST: (name) => `Create one of ${name}`,
  BULK: (name) => `Create many of ${name}, all or none`,
  PUT: (name) => `Replace one of ${name}`,
  PATCH: (name) => `Update fields of one of ${name}`,
  DELETE: (name) => `Delete one of ${name}`,
  AGGREGATE: (name) => `Count and sum groups of ${name}`,
  PATCH_MANY: (name) => `Update fields of every one of ${name} the filters select`,
  BULK_PATCH: (name) => `Update fields of many of ${name} by key, all or none`,
  DELETE_MANY: (name) => `Delete every one of ${name} the filters select`,
  RESTORE: (name) => `Restore one of ${name} that was deleted`,
  PURGE: (name) => `Delete one of ${name} for good, deleted or not`,
  HISTORY: (name) => `The recorded writes of one of ${name}, newest first`,
}
const operationVerbs: Record<ViewsetMethod, string> = {
  LIST: 'list',
  GET: 'get',
  POST: 'create',
  BULK: 'createMany',
  PUT: 'replace',
  PATCH: 'update',
  DELETE: 'delete',
  AGGREGATE: 'aggregate',
  PATCH_MANY: 'updateWhere',
  BULK_PATCH: 'updateMany',
  DELETE_MANY: 'deleteWhere',
  RESTORE: 'restore',
  PURGE: 'purge',
  HISTORY: 'history',
}

/** The conditional-request headers each operation honours, as header parameters (a client types them). */
export const conditionalHeaders = {
  'if-none-match': {
    type: 'string',
    description:
      'Entity tags (or `*`) of the versions the client holds: ' +
      'when one is the current ETag, the answer is a 304 with no body.',
  },
  'if-match': {
    type: 'string',
    description:
      'Entity tags (or `*`) the row must match to be written: ' +
      'otherwise a 412 and nothing changes (a 428 without it under requireIfMatch).',
  },
} as const satisfies Record<string, JsonSchema>

/** Adds a header parameter to a route's `headers` schema (POST's `Prefer` may be there already). */
export function addHeader (schema: RouteSchema, name: string, header: JsonSchema): void {
  const headers = isRecord(schema.headers) ? schema.headers : { type: 'object', properties: {} }
  schema.headers = { ...headers, properties: { ...propertiesOf(headers), [name]: header } }
}

/** A `$ref` to a component of the viewset. */
export function ref (id: string): JsonSchema {
  return { $ref: `${id}#` }
}

/**
 * The content of a GET or LIST answer (`page`: an array of at most `maxItems` rows): a `?fields=` answer is
 * `partialMediaType` with the partial row, any other `application/json` with the whole row. The partial one comes
 * first: a tool that checks every answer against the first schema (Schemathesis) still passes whole rows.
 */
function readContent (schemas: RouteSchemas, page: { maxItems: number | undefined } | undefined): JsonSchema {
  const of = (id: string): JsonSchema =>
    page === undefined
      ? ref(id)
      : { type: 'array', items: ref(id), ...(page.maxItems === undefined ? {} : { maxItems: page.maxItems }) }
  return {
    [partialMediaType]: { schema: of(schemas.components.partial.$id) },
    'application/json': { schema: of(schemas.components.row.$id) },
  }
}

/** The body of a write, as documented (a component) and validated (the viewset's validator compiler resolves it). */
function bodyRef (schemas: RouteSchemas, method: 'POST' | 'PUT' | 'PATCH'): JsonSchema {
  return ref(bodyComponentId(schemas.name, method))
}

// One externals record per viewset: its objects' JSON text is then written once (schema/serializer.ts).
const viewsetExternals = new WeakMap<RouteSchemas, Record<string, JsonSchema>>()

/** The schemas a viewset's response serializers reach by `$ref`: its row and the problem document. */
function externalsOf (schemas: RouteSchemas): Record<string, JsonSchema> {
  let externals = viewsetExternals.get(schemas)
  if (externals === undefined) {
    externals = {
      [schemas.entity.$id]: { ...schemas.serialized, $id: schemas.entity.$id },
      [problemSchemaId]: problemSchema,
    }
    viewsetExternals.set(schemas, externals)
  }
  return externals
}

/**
 * Compiles the response serializers of the generated routes against the serializer's entity (nullable
 * scalars coerced, see `deriveSerializerSchema`), where Fastify's own compiler would read the documented one.
 */
export function serializerCompiler (
  schemas: RouteSchemas,
  serialized: Record<number, JsonSchema> = {}
): FastifySerializerCompiler<unknown> {
  const externals = externalsOf(schemas)
  // `serialized`: a status whose documented schema is not the one to write with (GET's and LIST's 200 are
  // written as whole rows; `?fields=` answers have serializers of their own).
  return ({ schema, httpStatus }) =>
    sharedSerializer(serialized[Number(httpStatus)] ?? (isRecord(schema) ? schema : {}), externals)
}

/** The serializer compiler of GET (`row`) and LIST (`page`): a whole row, where the documented answer is either. */
export function wholeRowSerializer (schemas: RouteSchemas, page: boolean): FastifySerializerCompiler<unknown> {
  const row = ref(schemas.entity.$id)
  return serializerCompiler(schemas, { 200: page ? { type: 'array', items: row } : row })
}

/** `?as_of=`, documented and validated on GET when the viewset keeps a history. */
const asOfParameter: JsonSchema = {
  type: 'string',
  format: 'date-time',
  description: 'The row as it was at this time (RFC 3339): its version after the last write at or before it',
}

/** The schema parts every generated route shares: OpenAPI metadata, error responses, security. */
function baseSchema (
  method: ViewsetMethod,
  schemas: RouteSchemas,
  auth: RouteAuth,
  requireIfMatch: boolean
): RouteSchema {
  const secured = auth.protectedMethods.includes(method)
  // An open method that verifies a token when one is sent: the token is optional, and an invalid one is a 401.
  const optional = !secured && auth.verifiesTokens
  const schema: RouteSchema = {
    operationId: `${operationVerbs[method]}${schemas.name}`,
    summary: summaries[method](schemas.name),
    tags: [...schemas.tags],
    response: problemResponses(errorStatuses(method, { secured, optionalToken: optional, requireIfMatch })),
    // Every generated route rejects unknown query parameters, as LIST does.
    querystring: { type: 'object', properties: {}, additionalProperties: false },
  }
  if (secured) schema.security = [{ [securitySchemeName]: [] }]
  else if (optional) schema.security = [{}, { [securitySchemeName]: [] }]
  return schema
}

/** The path parameters of an element route (`/:id`): the key, typed as the schema types it, after the parent's. */
export function elementParams (context: Pick<RouteContext, 'schemas'>): JsonSchema {
  const { schemas } = context
  if (schemas.keyPath !== undefined) return schemas.keyPath.paramsSchema(schemas.parentParams)
  const params = deriveParams(schemas.entity, schemas.primaryKey)
  // An example id, so that tools that call every operation (Dredd) have one.
  const id = propertiesOf(params).id
  const example = exampleOf(id)
  if (id !== undefined && example !== undefined) id.examples = [example]
  const parent = Object.keys(schemas.parentParams)
  if (parent.length === 0) return params
  return { ...params, properties: { ...schemas.parentParams, ...propertiesOf(params) }, required: [...parent, 'id'] }
}

/** The path parameters of a collection route: a nested viewset's parent parameters, or none. */
export function collectionParams ({ parentParams }: RouteSchemas): JsonSchema | undefined {
  const names = Object.keys(parentParams)
  if (names.length === 0) return undefined
  return { type: 'object', properties: { ...parentParams }, required: names, additionalProperties: false }
}

/** The base schema of `method` in this viewset: its metadata, error responses, security and path parameters. */
export function baseOf (method: ViewsetMethod, context: RouteContext): RouteSchema {
  const schema = baseSchema(method, context.schemas, context.auth, context.versions.requireIfMatch)
  const params = collectionMethods.has(method) ? collectionParams(context.schemas) : elementParams(context)
  if (params !== undefined) schema.params = params
  // A nested viewset's collection answers 404 for a parent that does not exist or that the caller may not read.
  if (params !== undefined && schema.response[404] === undefined) {
    schema.response = { ...schema.response, ...problemResponses([404]) }
  }
  return schema
}

/** The largest `limit` LIST's query string accepts (maxLimit), if it declares one. */
function limitOf (querystring: JsonSchema): unknown {
  return propertiesOf(querystring).limit?.maximum
}

/** LIST `/`: the query string (filters, search, ordering, `fields`, pagination), a page, `Link` and `X-Total-Count`. */
export function listSchema (context: RouteContext): RouteSchema {
  const { schemas } = context
  const schema = baseOf('LIST', context)
  schema.querystring = schemas.list.querystring
  const limit = limitOf(schemas.list.querystring)
  schema.response[200] = {
    description: `A page of rows (with \`?fields=\`, only the chosen fields, as \`${partialMediaType}\`)`,
    // A page holds at most `limit` rows, and `limit` at most maxLimit.
    content: readContent(schemas, { maxItems: typeof limit === 'number' ? limit : undefined }),
    ...(schemas.list.headers === undefined ? {} : { headers: schemas.list.headers }),
  }
  if (schemas.list.prefer !== undefined) addHeader(schema, 'prefer', schemas.list.prefer)
  if (context.changes !== undefined) documentChangesSince(schema.response, schemas)
  return schema
}

/** GET `/:id`: `?fields=`, the row with its ETag, or 304. */
export function getSchema (context: RouteContext): RouteSchema {
  const schema = baseOf('GET', context)
  const asOf = context.history === undefined ? {} : { as_of: asOfParameter }
  const properties = { ...context.fields.properties, ...asOf }
  schema.querystring = { type: 'object', properties, additionalProperties: false }
  schema.response[200] = {
    description: `The row (with \`?fields=\`, only the chosen fields, as \`${partialMediaType}\`)`,
    content: readContent(context.schemas, undefined),
    headers: etagHeaders,
  }
  addHeader(schema, 'if-none-match', conditionalHeaders['if-none-match'])
  schema.response[304] = {
    type: 'null',
    description: 'Not modified: If-None-Match names the current ETag',
    headers: etagHeaders,
  }
  return schema
}

/** What `resolution=ignore-duplicates` leaves out, as the Prefer parameter says it. */
function ignored (bulk: boolean): string {
  return bulk
    ? 'each element whose row exists (only created rows are answered: 200 [] when none)'
    : 'the body when its row exists (then 204, no body)'
}

/**
 * With `conflictFields`: the `Prefer` request header, and the 200 a merge into an existing row answers
 * (`answer`: the answer's schema), both answers carrying `Preference-Applied` when the merge was applied.
 */
function documentMerge (schema: RouteSchema, schemas: RouteSchemas, answer: JsonSchema, bulk: boolean): void {
  const { conflictFields } = schemas
  if (conflictFields === undefined) return
  const fields = conflictFields.join(', ')
  const each = bulk ? 'each element updates' : 'the body updates'
  schema.headers = {
    type: 'object',
    properties: {
      prefer: {
        type: 'string',
        description: `RFC 7240 preferences. \`${mergeDuplicates}\` upserts: ${each} the row with the same ${fields} ` +
          '(only the fields sent; a row outside your scope is a 409), else is inserted. ' +
          `Every ${bulk ? 'element' : 'body'} must then send ${fields}. \`${ignoreDuplicates}\` leaves out ` +
          `${ignored(bulk)}, that row unchanged.`,
        examples: [mergeDuplicates],
      },
    },
  }
  const applied = { 'Preference-Applied': documentedHeaders.preferenceApplied }
  const created = schema.response[201]
  if (created !== undefined) {
    schema.response[201] = {
      ...created,
      headers: { ...(isRecord(created.headers) ? created.headers : {}), ...applied },
    }
  }
  schema.response[200] = {
    ...answer,
    description: bulk
      ? `Merged: no element created a row, each updated the row with the same ${fields} (Prefer: ${mergeDuplicates})`
      : `Merged: the row with the same ${fields} was updated (Prefer: ${mergeDuplicates})`,
    headers: { ...(bulk ? {} : etagHeaders), ...applied },
  }
}

/**
 * `Prefer: return=minimal` on a write, said in the operation's description (and the Prefer parameter's, when the
 * operation has one): not as a 204 response, which would make every typed client's `data` optional.
 */
export function documentMinimal (schema: RouteSchema, bulk: boolean): void {
  const said = `With \`Prefer: ${returnMinimal}\` the answer has no body and no relation is loaded: 201 when a row ` +
    `was created${bulk ? '' : ' (with Location and ETag)'}, else 204${bulk ? '' : ' with the ETag'}; ` +
    'Preference-Applied says so.'
  schema.description = typeof schema.description === 'string' ? `${schema.description} ${said}` : said
  const headers = isRecord(schema.headers) ? propertiesOf(schema.headers) : {}
  const prefer = headers.prefer
  if (prefer === undefined) return
  addHeader(schema, 'prefer', { ...prefer, description: `${String(prefer.description)} ${said}` })
}

/** POST `/`: the body, 201 with `Location` and ETag, and the merge of an upsert. */
export function postSchema (context: RouteContext): RouteSchema {
  const { schemas } = context
  const schema = baseOf('POST', context)
  schema.body = bodyRef(schemas, 'POST')
  schema.response[201] = {
    description: 'The row as stored',
    ...ref(schemas.components.row.$id),
    headers: { Location: documentedHeaders.location, ...etagHeaders },
  }
  documentMerge(schema, schemas, ref(schemas.components.row.$id), false)
  documentMinimal(schema, false)
  return schema
}

/** The body of a write of many rows: an array of at most `maxBulk` elements, with an example of one. */
export function elementsBody (element: JsonSchema, maxBulk: number, description: string): JsonSchema {
  const example = exampleOf(element)
  return {
    type: 'array',
    items: element,
    ...(example === undefined ? {} : { examples: [[example]] }),
    maxItems: maxBulk,
    description,
  }
}

/** BULK `/bulk`: an array of POST bodies (at most `maxBulk`), 201 and the rows. */
export function bulkSchema (context: RouteContext): RouteSchema {
  const { schemas } = context
  const schema = baseOf('BULK', context)
  // Inline, not the create component: a `$ref` inside an array is not resolved by the viewset's validator compiler.
  schema.body = elementsBody(deriveBody(schemas.entity, false), schemas.maxBulk,
    `At most ${schemas.maxBulk} elements (maxBulk; more is a 400), each a body of POST. ` +
      'Written all or none, in one transaction; an error names its element by JSON pointer (`/3/name`).')
  const rows = { type: 'array', items: ref(schemas.components.row.$id) }
  schema.response[201] = { description: 'The rows as stored', ...rows }
  documentMerge(schema, schemas, rows, true)
  documentMinimal(schema, true)
  return schema
}

/** PUT and PATCH `/:id`: the body (PATCH also as JSON Merge Patch), the row with its ETag. */
export function updateSchema (method: 'PUT' | 'PATCH', context: RouteContext): RouteSchema {
  const { schemas } = context
  const schema = baseOf(method, context)
  const body = bodyRef(schemas, method)
  // PATCH takes JSON Merge Patch (RFC 7396) too: the same body, the same top-level merge.
  schema.body =
    method === 'PATCH'
      ? { content: { 'application/json': { schema: body }, [mergePatchType]: { schema: body } } }
      : body
  schema.response[200] = { description: 'The row as stored', ...ref(schemas.components.row.$id), headers: etagHeaders }
  addHeader(schema, 'if-match', conditionalHeaders['if-match'])
  if (method === 'PUT') {
    schema.description =
      'Replaces the writable fields the body sends; ' +
      'an optional field the body leaves out keeps its stored value (send null to clear a nullable one). ' +
      'Read-only fields are ignored.'
  }
  documentMinimal(schema, false)
  const unsupported = schema.response[415]
  if (method === 'PATCH' && unsupported !== undefined) {
    schema.response[415] = {
      ...unsupported,
      headers: {
        'Accept-Patch': {
          ...documentedHeaders.acceptPatch, description: `The media types PATCH accepts: ${acceptPatch}`,
        },
      },
    }
  }
  return schema
}

/** DELETE `/:id`: 204. */
export function deleteSchema (context: RouteContext): RouteSchema {
  const schema = baseOf('DELETE', context)
  schema.response[204] = { type: 'null', description: 'Deleted' }
  addHeader(schema, 'if-match', conditionalHeaders['if-match'])
  return schema
}
