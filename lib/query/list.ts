import type { ViewsetDialect } from '../dialect/dialect.js'
import type { ResolvedOptions, ViewsetOptions } from '../options.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import type { CountPlan } from './count-plan.js'
import type { ScalarType } from './field-types.js'
import { scalarFields } from './field-types.js'
import { planFields } from './fields.js'
import type { FieldsPlan } from './fields.js'
import { planFilters } from './filters.js'
import type { ListQueryPlan } from './list-query.js'
import { planOrdering } from './ordering.js'
import type { RelatedRoot } from './related-paths.js'
import { planSearch } from './search.js'
import { declaredJsonPaths } from './json-paths.js'
import { withJsonPaths } from './json-fields.js'
import { planFullText } from './full-text.js'

/** What LIST needs to know, gathered once at registration. */
export interface ListContext {
  readonly dialect: ViewsetDialect
  readonly resolved: ResolvedOptions
  readonly options: Pick<
    ViewsetOptions<unknown, never, never>,
    'searchFields' | 'orderingFields' | 'defaultOrder' | 'filterFields' | 'fullText'
  >
  /** The entity schema as served (plain JSON Schema). */
  readonly entity: JsonSchema
  /** The schema fields that are columns, in schema order. */
  readonly columns: readonly string[]
  /** The columns every row is read with: the schema's, plus keys the relation loaders need (default: `columns`). */
  readonly selected?: readonly string[]
  /** `?fields=`, when the caller planned it (it is shared with GET); else planned here. */
  readonly fieldsPlan?: FieldsPlan
  /** The table and its relations, for dotted paths (`author.name`) in filters, search and ordering. */
  readonly related?: RelatedRoot
}

/** LIST, planned once: its query-string schema, its response headers, and how to parse a request. */
export interface ListPlan {
  /** The query string LIST accepts: validated, and documented in OpenAPI. */
  readonly querystring: JsonSchema
  /** The response headers of the default LIST, for OpenAPI. */
  readonly headers: Record<string, JsonSchema>
  /** The `Prefer` request header of the default LIST (`count=…`), for OpenAPI; none when it gives no count. */
  readonly prefer: JsonSchema | undefined
  /** What `parseListQuery` checks a validated query string against. */
  readonly query: ListQueryPlan
}

/** The pagination parameters, with their bounds and defaults. */
function paginationSchema ({
  maxLimit,
  defaultLimit,
  maxOffset,
  pagination,
}: ResolvedOptions): Record<string, JsonSchema> {
  const limit: JsonSchema = {
    type: 'integer',
    minimum: 1,
    maximum: maxLimit,
    default: defaultLimit,
    description: `Rows per page (1 to ${maxLimit})`,
  }
  if (pagination === 'cursor') {
    return {
      limit,
      // Checked by decodeCursor, not by a pattern: every bad cursor is the one FST_VIEWSET_INVALID_CURSOR.
      cursor: {
        type: 'string',
        minLength: 1,
        description:
          'An opaque position, from the `next` or `prev` link of the `Link` header; absent for the first page',
      },
    }
  }
  return {
    limit,
    // The document states the bound; the 400 past it is parsePagination's, which points to cursor pagination
    // (the validator leaves `offset`'s `maximum` to it: schema/validator.ts).
    offset: {
      type: 'integer',
      minimum: 0,
      maximum: maxOffset,
      default: 0,
      description: `Rows to skip (0 to ${maxOffset}; page further with a cursor)`,
    },
  }
}

/**
 * Plans LIST from the checked options: the query string (pagination, `count`, `fields`, and `search`,
 * `order_by` and filters as the options allow) and the plan `parseListQuery` reads. Bad options throw
 * `FST_VIEWSET_INVALID_OPTION` here, at registration. No SQL and no HTTP here: the data layer
 * (resource/resource.ts) runs a parsed query, the routes (routes.ts) set the headers.
 */
