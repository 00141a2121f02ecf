import type { ViewsetDialect } from '../dialect/dialect.js'
import type { TableCatalog } from '../dialect/shared/catalog.js'
import type { ColumnKind } from '../dialect/shared/column-types.js'
import { columnTypesOf } from '../dialect/pick-dialect.js'
import type { AggregateContext } from '../http/route-context.js'
import type { ViewsetMethod } from '../options.js'
import { checkAggregateOptions, planAggregate } from '../query/aggregate.js'
import type { AggregatePlan, AggregateSource } from '../query/aggregate.js'
import type { ListQueryPlan } from '../query/list-query.js'

// AGGREGATE at mounting: its options checked against the catalog (which columns are numeric) and planned, when
// `methods` lists it; else `groupByFields` and `aggregateFields` must be absent.

/** What AGGREGATE is planned from at mounting: the source less the column kinds (the catalog's), with LIST's plan. */
export type AggregateMount = Omit<AggregateSource, 'kinds' | 'listQuerystring'> & {
  readonly list: { readonly querystring: AggregateSource['listQuerystring'] }
}

/**
 * AGGREGATE's plan when `methods` lists it, else `undefined` (and a startup error when its options are set).
 *
 * @example
 * ```ts
 * const aggregate = aggregatePlanOf(methods, { dialect, described }, { entity, columns, related, options, list })
 * ```
 */
export function aggregatePlanOf (
  methods: readonly ViewsetMethod[],
  { dialect, described }: { readonly dialect: ViewsetDialect; readonly described: TableCatalog },
  { list, ...mount }: AggregateMount
): AggregatePlan | undefined {
  const registered = methods.includes('AGGREGATE')
  checkAggregateOptions(mount.options, registered)
  if (!registered) return undefined
  const types = columnTypesOf(dialect.name)
  const kinds = new Map<string, ColumnKind>(described.columns.map((column) => [column.name, types.kindOf(column)]))
  return planAggregate({ ...mount, kinds, listQuerystring: list.querystring })
}

/** What the AGGREGATE route reads, once the row rules are known; `undefined` without a plan. */
export function aggregateContextOf (
  plan: AggregatePlan | undefined,
  list: ListQueryPlan,
  scopeOf: AggregateContext['scopeOf']
): AggregateContext | undefined {
  return plan === undefined ? undefined : { plan, list, scopeOf }
}
