import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { runWithCancellation } from '../execution/cancellation.js'
import { groupOf, readGroups } from '../data/aggregate-statement.js'
import { StatementCache } from '../data/statement-cache.js'
import { encodeCursor } from '../query/cursor.js'
import type { CursorPosition } from '../query/cursor.js'
import { parseAggregateQuery } from '../query/aggregate-query.js'
import type { AggregateQuery } from '../query/aggregate-query.js'
import { queryParameterError } from '../query/condition.js'
import { isRecord } from '../schema/object-schema.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import { narrowListPlan, visibleName } from './field-hiding.js'
import { cursorLinkHeader, linkHeader } from './link.js'
import type { AggregateContext, RouteContext } from './route-context.js'
import { baseOf, serializerCompiler } from './route-schemas.js'

// `GET {prefix}/aggregate` (method AGGREGATE, issue 37 item 6): the rows LIST would serve for the same filters,
// search and rules (the viewset's AGGREGATE rule: its own AND LIST's), grouped, counted and summed, a page of groups.
// A static path: Fastify's router prefers it to `GET {prefix}/:id`, so a row whose key is the string `aggregate` is
// not reachable by GET while AGGREGATE is registered (README "Aggregates").

/** The 400 of a name the caller's field rules hide: the one an unknown name gets (its pattern refuses it). */
function hiddenName (parameter: string, name: string): Error {
  return queryParameterError(parameter, `"${name}" is not a field it may name`)
}

/** Refuses a group key or a metric whose field the caller may not read: checked again, after validation. */
function checkVisible (request: FastifyRequest, query: AggregateQuery): void {
  for (const group of query.groups) if (!visibleName(request, group.name)) throw hiddenName('group_by', group.name)
  for (const metric of query.metrics) {
    if (!visibleName(request, metric.name)) throw hiddenName(metric.shown ? metric.fn : 'order_by', metric.name)
  }
}

/** The route's schema: LIST's filters and paging with AGGREGATE's parameters, and the page of groups. */
function aggregateSchema (context: RouteContext, aggregate: AggregateContext) {
  const schema = baseOf('AGGREGATE', context)
  const { querystring, group } = aggregate.plan
  schema.querystring = querystring
  const limit = propertiesOf(querystring).limit?.maximum
  const groups: JsonSchema = { type: 'array', items: group, ...(typeof limit === 'number' ? { maxItems: limit } : {}) }
  schema.response[200] = {
    description: 'A page of groups: each with its group keys, `count` when asked for, and the metrics asked for',
    content: { 'application/json': { schema: groups } },
    headers: { link: { type: 'string', description: 'RFC 8288 links to the `next` and `prev` pages of groups' } },
  }
  return schema
}

/** The `Link` header of a page of groups, by offset or by cursor. */
function pageLink (
  request: FastifyRequest,
  query: AggregateQuery,
  page: { rows: unknown[]; next?: CursorPosition | undefined; prev?: CursorPosition | undefined },
  maxOffset: number
): string | undefined {
  const { limit, offset } = query
  if (query.pagination === 'offset') {
    return linkHeader(request.url, { limit, offset, rows: page.rows.length, total: undefined, maxOffset })
  }
  const cursor = (position: CursorPosition | undefined) =>
    position === undefined ? undefined : encodeCursor(query.ordering, position)
  return cursorLinkHeader(request.url, { limit, next: cursor(page.next), prev: cursor(page.prev) })
}

/** Answers one AGGREGATE request: parsed (every 400 first), its groups read under the request's rules, paged. */
async function answer (
  context: RouteContext,
  aggregate: AggregateContext & { readonly statements: StatementCache },
  request: FastifyRequest,
  reply: FastifyReply
): Promise<unknown> {
  const token = request.viewsetToken
  const db = context.readerOf(request)
  const rules = { db, request: { request, token } }
  const list = narrowListPlan(request) ?? aggregate.list
  const query = parseAggregateQuery(isRecord(request.query) ? request.query : {}, aggregate.plan, list, rules)
  checkVisible(request, query)
  const scope = aggregate.scopeOf(request, token, 'AGGREGATE')
  const { dialect } = context.resource
  const target = { table: context.table, dialect, rules, statements: aggregate.statements }
  const page = await readGroups(db, query, target, scope)
  const link = pageLink(request, query, page, context.paging.maxOffset)
  if (link !== undefined) reply.header('link', link)
  return page.rows.map((row) => groupOf(query, row, dialect))
}

/**
 * The AGGREGATE route, `GET {prefix}/aggregate`, with the hooks of its method (`hooks`: the bearer check, field
 * rules). Registered only when `methods` lists AGGREGATE.
 */
export function aggregateRoute (context: RouteContext, hooks: Partial<RouteOptions>): RouteOptions {
  const { aggregate } = context
  if (aggregate === undefined) throw new TypeError('AGGREGATE is registered without its plan')
  // The viewset's AGGREGATE statements, compiled once per shape (data/aggregate-shape.ts).
  const statements = new StatementCache(context.resource.dialect.syntax.statementPlugin)
  const compiled = { ...aggregate, statements }
  return {
    method: 'GET',
    url: '/aggregate',
    schema: aggregateSchema(context, aggregate),
    serializerCompiler: serializerCompiler(context.schemas),
    ...hooks,
    handler: (request, reply) => runWithCancellation(reply.raw, () => answer(context, compiled, request, reply)),
  }
}
