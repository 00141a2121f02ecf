import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySerializerCompiler,
  RouteHandlerMethod,
  RouteOptions,
} from 'fastify'
import { authHook, openTokenHook, securitySchemeName } from './auth.js'
import { noneMatch, preconditionOf, representationTag, versionTag } from './conditional-requests.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { Eventually } from '../execution/eventually.js'
import { currentCancellation, withCancellation, runWithCancellation } from '../execution/cancellation.js'
import type { CancellationContext } from '../execution/cancellation.js'
import type { ViewsetMethod, ViewsetOptions, ViewsetToken } from '../options.js'
import type { FieldSelection, FieldsPlan } from '../query/fields.js'
import { cursorLinkHeader, linkHeader } from './link.js'
import type { Precondition } from '../data/precondition.js'
import type { ListQuery } from '../query/list-query.js'
import { offsetWithCursor, parsePagination } from '../query/list-query.js'
import type { TableGateway } from '../data/table-gateway.js'
import type { ViewsetComponents } from '../schema/components.js'
import { bodyComponentId, exampleOf } from '../schema/components.js'
import type { JsonSchema } from '../schema/derive.js'
import { deriveBody, deriveParams, propertiesOf } from '../schema/derive.js'
import {
  acceptPatch,
  documentedHeaders,
  errorStatuses,
  mergePatchType,
  problemResponses,
  problemSchema,
  problemSchemaId,
} from '../schema/openapi.js'
import { sharedSerializer } from '../schema/serializer.js'
import type { Serializer } from '../schema/serializer.js'
import { isRecord } from '../schema/object-schema.js'
import { mergeDuplicates } from './prefer-header.js'

/**
 * The handlers a route calls: the viewset's overridable methods. Method syntax on purpose: an override
 * may narrow its request type (`ListRequest<{ limit: number, offset: number }>`). All but `createElements`
 * may answer at once (the defaults on SQLite, see eventually.ts).
 */
