import type { FastifyReply, FastifyRequest } from 'fastify'
import type { TableGateway } from '../data/table-gateway.js'
import type { AnyDatabase, Row } from '../sql.js'
import { withCancellation } from '../execution/cancellation.js'
import type { CancellationContext } from '../execution/cancellation.js'
import { isRecord } from '../schema/object-schema.js'
import { representationTag, versionTag } from './conditional-requests.js'
import { hideFields } from './field-hiding.js'
import { returnMinimal } from './prefer-header.js'
import { relationsLeft } from './children-as-written.js'
import type { RouteContext } from './route-context.js'

// How a row a route (or a custom route's helper) answers is sent: its relations loaded under the caller's rules,
// the caller's hidden fields dropped, serialized once with its ETag, or with `Prefer: return=minimal` no body.

export const jsonType = 'application/json; charset=utf-8'

/** The ETag of a whole row and its serialized body (the version column's value, else a hash of the body). */
export function tagRow (context: RouteContext, row: Row): { etag: string; body: string } {
  const { represent, versionField } = context.versions
  const body = represent(row)
  return { etag: versionField === undefined ? representationTag(body) : versionTag(row[versionField]), body }
}

/** Answers a whole row with its ETag, serialized once (the tag hashes the very bytes sent). */
function sendTagged (context: RouteContext, reply: FastifyReply, row: unknown): unknown {
  if (!isRecord(row)) return row
  if (context.hiding !== undefined) hideFields(reply.request, row)
  const { etag, body } = tagRow(context, row)
  // A string with a JSON type is sent as it is: the route's serializer does not run again.
  reply.header('etag', etag).type(jsonType)
  return body
}

/**
 * Loads the relations of a handler's result: a row, rows, or anything else (left alone), in the request's
 * cancellation `scope` (taken before the handler's await: see execution/cancellation.ts). The routes call it
 * only when `resource.hasRelations`: without relations they await nothing more.
 */
export async function loadRelations (
  scope: CancellationContext,
  request: FastifyRequest,
  resource: TableGateway,
  db: AnyDatabase,
  result: unknown,
  only?: ReadonlySet<string>
): Promise<unknown> {
  const rows = Array.isArray(result) ? result.filter(isRecord) : isRecord(result) ? [result] : []
  // The related rows are those the rules of their tables admit for this request (relations/relation-rule.ts).
  const rules = { request, token: request.viewsetToken }
  await withCancellation(scope, () => resource.load(db, rows, only, rules))
  return result
}

/** Answers a written row with its relations (the default ones) and its ETag, as POST, PUT and PATCH do. */
export function sendWritten (
  scope: CancellationContext,
  context: RouteContext,
  reply: FastifyReply,
  row: unknown
): unknown {
  const { resource, db, fields } = context
  // A nested POST's children may be answered as written already (children-as-written.ts).
  const only = resource.hasRelations ? relationsLeft(row, fields.defaultRelations) : undefined
  if (!resource.hasRelations || only?.size === 0) return sendTagged(context, reply, row)
  return loadRelations(scope, reply.request, resource, db, row, only).then((loaded) =>
    sendTagged(context, reply, loaded)
  )
}

/** Says in `Preference-Applied` that `return=minimal` applied, after any preference already said (RFC 7240). */
export function applyMinimal (reply: FastifyReply): void {
  const said = reply.getHeader('preference-applied')
  reply.header('preference-applied', said === undefined ? returnMinimal : `${String(said)}, ${returnMinimal}`)
}

/**
 * Answers a write with `Prefer: return=minimal`: no body, 201 when rows were created (with `Location`, set before),
 * else 204; the row's ETag still, from its version column, or when there is none from the representation it would
 * have been (its relations loaded only then: the tag hashes them).
 */
export function sendMinimal (
  scope: CancellationContext,
  context: RouteContext,
  reply: FastifyReply,
  row: unknown
): unknown {
  applyMinimal(reply)
  const empty = () => reply.code(reply.statusCode === 201 ? 201 : 204).send()
  if (!isRecord(row)) return empty()
  const { resource, db } = context
  const tag = (loaded: Row) => {
    // The tag is of the row as the caller is served it: without the fields its field rules hide.
    if (context.hiding !== undefined) hideFields(reply.request, loaded)
    reply.header('etag', tagRow(context, loaded).etag)
    return empty()
  }
  if (context.versions.versionField !== undefined || !resource.hasRelations) return tag(row)
  const only = relationsLeft(row, context.fields.defaultRelations)
  return only?.size === 0 ? tag(row) : loadRelations(scope, reply.request, resource, db, row, only).then(() => tag(row))
}
