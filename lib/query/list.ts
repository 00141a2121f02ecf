import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AnyDatabase, Row, ViewsetDialect } from '../dialect/dialect.js'
import { ViewsetErrors } from '../errors.js'
import type { ResolvedOptions, ViewsetOptions } from '../options.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import type { Condition } from './condition.js'
import { queryParameterError } from './condition.js'
import { scalarFields } from './field-types.js'
import { planFields } from './fields.js'
import type { FieldsPlan } from './fields.js'
import { planFilters } from './filters.js'
import { linkHeader } from './link.js'
import { applyOrdering, planOrdering } from './ordering.js'
import type { Ordering } from './ordering.js'
import { planSearch } from './search.js'
import { StatementCache } from './statement-cache.js'
import type { Statements } from './statements.js'

/** What LIST needs to know, gathered once at registration. */
export interface ListContext {
  readonly dialect: ViewsetDialect
  readonly resolved: ResolvedOptions
  readonly options: Pick<ViewsetOptions<unknown, never, never>, 'searchFields' | 'orderingFields' | 'defaultOrder' | 'filterFields' | 'alwaysCount'>
  /** The entity schema as served (plain JSON Schema). */
  readonly entity: JsonSchema
  /** The schema fields that are columns, in schema order. */
  readonly columns: readonly string[]
  /** The columns every row is read with: the schema's, plus keys the relation loaders need (default: `columns`). */
  readonly selected?: readonly string[]
  /** `?fields=`, when the caller planned it (it is shared with GET); else planned here. */
  readonly fieldsPlan?: FieldsPlan
  readonly statements: Statements
}

/** LIST, planned once: its query-string schema and how to run a request. */
export interface ListPlan {
  /** The query string LIST accepts: validated, and documented in OpenAPI. */
  readonly querystring: JsonSchema
  /** The response headers `run` may set, for OpenAPI. */
  readonly headers?: Record<string, JsonSchema>
  /** Runs one request; may set headers (such as `Link` and `X-Total-Count`) on the reply. */
  run (db: AnyDatabase, request: FastifyRequest, reply: FastifyReply): Promise<Row[]>
}

/** The pagination parameters, with their bounds and defaults. */
function paginationSchema ({ maxLimit, defaultLimit, maxOffset }: ResolvedOptions): Record<string, JsonSchema> {
  return {
    limit: { type: 'integer', minimum: 1, maximum: maxLimit, default: defaultLimit, description: `Rows per page (1 to ${maxLimit})` },
    // Not `maximum: maxOffset`: Ajv's message could not point the client to cursor pagination (see `run`).
    offset: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: `Rows to skip (0 to ${maxOffset}; page further with a cursor)` },
  }
}

/** The 400 of an offset past `maxOffset`, which says how to read further. */
function offsetError (maxOffset: number): Error {
  return queryParameterError('offset', `must be at most ${maxOffset} (maxOffset): a deeper offset makes the database skip every row before it. To read further, use cursor pagination: order by a unique field and filter past the last row seen (such as ?order_by=id&id__gt=<last id>).`)
}

/** Query parameters whose presence leaves the request on the precompiled page statement. */
const pageOnly = new Set(['limit', 'offset'])

/**
 * Plans LIST from the checked options: the query string (pagination, `count`, `fields`, and `search`,
 * `order_by` and filters as the options allow), and a runner that reads one page. Bad options throw
 * `FST_VIEWSET_INVALID_OPTION` here, at registration.
 */
