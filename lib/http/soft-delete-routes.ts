import type { FastifyRequest, preHandlerAsyncHookHandler, RouteOptions } from 'fastify'
import type { Precondition } from '../data/precondition.js'
import { ViewsetErrors } from '../errors.js'
import { currentCancellation } from '../execution/cancellation.js'
import { andThen } from '../execution/eventually.js'
import type { ViewsetMethod } from '../options.js'
import { deletedQuery, grantDeleted } from '../query/soft-delete-term.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import { documentedHeaders, problemResponses } from '../schema/openapi.js'
import type { RouteContext, SoftDeleteRouting } from './route-context.js'
import { addHeader, baseOf, conditionalHeaders, ref, serializerCompiler } from './route-schemas.js'
import type { RouteSchema } from './route-schemas.js'
import { sendWritten } from './row-answers.js'

// The routes of soft delete (issue 39, item 2): RESTORE `POST {prefix}/:id/restore` and PURGE `DELETE
// {prefix}/:id/purge` (each registered only when `methods` lists it), and `?deleted=include|only` on LIST and GET,
// granted by `softDelete.showDeleted` (a 403 for every other caller, and for all without it).

/** The hooks routes.ts gives every generated route of a method: the bearer check, then the field rules' views. */
type RouteHooks = Pick<RouteOptions, 'onRequest' | 'preValidation' | 'preHandler'>

/** The If-Match of a request that writes one row, as routes.ts reads it. */
type PreconditionOf = (request: FastifyRequest) => Precondition | undefined

/**
 * The hook of LIST and GET on a soft-deleting viewset: a request with `?deleted=` is granted it when `showDeleted`
 * returns true for its caller, else answered 403 before any statement runs. None on other methods.
 */
export function deletedHooks (context: RouteContext, method: ViewsetMethod): preHandlerAsyncHookHandler[] {
  const plan = context.softDelete?.plan
  if (plan === undefined || (method !== 'LIST' && method !== 'GET')) return []
  const read: 'LIST' | 'GET' = method
  return [async (request) => {
    const asked = isRecord(request.query) ? request.query.deleted : undefined
    if (asked !== 'include' && asked !== 'only') return
    const shown = await plan.showDeleted?.({ request, token: request.viewsetToken, method: read })
    if (shown !== true) throw new ViewsetErrors.DeletedRowsHidden()
    grantDeleted(request, asked === 'only' ? 'deleted' : 'any')
  }]
}

/** GET's schema with `?deleted=` and its 403, on a soft-deleting viewset; LIST's query string has it already. */
export function withDeletedQuery (schema: RouteSchema, context: RouteContext, method: 'LIST' | 'GET'): RouteSchema {
  if (context.softDelete === undefined) return schema
  if (method === 'GET' && isRecord(schema.querystring)) {
    const properties = { ...propertiesOf(schema.querystring), deleted: { ...deletedQuery } }
    schema.querystring = { ...schema.querystring, properties }
  }
  if (schema.response[403] === undefined) schema.response = { ...schema.response, ...problemResponses([403]) }
  return schema
}

/** RESTORE's schema: no body, the row restored with its ETag, If-Match. */
function restoreSchema (context: RouteContext): RouteSchema {
  const schema = baseOf('RESTORE', context)
  schema.description = 'Marks a deleted row live again (a row that lives is answered as it is). No body.'
  const row: JsonSchema = ref(context.schemas.components.row.$id)
  schema.response[200] = { description: 'The row restored', ...row, headers: { ETag: documentedHeaders.etag } }
  addHeader(schema, 'if-match', conditionalHeaders['if-match'])
  return schema
}

/** PURGE's schema: no body, 204, If-Match. */
function purgeSchema (context: RouteContext): RouteSchema {
  const schema = baseOf('PURGE', context)
  schema.description = 'Removes the row from the table, whether it was deleted (soft) or not. No body.'
  schema.response[204] = { type: 'null', description: 'Removed' }
  addHeader(schema, 'if-match', conditionalHeaders['if-match'])
  return schema
}

/** The handlers of a soft-deleting viewset, or the startup error of a method that needs them. */
function handlersOf (context: RouteContext, method: 'RESTORE' | 'PURGE'): SoftDeleteRouting {
  if (context.softDelete === undefined) throw new ViewsetErrors.InvalidOption('methods', `${method} needs softDelete`)
  return context.softDelete
}

/**
 * The route of RESTORE or PURGE, with the hooks routes.ts gives every route of that method; `preconditionOf` reads
 * its If-Match as PATCH's and DELETE's are read.
 *
 * @example
 * ```ts
 * softDeleteRoute('RESTORE', context, hooksOf('RESTORE', context), preconditionOf)
 * ```
 */
export function softDeleteRoute (
  method: 'RESTORE' | 'PURGE',
  context: RouteContext,
  hooks: RouteHooks,
  preconditionOf: PreconditionOf
): RouteOptions {
  const handlers = handlersOf(context, method)
  if (method === 'PURGE') {
    return {
      method: 'DELETE',
      url: '/:id/purge',
      schema: purgeSchema(context),
      serializerCompiler: serializerCompiler(context.schemas),
      ...hooks,
      handler: (request, reply) => andThen(handlers.purge(request, request.viewsetToken, preconditionOf(request)),
        () => reply.code(204).send()),
    }
  }
  return {
    method: 'POST',
    url: '/:id/restore',
    schema: restoreSchema(context),
    serializerCompiler: serializerCompiler(context.schemas),
    ...hooks,
    handler: (request, reply) => {
      const scope = currentCancellation()
      return andThen(handlers.restore(request, request.viewsetToken, preconditionOf(request)), (row) =>
        sendWritten(scope, context, reply, row))
    },
  }
}
