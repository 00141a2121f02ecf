import type { StoredColumn } from '../dialect/dialect.js'
import { invalidOption } from '../errors.js'
import type { ChangesContext } from '../http/route-context.js'
import { withChangedSince } from '../http/changes-since-schema.js'
import type { ResolvedOptions } from '../options.js'
import type { ListQueryPlan } from '../query/list-query.js'
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
 * What the LIST route reads to answer `changed_since`, or `undefined` when `changes` is off.
 *
 * @example
 * ```ts
 * const changes = changesContextOf(resolved, table.described.columns, list.query, rowRules.scopeOf)
 * ```
 */
export function changesContextOf (
  { changes, table, primaryKey, keyColumns }: Pick<ResolvedOptions, 'changes' | 'table' | 'primaryKey' | 'keyColumns'>,
  columns: readonly StoredColumn[],
  list: ListQueryPlan,
  scopeOf: ChangesContext['scopeOf']
): ChangesContext | undefined {
  if (changes === undefined) return undefined
  // The feed's and changed_since's key reads are by one column: refused, not served wrong.
  if ((keyColumns?.length ?? 1) > 1) invalidOption('changes', 'needs a single-column primary key for now')
  const target = { historyTable: changes.historyTable, table, primaryKey, columns }
  return { target, list, scopeOf }
}