export interface RouteHandlers {
  list(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Eventually<unknown>
  getElement(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Eventually<unknown>
  createElement(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Eventually<unknown>
  createElements(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Promise<unknown>
  updateElement(
    request: FastifyRequest,
    reply: FastifyReply,
    token: ViewsetToken | null,
    partial: boolean,
  ): Eventually<unknown>
  deleteElement(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Eventually<unknown>
}

/** What the routes of one viewset are declared from, once the data layer is built. */
export interface RouteContext {
  readonly resource: TableGateway
  /** Where relations of LIST and GET rows are read (`readDb`), and of written rows (`db`). */
  readonly readDb: AnyDatabase
  readonly db: AnyDatabase
  /** The entity schema as served, with its `$id`. */
  readonly entity: JsonSchema & { readonly $id: string }
  /** The entity as the response serializer reads it (schema/derive.ts `deriveSerializerSchema`). */
  readonly serialized: JsonSchema
  readonly name: string
  readonly primaryKey: string
  readonly tags: readonly string[]
  readonly protectedMethods: readonly ViewsetMethod[]
  readonly auth: Pick<ViewsetOptions<unknown, never, never>, 'authenticate' | 'authorize'>
  /** Whether tokens can be verified (@fastify/jwt or `authenticate`): then open methods verify one when it is sent. */
  readonly verifiesTokens: boolean
  /** LIST's query string (the subclass's `listQuery` merged in) and the headers of the default LIST. */
  readonly list: { readonly querystring: JsonSchema; readonly headers?: Record<string, JsonSchema> | undefined }
  readonly maxOffset: number
  readonly pagination: 'offset' | 'cursor'
  /** Most elements of one `POST /bulk`. */
  readonly maxBulk: number
  /** The natural key of upserts: POST and BULK then document `Prefer`, the 200 of a merge and `Preference-Applied`. */
  readonly conflictFields: readonly string[] | undefined
  /** `?fields=` of LIST and GET. */
  readonly fields: FieldsPlan
  /** The scope's full prefix, for `Location`. */
  readonly prefix: string
  /** The documented row, partial row and body components (schema/components.ts). */
  readonly components: ViewsetComponents
  /** Serializes a whole row, relations included, as GET sends it: what a representation's ETag hashes. */
  readonly represent: Serializer
  /** The version column (`versionField`), whose value is the ETag. */
  readonly versionField: string | undefined
  /** PUT, PATCH and DELETE without If-Match answer 428. */
  readonly requireIfMatch: boolean
}

/** What the default LIST read, for the headers its route sets: absent when an override answered. */
export interface ListPage {
  readonly query: ListQuery
  /** The number of matching rows, when counted. */
  readonly total: number | undefined
  /** With cursor pagination: the cursors of the `next` and `prev` links, absent when there is no such page. */
  readonly cursors?: { readonly next: string | undefined; readonly prev: string | undefined }
}

// Per-request state between a route and the default handlers: request decorations (null until set), which
// keep the Request objects of a scope to one shape; a WeakMap keyed by request cost an ephemeron write
// barrier and scavenger work per request (1.2 µs of a LIST 10 on PostgreSQL).
const listPageKey = Symbol('fastify-viewsets.listPage')
const selectionKey = Symbol('fastify-viewsets.selection')
const preconditionKey = Symbol('fastify-viewsets.precondition')
interface RequestState {
  [listPageKey]?: ListPage | null
  [selectionKey]?: FieldSelection | null
  [preconditionKey]?: Precondition | null
}

/** The request as its state is written and read: decorated with null by {@link decorateRequestState}, or not at all (a
 * request from another scope handed to a handler). */
function stateOf (request: FastifyRequest): RequestState {
  return request as FastifyRequest & RequestState // the keys are this module's own symbols
}

/** Declares the per-request state of the generated routes on the scope's requests. */
export function decorateRequestState (fastify: FastifyInstance): void {
  for (const key of [listPageKey, selectionKey, preconditionKey]) {
    if (!fastify.hasRequestDecorator(key)) fastify.decorateRequest(key, null)
  }
}

/** Called by the default `list`: the route then sets `Link`, `X-Total-Count` and the `?fields=` serializer. */
export function recordListPage (request: FastifyRequest, page: ListPage): void {
  stateOf(request)[listPageKey] = page
}

/** The `?fields=` selection of a GET request (parsed by its route), read by the default `getElement`. */
export function requestedFields (request: FastifyRequest): FieldSelection | undefined {
  return stateOf(request)[selectionKey] ?? undefined
}

/** The `If-Match` condition of a PUT, PATCH or DELETE (read by its route), for the default handlers' write. */
export function requestedPrecondition (request: FastifyRequest): Precondition | undefined {
  return stateOf(request)[preconditionKey] ?? undefined
}

/** The ETag of a whole row and its serialized body (the version column's value, else a hash of the body). */
function tagged (context: RouteContext, row: Row): { etag: string; body: string } {
  const body = context.represent(row)
  return {
    etag: context.versionField === undefined ? representationTag(body) : versionTag(row[context.versionField]),
    body,
  }
}

/** Answers a whole row with its ETag, serialized once (the tag hashes the very bytes sent). */
function sendTagged (context: RouteContext, reply: FastifyReply, row: unknown): unknown {
  if (!isRecord(row)) return row
  const { etag, body } = tagged(context, row)
  // A string with a JSON type is sent as it is: the route's serializer does not run again.
  reply.header('etag', etag).type('application/json; charset=utf-8')
  return body
}

/** A written row with its relations (the default ones) and its ETag, as POST, PUT and PATCH answer it. */
function sendWritten (
  scope: CancellationContext,
  context: RouteContext,
  reply: FastifyReply,
  db: AnyDatabase,
  row: unknown
): unknown {
  if (!context.resource.hasRelations) return sendTagged(context, reply, row)
  return withRelations(scope, context.resource, db, row, context.fields.defaultRelations).then((loaded) =>
    sendTagged(context, reply, loaded)
  )
}

const etagHeaders = { ETag: documentedHeaders.etag }

const summaries: Record<ViewsetMethod, (name: string) => string> = {
  LIST: (name) => `List ${name}`,
  GET: (name) => `Get one of ${name} by id`,
  POST: (name) => `Create one of ${name}`,
  BULK: (name) => `Create many of ${name}, all or none`,
  PUT: (name) => `Replace one of ${name}`,
  PATCH: (name) => `Update fields of one of ${name}`,
  DELETE: (name) => `Delete one of ${name}`,
}
const operationVerbs: Record<ViewsetMethod, string> = {
  LIST: 'list',
  GET: 'get',
  POST: 'create',
  BULK: 'createMany',
  PUT: 'replace',
  PATCH: 'update',
  DELETE: 'delete',
}

/** The validated query string: its schema has type object. */
function queryOf (request: FastifyRequest): Record<string, unknown> {
  return isRecord(request.query) ? request.query : {}
}

/**
 * Drops the Content-Type of a request that carries no body, so that Fastify does not parse nothing as
 * JSON (a 400) or refuse the type (a 415). A body that is there is still parsed as usual.
 */
function ignoreEmptyBody (request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const { headers } = request
  const length = headers['content-length']
  if (headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) {
    delete headers['content-type']
  }
  done()
}

/**
 * Loads the relations of a handler's result: a row, rows, or anything else (left alone), in the request's
 * `scope` (taken before the handler's await: see execution/cancellation.ts). The hot routes call it only when
 * `resource.hasRelations`: without relations they await nothing more.
 */
async function withRelations (
  scope: CancellationContext,
  resource: TableGateway,
  db: AnyDatabase,
  result: unknown,
  only?: ReadonlySet<string>
): Promise<unknown> {
  const rows = Array.isArray(result) ? result.filter(isRecord) : isRecord(result) ? [result] : []
  await withCancellation(scope, () => resource.load(db, rows, only))
  return result
}

/**
 * `next` of a handler's answer: at once when the handler answered at once (the default handlers on
 * SQLite), and Fastify then sends the route's answer at once; else once the promise settles. Fastify sends a
 * value a handler returns at once, but not `undefined`, which only a promise may answer.
 */
function settle (answer: unknown, next: (value: unknown) => unknown): unknown {
  if (answer instanceof Promise) return answer.then(next)
  const result = next(answer)
  return result === undefined ? Promise.resolve(result) : result
}

/**
 * A client that hangs up cancels the PostgreSQL query serving it (see dialect/postgres-cancel.ts). Not
 * an async function: a handler that answers with `reply.send()` and returns nothing keeps doing so.
 */
export function cancellable (handler: RouteHandlerMethod): RouteHandlerMethod {
  return function (request, reply) {
    return runWithCancellation(reply.raw, () => handler.call(this, request, reply))
  }
}

// One externals record per viewset: its objects' JSON text is then written once (schema/serializer.ts).
const viewsetExternals = new WeakMap<RouteContext, Record<string, JsonSchema>>()

/** The schemas a viewset's response serializers reach by `$ref`: its row and the problem document. */
function externalsOf (context: RouteContext): Record<string, JsonSchema> {
  let externals = viewsetExternals.get(context)
  if (externals === undefined) {
    externals = {
      [context.entity.$id]: { ...context.serialized, $id: context.entity.$id },
      [problemSchemaId]: problemSchema,
    }
    viewsetExternals.set(context, externals)
  }
  return externals
}

/**
 * Compiles the response serializers of the generated routes against the serializer's entity (nullable
 * scalars coerced, see `deriveSerializerSchema`), where Fastify's own compiler would read the documented one.
 */
function serializerCompiler (
  context: RouteContext,
  serialized: Record<number, JsonSchema> = {}
): FastifySerializerCompiler<unknown> {
  const externals = externalsOf(context)
  // `serialized`: a status whose documented schema is not the one to write with (the anyOf of a whole and a
  // partial row is written as a whole row; `?fields=` answers have serializers of their own).
  return ({ schema, httpStatus }) =>
    sharedSerializer(serialized[Number(httpStatus)] ?? (isRecord(schema) ? schema : {}), externals)
}

/** A `$ref` to a component of the scope. */
function ref (id: string): JsonSchema {
  return { $ref: `${id}#` }
}

/** A whole row, or a `?fields=` row (GET and LIST answers). */
function rowOrPartial (context: RouteContext): JsonSchema {
  return { anyOf: [ref(context.components.row.$id), ref(context.components.partial.$id)] }
}

/** The body of a write, as documented (a component) and validated (the scope's validator compiler resolves it). */
function bodyRef (context: RouteContext, method: 'POST' | 'PUT' | 'PATCH'): JsonSchema {
  return ref(bodyComponentId(context.name, method))
}

/** The schema parts every generated route shares: OpenAPI metadata, error responses, security. */
function baseSchema (
  method: ViewsetMethod,
  context: RouteContext
): Record<string, unknown> & { response: Record<number, JsonSchema> } {
  const secured = context.protectedMethods.includes(method)
  // An open method that verifies a token when one is sent: the token is optional, and an invalid one is a 401.
  const optional = !secured && context.verifiesTokens
  const schema: Record<string, unknown> & { response: Record<number, JsonSchema> } = {
    operationId: `${operationVerbs[method]}${context.name}`,
    summary: summaries[method](context.name),
    tags: [...context.tags],
    response: problemResponses(
      errorStatuses(method, { secured, optionalToken: optional, requireIfMatch: context.requireIfMatch })
    ),
    // Every generated route rejects unknown query parameters, as LIST does.
    querystring: { type: 'object', properties: {}, additionalProperties: false },
  }
  if (secured) schema.security = [{ [securitySchemeName]: [] }]
  else if (optional) schema.security = [{}, { [securitySchemeName]: [] }]
  if (method !== 'LIST' && method !== 'POST' && method !== 'BULK') {
    const params = deriveParams(context.entity, context.primaryKey)
    // An example id, so that tools that call every operation (Dredd) have one.
    const id = propertiesOf(params).id
    const example = exampleOf(id)
    if (id !== undefined && example !== undefined) id.examples = [example]
    schema.params = params
  }
  return schema
}

/** Records the If-Match condition of a write for the default handler (requireIfMatch: none is a 428). */
function setPrecondition (request: FastifyRequest, context: RouteContext): void {
  const precondition = preconditionOf(request.headers['if-match'], context.requireIfMatch)
  if (precondition !== undefined) stateOf(request)[preconditionKey] = precondition
}

/** Hooks before the body is read: no body on reads and DELETE, the bearer check of protected methods, and of open ones
 * when a token is sent. */
function onRequestOf (method: ViewsetMethod, context: RouteContext): Pick<RouteOptions, 'onRequest'> {
  const hooks = []
  // DELETE takes no body: an empty one is no body, whatever Content-Type a client sets by default. Fastify
  // never reads a GET's body (LIST and GET need no hook).
  if (method === 'DELETE') hooks.push(ignoreEmptyBody)
  if (context.protectedMethods.includes(method)) hooks.push(authHook(method, context.auth))
  else if (context.verifiesTokens) hooks.push(openTokenHook(context.auth))
  return hooks.length > 0 ? { onRequest: hooks } : {}
}

/** LIST `/`: pagination checked, the handler's rows, their relations, then `Link`, `X-Total-Count` and `?fields=`. */
function listRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const { resource, readDb, list, maxOffset, pagination } = context
  const schema = baseSchema('LIST', context)
  schema.querystring = list.querystring
  schema.response[200] = {
    description: 'A page of rows (with `?fields=`, only the chosen fields)',
    type: 'array',
    items: rowOrPartial(context),
    ...(list.headers === undefined ? {} : { headers: list.headers }),
  }
  return {
    method: 'GET',
    url: '',
    schema,
    serializerCompiler: serializerCompiler(context, { 200: { type: 'array', items: ref(context.entity.$id) } }),
    ...onRequestOf('LIST', context),
    // Before validation, which would only call `offset` unknown: the 400 says to page by cursor.
    ...(pagination === 'cursor'
      ? {
          preValidation: (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
            done('offset' in queryOf(request) ? offsetWithCursor() : undefined)
          },
        }
      : {}),
    handler: cancellable((request, reply) => {
      const scope = currentCancellation()
      // An overridden list gets the same bound on offset as the default one.
      parsePagination(queryOf(request), maxOffset, pagination)
      return settle(handlers.list(request, reply, request.viewsetToken), (rows) => {
        const page = stateOf(request)[listPageKey] ?? undefined
        if (!resource.hasRelations) return listed(request, reply, rows, page, maxOffset)
        // A relation the selection leaves out is not loaded at all; without one, `defaultRelations` load.
        return withRelations(
          scope,
          resource,
          readDb,
          rows,
          page?.query.fields?.relations ?? context.fields.defaultRelations
        ).then(() => listed(request, reply, rows, page, maxOffset))
      })
    }),
  }
}

/**
 * A LIST's rows, with what the default LIST read (`page`) said in headers: `X-Total-Count`, `Link`, and the
 * `?fields=` serializer. Set last, so that an error thrown before is serialized as a problem, not as rows.
 */
function listed (
  request: FastifyRequest,
  reply: FastifyReply,
  rows: unknown,
  page: ListPage | undefined,
  maxOffset: number
): unknown {
  if (page === undefined) return rows
  const { query, total, cursors } = page
  if (total !== undefined) reply.header('x-total-count', String(total))
  if (query.fields !== undefined) reply.serializer(query.fields.serialize).type('application/json; charset=utf-8')
  const count = Array.isArray(rows) ? rows.length : 0
  const link =
    cursors === undefined
      ? linkHeader(request.url, { limit: query.limit, offset: query.offset, rows: count, total, maxOffset })
      : cursorLinkHeader(request.url, { limit: query.limit, ...cursors })
  if (link !== undefined) reply.header('link', link)
  return rows
}

/** GET `/:id`: the row, its relations, and the `?fields=` serializer. */
function getRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const { resource, readDb, fields } = context
  const schema = baseSchema('GET', context)
  schema.querystring = { type: 'object', properties: fields.properties, additionalProperties: false }
  schema.response[200] = {
    description: 'The row (with `?fields=`, only the chosen fields)',
    ...rowOrPartial(context),
    headers: etagHeaders,
  }
  schema.response[304] = {
    type: 'null',
    description: 'Not modified: If-None-Match names the current ETag',
    headers: etagHeaders,
  }
  return {
    method: 'GET',
    url: '/:id',
    schema,
    serializerCompiler: serializerCompiler(context, { 200: ref(context.entity.$id) }),
    ...onRequestOf('GET', context),
    handler: cancellable((request, reply) => {
      const scope = currentCancellation()
      const { versionField } = context
      let selection = fields.selection(queryOf(request))
      // The version column is read with any selection: it is the ETag (it is written only if chosen).
      if (selection !== undefined && versionField !== undefined && !selection.columns.includes(versionField)) {
        selection = {
          ...selection,
          shape: `${selection.shape}|${versionField}`,
          columns: [...selection.columns, versionField],
        }
      }
      if (selection !== undefined) stateOf(request)[selectionKey] = selection
      const answer = (row: unknown): unknown => {
        if (!isRecord(row)) return row
        // Without a version column, only the whole row has a tag (a hash of it).
        let body: unknown = row
        let etag: string | undefined
        if (selection === undefined) ({ etag, body } = tagged(context, row))
        else if (versionField !== undefined) etag = versionTag(row[versionField])
        if (etag !== undefined) {
          reply.header('etag', etag)
          if (noneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send()
        }
        // Set last, so that an error thrown above is serialized as a problem, not as a row.
        if (selection !== undefined) reply.serializer(selection.serializeRow)
        reply.type('application/json; charset=utf-8')
        return body
      }
      return settle(handlers.getElement(request, reply, request.viewsetToken), (found) =>
        resource.hasRelations
          ? withRelations(scope, resource, readDb, found, selection?.relations ?? fields.defaultRelations).then(answer)
          : answer(found)
      )
    }),
  }
}

/**
 * With `conflictFields`: the `Prefer` request header, and the 200 a merge into an existing row answers
 * (`rows`: the answer's schema), both answers carrying `Preference-Applied` when the merge was applied.
 */
function documentMerge (
  schema: ReturnType<typeof baseSchema>,
  context: RouteContext,
  answer: JsonSchema,
  bulk: boolean
): void {
  const { conflictFields } = context
  if (conflictFields === undefined) return
  const fields = conflictFields.join(', ')
  schema.headers = {
    type: 'object',
    properties: {
      prefer: {
        type: 'string',
        description: `RFC 7240 preferences. \`${mergeDuplicates}\` upserts: ${bulk ? 'each element updates' : 'the body updates'} the row with the same ${fields} (only the fields sent; a row outside your scope is a 409), else is inserted. Every ${bulk ? 'element' : 'body'} must then send ${fields}. Other preferences are ignored.`,
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

/** POST `/`: 201, the row as stored, and `Location` unless the handler set one; 200 when an upsert updated a row. */
function postRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const { db, primaryKey, prefix } = context
  const schema = baseSchema('POST', context)
  schema.body = bodyRef(context, 'POST')
  schema.response[201] = {
    description: 'The row as stored',
    ...ref(context.components.row.$id),
    headers: { Location: documentedHeaders.location, ...etagHeaders },
  }
  documentMerge(schema, context, ref(context.components.row.$id), false)
  return {
    method: 'POST',
    url: '',
    schema,
    serializerCompiler: serializerCompiler(context),
    ...onRequestOf('POST', context),
    handler: cancellable((request, reply) => {
      const scope = currentCancellation()
      reply.code(201)
      return settle(handlers.createElement(request, reply, request.viewsetToken), (row) => {
        const id = isRecord(row) ? row[primaryKey] : undefined
        // Only a created row has a new URL to point at (an upsert that updated answers 200).
        if (reply.statusCode === 201 && id !== undefined && id !== null && !reply.hasHeader('location')) {
          reply.header('location', `${prefix}/${encodeURIComponent(String(id))}`)
        }
        return sendWritten(scope, context, reply, db, row)
      })
    }),
  }
}

/** BULK `/bulk`: 201 and the rows as stored, in the order of the elements, with their relations. */
function bulkRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const { resource, db, maxBulk } = context
  const schema = baseSchema('BULK', context)
  // Inline, not the create component: a `$ref` inside an array is not resolved by the scope's validator compiler.
  const element = deriveBody(context.entity, false)
  const example = exampleOf(element)
  schema.body = {
    type: 'array',
    items: element,
    ...(example === undefined ? {} : { examples: [[example]] }),
    maxItems: maxBulk,
    description: `At most ${maxBulk} elements (maxBulk; more is a 400), each a body of POST. Written all or none, in one transaction; an error names its element by JSON pointer (\`/3/name\`).`,
  }
  schema.response[201] = { description: 'The rows as stored', type: 'array', items: ref(context.components.row.$id) }
  documentMerge(schema, context, { type: 'array', items: ref(context.components.row.$id) }, true)
  return {
    method: 'POST',
    url: '/bulk',
    schema,
    serializerCompiler: serializerCompiler(context),
    ...onRequestOf('BULK', context),
    handler: cancellable(async (request, reply) => {
      const scope = currentCancellation()
      reply.code(201)
      return await withRelations(
        scope,
        resource,
        db,
        await handlers.createElements(request, reply, request.viewsetToken)
      )
    }),
  }
}

/** PUT and PATCH `/:id`: the row as stored, or 404. */
function updateRoute (method: 'PUT' | 'PATCH', handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const { db } = context
  const schema = baseSchema(method, context)
  const body = bodyRef(context, method)
  // PATCH takes JSON Merge Patch (RFC 7396) too: the same body, the same top-level merge.
  schema.body =
    method === 'PATCH'
      ? { content: { 'application/json': { schema: body }, [mergePatchType]: { schema: body } } }
      : body
  schema.response[200] = { description: 'The row as stored', ...ref(context.components.row.$id), headers: etagHeaders }
  const unsupported = schema.response[415]
  if (method === 'PATCH' && unsupported !== undefined) {
    schema.response[415] = {
      ...unsupported,
      headers: {
        'Accept-Patch': {
          ...documentedHeaders.acceptPatch,
          description: `The media types PATCH accepts: ${acceptPatch}`,
        },
      },
    }
  }
  return {
    method,
    url: '/:id',
    schema,
    serializerCompiler: serializerCompiler(context),
    ...onRequestOf(method, context),
    handler: cancellable((request, reply) => {
      const scope = currentCancellation()
      setPrecondition(request, context)
      return settle(handlers.updateElement(request, reply, request.viewsetToken, method === 'PATCH'), (row) =>
        sendWritten(scope, context, reply, db, row)
      )
    }),
  }
}

/** DELETE `/:id`: 204, or 404. */
function deleteRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const schema = baseSchema('DELETE', context)
  schema.response[204] = { type: 'null', description: 'Deleted' }
  return {
    method: 'DELETE',
    url: '/:id',
    schema,
    serializerCompiler: serializerCompiler(context),
    ...onRequestOf('DELETE', context),
    handler: cancellable((request, reply) => {
      setPrecondition(request, context)
      return settle(handlers.deleteElement(request, reply, request.viewsetToken), () => reply.code(204).send())
    }),
  }
}

/**
 * The generated routes of the chosen methods, one explicit declaration each: method, url, schema
 * (operationId, bodies, responses), hooks and the handler that calls the viewset. A request reads
 * route (here) → handler (viewset.ts) → data layer (resource.ts) → SQL → serializer (here).
 */
export function viewsetRoutes (
  methods: readonly ViewsetMethod[],
  handlers: RouteHandlers,
  context: RouteContext
): RouteOptions[] {
  return methods.map((method) => {
    switch (method) {
      case 'LIST':
        return listRoute(handlers, context)
      case 'GET':
        return getRoute(handlers, context)
      case 'POST':
        return postRoute(handlers, context)
      case 'BULK':
        return bulkRoute(handlers, context)
      case 'PUT':
      case 'PATCH':
        return updateRoute(method, handlers, context)
      case 'DELETE':
        return deleteRoute(handlers, context)
      default:
        throw new TypeError(`unknown viewset method ${String(method satisfies never)}`)
    }
  })
}
