import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AnyDatabase, Row, ViewsetDialect } from '../dialect/dialect.js'
import type { ResolvedOptions, ViewsetOptions } from '../options.js'
import type { JsonSchema } from '../schema/derive.js'
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
  readonly statements: Statements
}

/** LIST, planned once: its query-string schema and how to run a request. */
export interface ListPlan {
  /** The query string LIST accepts: validated, and documented in OpenAPI. */
  readonly querystring: JsonSchema
  /** Runs one request; may set headers (such as `Link` and `X-Total-Count`) on the reply. */
  run (db: AnyDatabase, request: FastifyRequest, reply: FastifyReply): Promise<Row[]>
}

interface PageQuery { limit: number, offset: number }

/** The pagination parameters, with their bounds and defaults. */
export function paginationSchema ({ maxLimit, defaultLimit }: ResolvedOptions): Record<string, JsonSchema> {
  return {
    limit: { type: 'integer', minimum: 1, maximum: maxLimit, default: defaultLimit, description: `Rows per page (1 to ${maxLimit})` },
    offset: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'Rows to skip' },
  }
}

/** Plans LIST from the checked options. */
export function createListPlan (context: ListContext): ListPlan {
  const querystring: JsonSchema = {
    type: 'object',
    properties: paginationSchema(context.resolved),
    additionalProperties: false,
  }
  return {
    querystring,
    async run (db, request) {
      const { limit, offset } = request.query as PageQuery
      return await context.statements.page(db, limit, offset)
    },
  }
}
