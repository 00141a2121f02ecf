import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { isPosition, readRowHistory, rowEntryAt } from '../data/history-reader.js'
import type { HistoryEntry } from '../data/history-reader.js'
import { ruleAdmitsVersion } from '../data/history-rule.js'
import { rowKeyText } from '../data/history-writer.js'
import { invalidFields, ViewsetErrors } from '../errors.js'
import { runWithCancellation } from '../execution/cancellation.js'
import type { ScopedMethod } from '../options.js'
import { deriveSerializerSchema, propertiesOf } from '../schema/derive.js'
import type { JsonSchema } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import { sharedSerializer } from '../schema/serializer.js'
import type { Row } from '../sql.js'
import { hideFields } from './field-hiding.js'
import { cursorLinkHeader } from './link.js'
import type { HistoryContext, RouteContext } from './route-context.js'
import { baseOf, serializerCompiler } from './route-schemas.js'
import { jsonType } from './row-answers.js'

// `GET {prefix}/:id/history` (method HISTORY, issue 39 items 3 and 4) and `GET {prefix}/:id?as_of=<date-time>`: a
// row's recorded writes, newest first, paged by position like a LIST by cursor, and its version at a time. The
// caller's rules apply as GET's do: the row rule (HISTORY's AND GET's; GET's for as_of) on the row's current
// version, or on its last stored version when it was hard-deleted (data/history-rule.ts), a 404 outside it; the
// fields GET's field rule hides are hidden in every version served.

/** A stored version as documented: the schema's columns, or `null`. */
function versionSchema (history: HistoryContext): JsonSchema {
  return { anyOf: [history.row, { type: 'null' }] }
}

/** An entry as answered. */
function entrySchema (history: HistoryContext): JsonSchema {
  return {
    type: 'object',
    properties: {
      operation: { type: 'string', enum: ['create', 'update', 'delete', 'restore'] },
      at: { type: 'string', format: 'date-time' },
      actor: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      before: versionSchema(history),
      after: versionSchema(history),
    },
    required: ['operation', 'at', 'actor', 'before', 'after'],
  }
}

/** The route's schema: the row's key, `limit` and `cursor`, and the page of entries. */
function historySchema (context: RouteContext, history: HistoryContext) {
  const schema = baseOf('HISTORY', context)
  const { maxLimit, defaultLimit } = history.limits
  schema.querystring = {
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: maxLimit, default: defaultLimit },
      cursor: { type: 'string', pattern: '^[0-9]{1,19}$', description: 'The `next` link\'s cursor: older entries' },
    },
    additionalProperties: false,
  }
  schema.response[200] = {
    description: 'A page of the row\'s recorded writes, newest first; `before` and `after` as the rows were stored',
    content: { 'application/json': { schema: { type: 'array', items: entrySchema(history), maxItems: maxLimit } } },
    headers: { link: { type: 'string', description: 'RFC 8288 link to the `next` page (older entries)' } },
  }
  return schema
}

/** The 404 of a row the caller may not read (or that never was). */
function notFound (id: unknown): never {
  throw new ViewsetErrors.NotFound(`No row with this key: ${String(id)}`)
}

/**
 * The history key of the request's row, once the caller's rule (`method`'s) admits it: on the row as it is, or when it
 * is no longer stored, on its last recorded version; else a 404 (never saying which).
 */
async function admittedKey (context: RouteContext, history: HistoryContext, request: FastifyRequest,
  method: ScopedMethod): Promise<string> {
  const id = isRecord(request.params) ? request.params.id : undefined
  // Every part of a composite key (`params.id` is then the parts' array): the row_key the writer recorded.
  const rowKey = rowKeyText(history.keyColumns, context.schemas.key.rowOf(id))
  const db = context.db
  const scope = history.scopeOf(request, request.viewsetToken, method)
  if ((await context.resource.find(db, id, { scope })) !== undefined) return rowKey
  // Stored, but outside the rule.
  if (scope !== undefined && (await context.resource.find(db, id)) !== undefined) notFound(id)
  const last = await rowEntryAt(db, history.source, rowKey)
  const version = last?.after ?? last?.before
  if (version === undefined || version === null) notFound(id)
  if (scope === undefined) return rowKey
  const { dialect } = context.resource
  const table = { table: context.table, catalog: history.catalog }
  const admitted = await ruleAdmitsVersion(db, dialect, table, version, scope)
  return admitted ? rowKey : notFound(id)
}

