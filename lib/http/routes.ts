import type { FastifyReply, FastifyRequest, RouteHandlerMethod, RouteOptions } from 'fastify'
import { andThen } from '../execution/eventually.js'
import { currentCancellation, runWithCancellation } from '../execution/cancellation.js'
import { serving } from '../execution/served-request.js'
import type { ViewsetMethod } from '../options.js'
import type { FieldSelection, FieldsPlan } from '../query/fields.js'
import { offsetWithCursor, parsePagination } from '../query/list-query.js'
import { isRecord } from '../schema/object-schema.js'
import { collectionMethods, partialContentType } from '../schema/openapi.js'
import { authHook, openTokenHook } from './auth.js'
import { bulkWriteRoute } from './bulk-write-routes.js'
import { noneMatch, preconditionOf, versionTag } from './conditional-requests.js'
import type { ListPage } from './route-context.js'
import { fieldHooks, hiddenFromRead, hideFields, narrowFieldsPlan } from './field-hiding.js'
import type { FieldHiding } from './field-hiding.js'
import { cursorLinkHeader, linkHeader } from './link.js'
import { applyMinimal, jsonType, loadRelations, sendMinimal, sendWritten, tagRow } from './row-answers.js'
import { expandPrefix } from './parent-binding.js'
import { prefersReturnMinimal } from './prefer-header.js'
import type { RouteContext, RouteHandlers } from './route-context.js'
import { tracedRoute } from '../observability/traced-handler.js'
import { aggregateRoute } from './aggregate-route.js'
import { deletedHooks, softDeleteRoute, withDeletedQuery } from './soft-delete-routes.js'
import { answerChangesSince } from './changes-since.js'
import { answerAsOf, historyRoute } from './history-route.js'
import {
  bulkSchema,
  deleteSchema,
  getSchema,
  listSchema,
  postSchema,
  serializerCompiler,
  updateSchema,
  wholeRowSerializer,
} from './route-schemas.js'

// A request reads down this file's handlers: the route parses what HTTP says (pagination, `?fields=`,
// If-Match), calls the handler (default-handlers.ts or an override) with it, loads the relations of what
// the handler returns, and sets the headers from it (`Link`, `X-Total-Count`, `ETag`, `Location`).

/** The validated query string: its schema has type object. */
function queryOf (request: FastifyRequest): Record<string, unknown> {
  return isRecord(request.query) ? request.query : {}
}

/**
 * The `?fields=` selection of a GET, or `undefined` for every field. The version column is read with any
 * selection: it is the ETag (it is written only if chosen).
 */
export function selectFields (
  query: Record<string, unknown>,
  fields: FieldsPlan,
  versionField: string | undefined
): FieldSelection | undefined {
  const selection = fields.selection(query)
  if (selection === undefined || versionField === undefined || selection.columns.includes(versionField)) {
    return selection
  }
  return { ...selection, shape: `${selection.shape}|${versionField}`, columns: [...selection.columns, versionField] }
}

/**
 * A client that hangs up cancels the PostgreSQL query serving it (see dialect/postgres/postgres-cancel.ts).
 * Not an async function: a handler that answers with `reply.send()` and returns nothing keeps doing so.
 */
export function cancellable (handler: RouteHandlerMethod): RouteHandlerMethod {
  return function (request, reply) {
    return runWithCancellation(reply.raw, () => handler.call(this, request, reply))
  }
}

/**
 * A custom route's handler, run serving its request: the viewset helpers it calls apply that request's rule
 * (execution/served-request.ts). Not an async function, as {@link cancellable}.
 */