export function createListPlan (context: ListContext): ListPlan {
  const { dialect, resolved, options, entity, columns, statements } = context
  const selected = context.selected ?? columns
  const { table, primaryKey } = resolved
  const fields = scalarFields(propertiesOf(entity), columns)
  if (options.alwaysCount !== undefined && typeof options.alwaysCount !== 'boolean') throw new ViewsetErrors.InvalidOption('alwaysCount', 'expected a boolean')
  const alwaysCount = options.alwaysCount === true

  const search = planSearch(options.searchFields, fields, dialect, resolved.maxSearchLength)
  const ordering = planOrdering(options.orderingFields, options.defaultOrder, fields, primaryKey)
  const selection = context.fieldsPlan ?? planFields(entity, columns, selected)
  const general = {
    ...paginationSchema(resolved),
    count: {
      type: 'boolean',
      description: alwaysCount
        ? 'The `X-Total-Count` header is always sent.'
        : 'When true, the `X-Total-Count` header carries the number of matching rows (one more query).',
    },
    ...selection.properties,
    ...search.properties,
    ...ordering.properties,
  }
  const filters = planFilters(options.filterFields, fields, dialect, Object.keys(general), resolved.maxSearchLength)
  const querystring: JsonSchema = {
    type: 'object',
    properties: { ...general, ...filters.properties },
    additionalProperties: false,
  }

  const pages = new StatementCache()
  const counts = new StatementCache()
  const db0 = (db: AnyDatabase) => db.selectFrom(table)

  async function page (db: AnyDatabase, conditions: readonly Condition[], order: Ordering, read: readonly string[], shape: string, limit: number, offset: number): Promise<Row[]> {
    const parameters = [...conditions.flatMap((condition) => condition.parameters), limit, offset]
    return await pages.rows(db, `${order.shape}|${shape}|${conditions.map((condition) => condition.shape).join('&')}`, parameters, () => {
      let query = db0(db).select(read)
      if (conditions.length > 0) query = query.where((eb) => eb.and(conditions.map((condition) => condition.expression(eb))))
      return applyOrdering(query, order.keys, dialect).limit(limit).offset(offset)
    })
  }

  async function count (db: AnyDatabase, conditions: readonly Condition[]): Promise<number> {
    const parameters = conditions.flatMap((condition) => condition.parameters)
    const [row] = await counts.rows(db, conditions.map((condition) => condition.shape).join('&'), parameters, () => {
      const query = db0(db).select((eb) => eb.fn.countAll().as('count'))
      return conditions.length > 0 ? query.where((eb) => eb.and(conditions.map((condition) => condition.expression(eb)))) : query
    })
    return dialect.count(row?.count ?? 0)
  }

  const plain = ordering.byPrimaryKey && !alwaysCount
  return {
    querystring,
    headers: {
      link: { type: 'string', description: 'RFC 8288 links to the `next` and `prev` pages, when there are such pages' },
      'x-total-count': { type: 'integer', description: alwaysCount ? 'The number of matching rows' : 'The number of matching rows, with `count=true`' },
    },
    async run (db, request, reply) {
      const query = request.query as Record<string, unknown>
      const limit = query.limit as number
      const offset = query.offset as number
      if (offset > resolved.maxOffset) throw offsetError(resolved.maxOffset)
      let rows: Row[]
      let total: number | undefined
      let fast = plain
      if (fast) {
        for (const key in query) {
          if (!pageOnly.has(key)) {
            fast = false
            break
          }
        }
      }
      if (fast) {
        rows = await statements.page(db, limit, offset)
      } else {
        // Everything a client can get wrong is checked before the first query.
        const conditions = filters.conditions(query)
        const searched = search.condition(query)
        if (searched !== undefined) conditions.unshift(searched)
        const order = ordering.ordering(query)
        const chosen = selection.selection(query)
        const counting = alwaysCount || query.count === true
        ;[rows, total] = await Promise.all([
          page(db, conditions, order, chosen?.columns ?? selected, chosen?.shape ?? '*', limit, offset),
          counting ? count(db, conditions) : undefined,
        ])
        if (total !== undefined) reply.header('x-total-count', String(total))
        if (chosen !== undefined) reply.serializer(chosen.serialize).type('application/json; charset=utf-8')
      }
      const link = linkHeader(request.url, { limit, offset, rows: rows.length, total, maxOffset: resolved.maxOffset })
      if (link !== undefined) reply.header('link', link)
      return rows
    },
  }
}
