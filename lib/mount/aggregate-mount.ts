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

/** What AGGREGATE is planned from at mounting: the source less the column kinds, which the catalog gives. */
export type AggregateMount = Omit<AggregateSource, 'kinds'> & {
  readonly dialect: ViewsetDialect
  readonly described: TableCatalog
}

/**
 * AGGREGATE's plan when `methods` lists it, else `undefined` (and a startup error when its options are set).
 *
 * @example
 * ```ts
 * const aggregate = aggregatePlanOf(methods, { ...source, dialect, described })
 * ```
 */
export function aggregatePlanOf (
  methods: readonly ViewsetMethod[],
  mount: AggregateMount
): AggregatePlan | undefined {
  const registered = methods.includes('AGGREGATE')
  checkAggregateOptions(mount.options, registered)
  if (!registered) return undefined
  const types = columnTypesOf(mount.dialect.name)
  const kinds = new Map<string, ColumnKind>(
    mount.described.columns.map((column) => [column.name, types.kindOf(column)])
  )
  return planAggregate({ ...mount, kinds })
}

/** What the AGGREGATE route reads, once the row rules are known; `undefined` without a plan. */
export function aggregateContextOf (
  plan: AggregatePlan | undefined,
  list: ListQueryPlan,
  scopeOf: AggregateContext['scopeOf']
): AggregateContext | undefined {
  return plan === undefined ? undefined : { plan, list, scopeOf }
}
