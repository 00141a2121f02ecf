import { changeKeyOf } from '../data/change-key.js'
import type { StoredColumn } from '../dialect/dialect.js'
import type { ChangesContext } from '../http/route-context.js'
import { withChangedSince } from '../http/changes-since-schema.js'
import type { ResolvedOptions } from '../options.js'
import type { ListQueryPlan } from '../query/list-query.js'
import type { RowKey } from '../row-key.js'
import { propertiesOf } from '../schema/derive.js'
import type { JsonSchema } from '../schema/derive.js'

// `changed_since` at mounting (issue 40, item 5): with `changes: true`, LIST's query string takes the parameter and
// its route reads the table's history (http/changes-since.ts).

/** LIST's query string (as `mergeListQuery` made it) with `changed_since` when the viewset has `changes: true`. */
export function withChangesQuery<L extends { readonly querystring: JsonSchema }> (
  listed: L,
  { changes }: Pick<ResolvedOptions, 'changes'>
): L {
  return changes === undefined ? listed : { ...listed, querystring: withChangedSince(listed.querystring) }
}

/**
 * What the LIST route reads to answer `changed_since`, or `undefined` when `changes` is off: the history, the table's
 * key (one column or several, data/change-key.ts) and every column of its stored versions.
 *
 * @example
 * ```ts
 * const changes = changesContextOf(resolved, table, entity, list.query, rowRules.scopeOf)
 * ```
 */
export function changesContextOf (
  { changes, table }: Pick<ResolvedOptions, 'changes' | 'table'>,
  stored: { readonly described: { readonly columns: readonly StoredColumn[] }, readonly key: RowKey },
  entity: JsonSchema,
  list: ListQueryPlan,
  scopeOf: ChangesContext['scopeOf']
): ChangesContext | undefined {
  if (changes === undefined) return undefined
  const key = changeKeyOf(stored.key, propertiesOf(entity))
  const target = { historyTable: changes.historyTable, table, key, columns: stored.described.columns }
  return { target, list, scopeOf }
}