export function servedBy (handler: RouteHandlerMethod): RouteHandlerMethod {
  return function (request, reply) {
    return serving(request, () => handler.call(this, request, reply))
  }
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

/** Hooks before the body is read: no body on DELETE, the bearer check of protected methods, and of open ones
 * when a token is sent. */
function onRequestOf (method: ViewsetMethod, { auth }: RouteContext): Pick<RouteOptions, 'onRequest'> {
  const hooks = []
  // DELETE takes no body: an empty one is no body, whatever Content-Type a client sets by default. Fastify
  // never reads a GET's body (LIST and GET need no hook).
  if (method === 'DELETE' || method === 'DELETE_MANY' || method === 'RESTORE' || method === 'PURGE') {
    hooks.push(ignoreEmptyBody)
  }
  if (auth.protectedMethods.includes(method)) hooks.push(authHook(method, auth.options))
  else if (auth.verifiesTokens) hooks.push(openTokenHook(auth.options))
  return hooks.length > 0 ? { onRequest: hooks } : {}
}

/** The fields GET hides from the caller, under field rules: the tag an If-Match compares is of the row without them. */
function readHidden (context: RouteContext, request: FastifyRequest): ReadonlySet<string> | undefined {
  return context.hiding === undefined ? undefined : hiddenFromRead(request)
}

/** The hooks of a method's route: the bearer check, then (under field rules) the request's views, in this order. */
function hooksOf (method: ViewsetMethod, context: RouteContext, before: RouteOptions['preValidation'] = []) {
  const fields = fieldHooks(context.hiding, method)
  // A composite key's parts are cut from the path before the params are validated, and joined after (key-path.ts).
  const keyPath = collectionMethods.has(method) ? undefined : context.schemas.keyPath
  const first = [...(keyPath === undefined ? [] : [keyPath.split]), ...(Array.isArray(before) ? before : [before])]
  const preValidation = [...first, ...fields.preValidation]
  // `?deleted=` is granted (or a 403) before any field rule reads the request.
  const joined = keyPath === undefined ? [] : [keyPath.join]
  const preHandler = [...joined, ...deletedHooks(context, method), ...fields.preHandler]
  return {
    ...onRequestOf(method, context),
    ...(preValidation.length > 0 ? { preValidation } : {}),
    ...(preHandler.length > 0 ? { preHandler } : {}),
    ...(keyPath === undefined ? {} : { config: { viewsetKeyTemplate: keyPath.template } }),
  }
}

/** The If-Match condition of a PUT, PATCH or DELETE (requireIfMatch: none is a 428 at the write). */
function preconditionOfRequest (request: FastifyRequest, context: RouteContext) {
  const precondition = preconditionOf(request.headers['if-match'], context.versions.requireIfMatch)
  // The tag compared is of the row as this request's GET served it: its relations under its rules.
  return precondition?.kind === 'match'
    ? { ...precondition, reader: { request, token: request.viewsetToken, hidden: readHidden(context, request) } }
    : precondition
}

/**
 * Sends a LIST's rows, with what the default LIST read said in headers: `X-Total-Count`, `Link`, and the
 * `?fields=` serializer. Set last, so that an error thrown before is serialized as a problem, not as rows.
 */
function sendPage (
  request: FastifyRequest,
  reply: FastifyReply,
  page: ListPage,
  { maxOffset, hiding }: { maxOffset: number, hiding: FieldHiding | undefined }
): unknown {
  const { rows, query, total, cursors, counted } = page
  if (hiding !== undefined) hideFields(request, rows)
  if (query === undefined) return rows
  if (total !== undefined) reply.header('x-total-count', String(total))
  if (counted !== undefined) reply.header('preference-applied', `count=${counted}`)
  if (query.fields !== undefined) reply.serializer(query.fields.serialize).type(partialContentType)
  const count = Array.isArray(rows) ? rows.length : 0
  const link =
    cursors === undefined
      ? linkHeader(request.url, { limit: query.limit, offset: query.offset, rows: count, total, maxOffset })
      : cursorLinkHeader(request.url, { limit: query.limit, ...cursors })
  if (link !== undefined) reply.header('link', link)
  return rows
}

/** LIST `/`: pagination checked, the handler's page, its relations, then `Link`, `X-Total-Count` and `?fields=`. */
function listRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const { resource, fields } = context
  const { maxOffset, pagination } = context.paging
  // Before validation, which would only call `offset` unknown: the 400 says to page by cursor.
  const refuseOffset = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    done('offset' in queryOf(request) ? offsetWithCursor() : undefined)
  }
  return {
    method: 'GET',
    url: '',
    schema: withDeletedQuery(listSchema(context), context, 'LIST'),
    serializerCompiler: wholeRowSerializer(context.schemas, true),
    ...hooksOf('LIST', context, pagination === 'cursor' ? [refuseOffset] : []),
    handler: cancellable((request, reply) => {
      const scope = currentCancellation()
      const { changes } = context
      if (changes !== undefined && queryOf(request).changed_since !== undefined) {
        return answerChangesSince(context, changes, request, reply, scope)
      }
      // An overridden list gets the same bound on offset as the default one.
      parsePagination(queryOf(request), maxOffset, pagination)
      return andThen(handlers.list(request, reply, request.viewsetToken), (page) => {
        if (!resource.hasRelations) return sendPage(request, reply, page, { maxOffset, hiding: context.hiding })
        // A relation the selection leaves out is not loaded at all; without one, `defaultRelations` load.
        const only = page.query?.fields?.relations ?? fields.defaultRelations
        return loadRelations(scope, request, resource, context.readerOf(request), page.rows, only).then(() =>
          sendPage(request, reply, page, { maxOffset, hiding: context.hiding })
        )
      })
    }),
  }
}

