import { ViewsetErrors } from '../errors.js'
import type { ListPlan } from '../query/list.js'
import type { JsonSchema } from '../schema/derive.js'
import { plain, propertiesOf } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import type { SoftDeletePlan } from '../query/soft-delete-term.js'
import { withDeletedParameter } from './soft-delete-check.js'

/** The `static listQuery` of a viewset's class (its constructor), when it declares an object schema. */
export function listQueryOf (constructor: unknown): JsonSchema | undefined {
  const extra: unknown =
    typeof constructor === 'function' && 'listQuery' in constructor ? constructor.listQuery : undefined
  return isRecord(extra) ? extra : undefined
}

/**
 * LIST's query string with the viewset's `static listQuery` applied over the defaults (and `deleted` with
 * `softDelete`). An overridden `list` keeps only `limit` and `offset` (or `cursor`) of the defaults: it would
 * silently ignore `search`, filters, `count` or `fields`. Without an overridden `list`, `listQuery` may only refine
 * parameters the default LIST defines, unless `scope` reads them (from `context.request.query`).
 *
 * @example
 * ```ts
 * const { querystring, headers } = mergeListQuery(list, { listQuery, overridden: new Set(['list']) })
 * ```
 */
export function mergeListQuery (
  plan: ListPlan,
  viewset: { readonly listQuery: JsonSchema | undefined; readonly overridden: ReadonlySet<string> },
  softDelete?: SoftDeletePlan
): {
    querystring: JsonSchema; headers?: Record<string, JsonSchema>; prefer?: JsonSchema | undefined; filters: JsonSchema
  } {
  // With softDelete, `?deleted=` too (mount/soft-delete-check.ts).
  const list = { ...plan, querystring: withDeletedParameter(plan.querystring, softDelete) }
  const extra = viewset.listQuery
  const { search, filters: planned } = list.query
  // What PATCH_MANY and DELETE_MANY take: the filter language, without pagination, ordering, `fields` or `count`.
  const named = { ...search.properties, ...planned.properties }
  const filters = { type: 'object', properties: named, additionalProperties: false }
  if (extra === undefined) return { ...list, filters }
  const defaults = propertiesOf(list.querystring)
  // Which parameters an overridden `list` reads is its business.
  const own = viewset.overridden.has('list')
  const scoped = viewset.overridden.has('scope')
  const unread =
    own || scoped
      ? []
      : Object.keys(propertiesOf(plain(extra))).filter((parameter) => !Object.hasOwn(defaults, parameter))
  if (unread.length > 0) {
    throw new ViewsetErrors.InvalidOption(
      'listQuery',
      `${unread.join(', ')} would be ignored: the default list() reads only ${Object.keys(defaults).join(', ')}. ` +
        'Override list(), or read them in scope()'
    )
  }
  // With cursor pagination there is no `offset`: its `cursor` is kept instead.
  const base = own
    ? Object.fromEntries(
      ['limit', 'offset', 'cursor'].flatMap((key) => (defaults[key] === undefined ? [] : [[key, defaults[key]]]))
    )
    : defaults
  const properties = { ...base, ...propertiesOf(plain(extra)) }
  // parsePagination bounds every LIST's offset by maxOffset, an overridden one too: a listQuery's `offset` that
  // declares no bound of its own is documented with that one.
  const bound = defaults.offset?.maximum
  const offset = properties.offset
  const unbounded = offset !== undefined && offset.maximum === undefined && offset.exclusiveMaximum === undefined
  if (offset !== undefined && unbounded && bound !== undefined) {
    properties.offset = { ...offset, maximum: bound }
  }
  // The default list's headers (Link, X-Total-Count, Prefer) are not documented for an override.
  return {
    filters,
    querystring: { ...list.querystring, properties },
    ...(own ? {} : { headers: list.headers, prefer: list.prefer }),
  }
}