/** An entry as answered, without the fields the caller may not read. */
function answered (request: FastifyRequest, entry: HistoryEntry): Row {
  const versions = [entry.before, entry.after].filter((version) => version !== null)
  hideFields(request, versions)
  return { operation: entry.operation, at: entry.at, actor: entry.actor, before: entry.before, after: entry.after }
}

/** Answers one HISTORY request: the rule first, then a page of entries and its `next` link. */
async function answer (context: RouteContext, history: HistoryContext, request: FastifyRequest, reply: FastifyReply) {
  const query = isRecord(request.query) ? request.query : {}
  const limit = typeof query.limit === 'number' ? query.limit : history.limits.defaultLimit
  const below = isPosition(query.cursor) ? query.cursor : undefined
  const rowKey = await admittedKey(context, history, request, 'HISTORY')
  const entries = await readRowHistory(context.db, history.source, rowKey, { limit, ...(below ? { below } : {}) })
  const next = entries.length === limit ? entries.at(-1)?.position : undefined
  const link = cursorLinkHeader(request.url, { limit, next, prev: undefined })
  if (link !== undefined) reply.header('link', link)
  return entries.map((entry) => answered(request, entry))
}

/**
 * The HISTORY route, `GET {prefix}/:id/history`, with the hooks of its method (`hooks`: the bearer check, field
 * rules). Registered only when `methods` lists HISTORY (and the `history` option is on).
 *
 * @example
 * ```ts
 * fastify.route(historyRoute(context, hooksOf('HISTORY', context)))
 * ```
 */
export function historyRoute (context: RouteContext, hooks: Partial<RouteOptions>): RouteOptions {
  const { history } = context
  if (history === undefined) throw new TypeError('HISTORY is registered without the history option')
  // Written without `anyOf` (whose members fast-json-stringify validates first, where a stored value such as SQLite's
  // 0/1 for a boolean matches none): each version is an object or null, coerced as GET coerces a row.
  const version = { ...deriveSerializerSchema(history.row), nullable: true }
  const entry = {
    ...entrySchema(history),
    properties: {
      ...propertiesOf(entrySchema(history)),
      actor: { type: 'string', nullable: true },
      before: version,
      after: version
    }
  }
  const serialized = { type: 'array', items: entry }
  return {
    method: 'GET',
    url: '/:id/history',
    schema: historySchema(context, history),
    serializerCompiler: serializerCompiler(context.schemas, { 200: serialized }),
    ...hooks,
    handler: (request, reply) => runWithCancellation(reply.raw, () => answer(context, history, request, reply)),
  }
}

/** `?as_of=` as the entries' `at` compares it: ISO-8601 UTC with milliseconds; a 400 when it is no time. */
function asOfTime (value: unknown): string {
  const time = typeof value === 'string' ? new Date(value) : undefined
  if (time === undefined || Number.isNaN(time.getTime())) {
    throw invalidFields([{ in: 'querystring', field: 'as_of', message: 'must be a date-time (RFC 3339)' }])
  }
  return time.toISOString()
}

/** Serializers of stored versions, per history context: a version is served as it was stored, without relations. */
const versionSerializers = new WeakMap<HistoryContext, (row: unknown) => string>()

/**
 * GET with `?as_of=`: the row as it was at that time (the `after` of its last entry at or before it), under GET's
 * rules and field rules; a 404 when it did not exist then, had been deleted, or the caller may not read it.
 *
 * @example
 * ```ts
 * const { history } = context
 * if (history !== undefined && query.as_of !== undefined) return await answerAsOf(context, history, request, reply)
 * ```
 */
export async function answerAsOf (
  context: RouteContext, history: HistoryContext, request: FastifyRequest, reply: FastifyReply
): Promise<unknown> {
  const query = isRecord(request.query) ? request.query : {}
  const at = asOfTime(query.as_of)
  const rowKey = await admittedKey(context, history, request, 'GET')
  const entry = await rowEntryAt(context.db, history.source, rowKey, at)
  const version = entry === undefined || entry.operation === 'delete' ? null : entry.after
  if (version === null) return notFound(isRecord(request.params) ? request.params.id : undefined)
  hideFields(request, version)
  let serialize = versionSerializers.get(history)
  if (serialize === undefined) {
    serialize = sharedSerializer(deriveSerializerSchema(history.row))
    versionSerializers.set(history, serialize)
  }
  return reply.type(jsonType).serializer(serialize).send(version)
}