/** Sends GET's row: its ETag (or a 304), and the `?fields=` serializer of a selection. */
function sendElement (
  context: RouteContext,
  request: FastifyRequest,
  reply: FastifyReply,
  row: unknown,
  selection: FieldSelection | undefined
): unknown {
  if (!isRecord(row)) return row
  if (context.hiding !== undefined) hideFields(request, row)
  const { versionField } = context.versions
  // Without a version column, only the whole row has a tag (a hash of it).
  let body: unknown = row
  let etag: string | undefined
  if (selection === undefined) ({ etag, body } = tagRow(context, row))
  else if (versionField !== undefined) etag = versionTag(row[versionField])
  if (etag !== undefined) {
    reply.header('etag', etag)
    if (noneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send()
  }
  // Set last, so that an error thrown above is serialized as a problem, not as a row.
  if (selection !== undefined) reply.serializer(selection.serializeRow)
  reply.type(selection === undefined ? jsonType : partialContentType)
  return body
}

/** GET `/:id`: `?fields=` parsed and handed to the handler, the row, its relations, its ETag. */
function getRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const { resource, fields } = context
  return {
    method: 'GET',
    url: '/:id',
    schema: withDeletedQuery(getSchema(context), context, 'GET'),
    serializerCompiler: wholeRowSerializer(context.schemas, false),
    ...hooksOf('GET', context),
    handler: cancellable((request, reply) => {
      const { history } = context
      if (history !== undefined && queryOf(request).as_of !== undefined) {
        return answerAsOf(context, history, request, reply)
      }
      const scope = currentCancellation()
      const narrow = context.hiding === undefined ? undefined : narrowFieldsPlan(request)
      const selection = selectFields(queryOf(request), narrow ?? fields, context.versions.versionField)
      return andThen(handlers.getElement(request, reply, request.viewsetToken, selection), (found) =>
        resource.hasRelations
          ? loadRelations(scope, request, resource, context.readerOf(request), found,
            selection?.relations ?? fields.defaultRelations)
            .then((loaded) => sendElement(context, request, reply, loaded, selection))
          : sendElement(context, request, reply, found, selection)
      )
    }),
  }
}

/** POST `/`: 201, the row as stored, and `Location` unless the handler set one; 200 when an upsert updated a row. */
function postRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const { key } = context.schemas
  return {
    method: 'POST',
    url: '',
    schema: postSchema(context),
    serializerCompiler: serializerCompiler(context.schemas),
    ...hooksOf('POST', context),
    handler: cancellable((request, reply) => {
      const scope = currentCancellation()
      reply.code(201)
      return andThen(handlers.createElement(request, reply, request.viewsetToken), (row) => {
        // Prefer: resolution=ignore-duplicates ignored the row: no body, no Location.
        if (reply.statusCode === 204) return reply.send()
        // Only a created row has a new URL to point at (an upsert that updated answers 200).
        if (reply.statusCode === 201 && isRecord(row) && key.present(row) && !reply.hasHeader('location')) {
          reply.header('location', `${expandPrefix(context.prefix, request.params)}/${key.format(key.of(row))}`)
        }
        if (prefersReturnMinimal(request.headers.prefer)) return sendMinimal(scope, context, reply, row)
        return sendWritten(scope, context, reply, row)
      })
    }),
  }
}

