import type { FastifyReply, FastifyRequest } from 'fastify'
import { readChanges } from '../data/changes-page.js'
import type { CancellationContext } from '../execution/cancellation.js'
import { queryParameterError } from '../query/condition.js'
import type { FieldSelection } from '../query/fields.js'
import { parseListQuery } from '../query/list-query.js'
import { isRecord } from '../schema/object-schema.js'
import { partialContentType } from '../schema/openapi.js'
import type { Serializer } from '../schema/serializer.js'
import { hideFields, narrowListPlan } from './field-hiding.js'
import { changesLinkHeader } from './link.js'
import type { ChangesContext, RouteContext, RouteSchemas } from './route-context.js'
import { ref, serializerCompiler } from './route-schemas.js'
import { loadRelations } from './row-answers.js'

// `GET {prefix}?changed_since=<position>` (issue 40, item 5): LIST's route answers the changes since a position of
// the table's history instead of a page, under the same filters, `fields`, row rule and field rules
// (data/changes-page.ts reads them). README "Changes since".

/** What LIST's parameters would page or order by, which a page of changes does not take: a 400 each. */
const refused = ['cursor', 'order_by', 'q'] as const

/** The largest position: a BIGINT's. */
const maxPosition = 2n ** 63n - 1n

/** The position sent, checked: `0`, or the digits of a BIGINT without a leading zero. */
function positionOf (value: unknown): string {
  if (typeof value !== 'string' || !/^(?:0|[1-9][0-9]{0,18})$/.test(value) || BigInt(value) > maxPosition) {
    throw queryParameterError('changed_since', 'must be a position: 0, or the next of an earlier answer')
  }
  return value
}

/** Refuses what a page of changes cannot honour, before any statement. */
function checkParameters (query: Record<string, unknown>): void {
  for (const name of refused) {
    if (query[name] !== undefined) throw queryParameterError(name, 'cannot be combined with changed_since')
  }
  if (query.count === true) throw queryParameterError('count', 'cannot be combined with changed_since')
  if (typeof query.offset === 'number' && query.offset !== 0) {
    throw queryParameterError('offset', 'cannot be combined with changed_since: follow next instead')
  }
}

// One serializer of whole rows per viewset (a `fields` selection brings its own).
const wholeRows = new WeakMap<RouteSchemas, Serializer>()

/** Serializes the rows of a page of changes: whole rows, or the selection's partial rows. */
function rowsSerializer (schemas: RouteSchemas, fields: FieldSelection | undefined): (rows: unknown) => string {
  if (fields !== undefined) return fields.serialize
  let serialize = wholeRows.get(schemas)
  if (serialize === undefined) {
    const rows = { type: 'array', items: ref(schemas.entity.$id) }
    serialize = serializerCompiler(schemas, { 200: rows })({ schema: {}, method: 'GET', url: '', httpStatus: '200' })
    wholeRows.set(schemas, serialize)
  }
  return serialize
}

/**
 * Answers one `changed_since` request on LIST's route: parsed (every 400 first), the page read under the request's
 * rules, the rows' relations loaded and their hidden fields removed, a `Link` to the next page when one may follow.
 */
export async function answerChangesSince (
  context: RouteContext,
  changes: ChangesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  cancellation: CancellationContext
): Promise<unknown> {
  const given = isRecord(request.query) ? request.query : {}
  const since = positionOf(given.changed_since)
  checkParameters(given)
  const token = request.viewsetToken
  const db = context.readerOf(request)
  const rules = { db, request: { request, token } }
  const scope = changes.scopeOf(request, token, 'LIST')
  const plan = narrowListPlan(request) ?? changes.list
  const query = parseListQuery(given, plan, undefined, rules, scope !== undefined)
  const page = await readChanges(db, context.resource, changes.target, { since, limit: query.limit, query, scope })
  if (context.resource.hasRelations && page.rows.length > 0) {
    const only = query.fields?.relations ?? context.fields.defaultRelations
    await loadRelations(cancellation, request, context.resource, db, page.rows, only)
  }
  if (context.hiding !== undefined) hideFields(request, page.rows)
  if (page.more) reply.header('link', changesLinkHeader(request.url, { limit: query.limit, next: page.next }))
  const rows = rowsSerializer(context.schemas, query.fields)(page.rows)
  const body = `{"changes":${rows},"deleted":${JSON.stringify(page.deleted)},"next":${JSON.stringify(page.next)}}`
  // Set last, so that an error thrown above is serialized as a problem, not as changes.
  reply.serializer(() => body)
  if (query.fields !== undefined) reply.type(partialContentType)
  return page
}