export function createListPlan (context: ListContext): ListPlan {
  const { dialect, resolved, options, entity, columns } = context
  const selected = context.selected ?? columns
  const fields = scalarFields(propertiesOf(entity), columns)
  const { counting } = resolved
  // Paths inside JSON columns (`meta->color`), typed by the column's schema: filters, sort keys and `fields` names.
  const jsonPaths = declaredJsonPaths(options, propertiesOf(entity), columns, dialect)

  const search = planSearch(options.searchFields, fields, dialect, resolved.maxSearchLength, context.related)
  const fullText = planFullText(options.fullText, fields, dialect, resolved)
  const ordering = planOrdering(
    options.orderingFields,
    options.defaultOrder,
    fields,
    resolved.keyColumns ?? [resolved.primaryKey],
    context.related,
    jsonPaths,
    fullText.orderKeys
  )
  // A plan given is the viewset's, with its JSON paths already (mount/mount-viewset.ts, mount/field-rules.ts).
  const selection = context.fieldsPlan ?? withJsonPaths(planFields(entity, columns, selected), jsonPaths, entity)
  const general = {
    ...paginationSchema(resolved),
    count: countSchema(counting),
    ...selection.properties,
    ...search.properties,
    ...fullText.properties,
    ...fullText.documentOrderBy(ordering.properties),
  }
  const filters = planFilters(
    options.filterFields,
    fields,
    dialect,
    Object.keys(general),
    resolved.maxSearchLength,
    context.related,
    jsonPaths
  )
  return {
    querystring: { type: 'object', properties: { ...general, ...filters.properties }, additionalProperties: false },
    headers: listHeaders(resolved.pagination, counting),
    prefer: counting.allow === false ? undefined : preferSchema(counting),
    query: {
      search,
      fullText,
      ordering,
      filters,
      fields: selection,
      counting,
      maxOffset: resolved.maxOffset,
      pagination: resolved.pagination,
      types: new Map([
        ...[...fields].map(([name, field]): [string, ScalarType] => [name, field.type]),
        ...ordering.relatedTypes,
      ]),
    },
  }
}

/** The `count` parameter: asks for `X-Total-Count`, unless it is always sent or not offered. */
function countSchema ({ allow, always }: CountPlan): JsonSchema {
  const description = allow === false
    ? 'Not offered by this list (allowCount: false): true answers 400.'
    : always
      ? 'The `X-Total-Count` header is always sent.'
      : allow === 'estimated'
        ? 'When true, the `X-Total-Count` header carries an estimate of the number of matching rows.'
        : 'When true, the `X-Total-Count` header carries the number of matching rows (one more query).'
  return { type: 'boolean', description }
}

/** The `Prefer` preferences LIST reads: `count=exact` and `count=estimated`, as PostgREST spells them. */
function preferSchema ({ allow, threshold }: CountPlan): JsonSchema {
  const estimated = '`count=estimated` asks for the planner\'s estimate of the number of matching rows when it is at ' +
    `least ${threshold} (else they are counted; SQLite always counts), \`Preference-Applied\` says which.`
  return {
    type: 'string',
    description: allow === 'estimated'
      ? `RFC 7240 preferences. ${estimated} \`count=exact\` answers 400 (allowCount: 'estimated').`
      : `RFC 7240 preferences. \`count=exact\` asks for \`X-Total-Count\` (as \`?count=true\`); ${estimated}`,
    examples: ['count=estimated'],
  }
}

/** The response headers LIST documents: `Link` to the neighbouring pages, `X-Total-Count` and `Preference-Applied`. */
function listHeaders (pagination: ResolvedOptions['pagination'], counting: CountPlan): Record<string, JsonSchema> {
  const link: JsonSchema = {
    type: 'string',
    description: 'RFC 8288 links to the `next` and `prev` pages, when there are such pages' +
      (pagination === 'cursor' ? ' (with `cursor=`)' : ''),
  }
  if (counting.allow === false) return { link }
  return {
    link,
    'x-total-count': {
      type: 'integer',
      description: counting.always
        ? 'The number of matching rows'
        : 'The number of matching rows, with `count=true` or `Prefer: count=...`',
    },
    'preference-applied': {
      type: 'string',
      description: '`count=estimated` when `X-Total-Count` is the planner\'s estimate, `count=exact` when the rows ' +
        'were counted (sent when `Prefer` asked for a count, or the count could be an estimate)',
    },
  }
}