/** BULK `/bulk`: 201 and the rows as stored, in the order of the elements, with their relations. */
function bulkRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const { resource, db } = context
  return {
    method: 'POST',
    url: '/bulk',
    schema: bulkSchema(context),
    serializerCompiler: serializerCompiler(context.schemas),
    ...hooksOf('BULK', context),
    handler: cancellable(async (request, reply) => {
      const scope = currentCancellation()
      reply.code(201)
      const rows = await handlers.createElements(request, reply, request.viewsetToken)
      if (prefersReturnMinimal(request.headers.prefer)) {
        applyMinimal(reply)
        return await reply.code(reply.statusCode === 201 ? 201 : 204).send()
      }
      await loadRelations(scope, request, resource, db, rows)
      if (context.hiding !== undefined) hideFields(request, rows)
      return rows
    }),
  }
}

/** PUT and PATCH `/:id`: If-Match read and handed to the handler, the row as stored, or 404. */
function updateRoute (method: 'PUT' | 'PATCH', handlers: RouteHandlers, context: RouteContext): RouteOptions {
  const partial = method === 'PATCH'
  return {
    method,
    url: '/:id',
    schema: updateSchema(method, context),
    serializerCompiler: serializerCompiler(context.schemas),
    ...hooksOf(method, context),
    handler: cancellable((request, reply) => {
      const scope = currentCancellation()
      const precondition = preconditionOfRequest(request, context)
      return andThen(handlers.updateElement(request, reply, request.viewsetToken, partial, precondition), (row) =>
        prefersReturnMinimal(request.headers.prefer)
          ? sendMinimal(scope, context, reply, row)
          : sendWritten(scope, context, reply, row)
      )
    }),
  }
}

/** DELETE `/:id`: If-Match read and handed to the handler, 204, or 404. */
function deleteRoute (handlers: RouteHandlers, context: RouteContext): RouteOptions {
  return {
    method: 'DELETE',
    url: '/:id',
    schema: deleteSchema(context),
    serializerCompiler: serializerCompiler(context.schemas),
    ...hooksOf('DELETE', context),
    handler: cancellable((request, reply) => {
      const precondition = preconditionOfRequest(request, context)
      return andThen(handlers.deleteElement(request, reply, request.viewsetToken, precondition), () =>
        reply.code(204).send()
      )
    }),
  }
}

/**
 * The generated routes of the chosen methods, one explicit declaration each: method, url, schema
 * (route-schemas.ts), hooks and the handler. A request reads route (here) → handler (default-handlers.ts or
 * the viewset's override) → table gateway (data/table-gateway.ts) → statement → serializer.
 */
export function viewsetRoutes (
  methods: readonly ViewsetMethod[],
  handlers: RouteHandlers,
  context: RouteContext
): RouteOptions[] {
  const { table, prefix, resource } = context
  const classify = (error: unknown) => resource.dialect.classify(error)
  return methods.map((method) => tracedRoute(routeOf(method, handlers, context), table, method, prefix, classify))
}

/** The route of one method. */
function routeOf (method: ViewsetMethod, handlers: RouteHandlers, context: RouteContext): RouteOptions {
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
    case 'AGGREGATE':
      return aggregateRoute(context, hooksOf('AGGREGATE', context))
    case 'HISTORY':
      return historyRoute(context, hooksOf('HISTORY', context))
    case 'PATCH_MANY':
    case 'BULK_PATCH':
    case 'DELETE_MANY': {
      const route = bulkWriteRoute(method, handlers, context, hooksOf(method, context))
      return { ...route, handler: cancellable(route.handler) }
    }
    case 'RESTORE':
    case 'PURGE': {
      const of = (request: FastifyRequest) => preconditionOfRequest(request, context)
      const route = softDeleteRoute(method, context, hooksOf(method, context), of)
      return { ...route, handler: cancellable(route.handler) }
    }
    default:
      throw new TypeError(`unknown viewset method ${String(method satisfies never)}`)
  }
}
