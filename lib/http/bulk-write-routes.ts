import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { currentCancellation } from '../execution/cancellation.js'
import type { CancellationContext } from '../execution/cancellation.js'
import type { Row } from '../sql.js'
import { hideFields } from './field-hiding.js'
import { preferences } from './prefer-header.js'
import type { ManyWritten, RouteContext, RouteHandlers } from './route-context.js'
import { serializerCompiler } from './route-schemas.js'
import { affectedSchema, bulkPatchSchema, manySchema } from './bulk-write-schemas.js'
import { applyMinimal, loadRelations } from './row-answers.js'

// The routes of the bulk writes (issue 38 item 1): PATCH_MANY `PATCH {prefix}?<filters>`, DELETE_MANY
// `DELETE {prefix}?<filters>` and BULK_PATCH `PATCH {prefix}/bulk`. Each reads `Prefer`, calls its handler
// (http/bulk-write-handlers.ts), and answers `{"affected": N}`, the rows with their relations, or nothing.

/** The hooks routes.ts gives every generated route of a method: the bearer check, then the field rules' views. */
type RouteHooks = Pick<RouteOptions, 'onRequest' | 'preValidation' | 'preHandler'>

const returnRepresentation = 'return=representation'

/** What `Prefer: return=…` asks of a bulk write's answer, if anything. */
function returned (request: FastifyRequest): 'minimal' | 'representation' | undefined {
  const asked = preferences(request.headers.prefer).get('return')?.toLowerCase()
  return asked === 'minimal' || asked === 'representation' ? asked : undefined
}

/** The rows of a bulk write with their relations (the default ones), as the caller may read them. */
async function answerRows (scope: CancellationContext, context: RouteContext, request: FastifyRequest, rows: Row[]) {
  await loadRelations(scope, request, context.resource, context.db, rows, context.fields.defaultRelations)
  if (context.hiding !== undefined) hideFields(request, rows)
  return rows
}

/** Sends what a write by filter answers: nothing (`return=minimal`), its rows, or `{"affected": N}`. */
async function answerMany (
  scope: CancellationContext,
  context: RouteContext,
  reply: FastifyReply,
  written: ManyWritten,
  rowsSerializer: (rows: unknown) => string
): Promise<unknown> {
  const { request } = reply
  const asked = returned(request)
  if (asked === 'minimal') {
    applyMinimal(reply)
    return await reply.code(204).send()
  }
  if (asked === undefined) return { affected: written.affected }
  reply.header('preference-applied', returnRepresentation)
  const rows = await answerRows(scope, context, request, written.rows)
  // Set last: an error thrown above is serialized as a problem, not as rows.
  reply.serializer(rowsSerializer)
  return rows
}

/** The serializer of the rows a bulk write answers, when asked for them (the route's own writes `{"affected": N}`). */
function rowsSerializer (context: RouteContext): (rows: unknown) => string {
  const rows = { type: 'array', items: { $ref: `${context.schemas.entity.$id}#` } }
  return serializerCompiler(context.schemas)({ schema: rows, method: 'PATCH', url: '', httpStatus: '200' })
}

/** PATCH_MANY and DELETE_MANY: `{prefix}` with LIST's filters. */
function manyRoute (
  method: 'PATCH_MANY' | 'DELETE_MANY',
  handlers: RouteHandlers,
  context: RouteContext,
  hooks: RouteHooks
): RouteOptions {
  const write = method === 'PATCH_MANY' ? handlers.updateMany : handlers.deleteMany
  const serializeRows = rowsSerializer(context)
  return {
    method: method === 'PATCH_MANY' ? 'PATCH' : 'DELETE',
    url: '',
    schema: manySchema(method, context),
    serializerCompiler: serializerCompiler(context.schemas, { 200: affectedSchema }),
    ...hooks,
    handler: async (request, reply) => {
      const scope = currentCancellation()
      const written = await write(request, reply, request.viewsetToken, returned(request) === 'representation')
      return await answerMany(scope, context, reply, written, serializeRows)
    },
  }
}

/** BULK_PATCH: `PATCH {prefix}/bulk`, 200 and the rows as stored, in element order, or 204 with return=minimal. */
function bulkPatchRoute (handlers: RouteHandlers, context: RouteContext, hooks: RouteHooks): RouteOptions {
  return {
    method: 'PATCH',
    url: '/bulk',
    schema: bulkPatchSchema(context),
    serializerCompiler: serializerCompiler(context.schemas),
    ...hooks,
    handler: async (request, reply) => {
      const scope = currentCancellation()
      const rows = await handlers.updateElements(request, reply, request.viewsetToken)
      if (returned(request) === 'minimal') {
        applyMinimal(reply)
        return await reply.code(204).send()
      }
      return await answerRows(scope, context, request, rows)
    },
  }
}

/**
 * The route of a bulk write method, with the hooks routes.ts gives every route of that method.
 *
 * @example
 * ```ts
 * bulkWriteRoute('PATCH_MANY', handlers, context, hooksOf('PATCH_MANY', context))
 * ```
 */
export function bulkWriteRoute (
  method: 'PATCH_MANY' | 'BULK_PATCH' | 'DELETE_MANY',
  handlers: RouteHandlers,
  context: RouteContext,
  hooks: RouteHooks
): RouteOptions {
  return method === 'BULK_PATCH'
    ? bulkPatchRoute(handlers, context, hooks)
    : manyRoute(method, handlers, context, hooks)
}
