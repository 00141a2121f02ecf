import type { DeclaredRelation } from '../relations/declaration.js'
import type { RelationRuleSlot } from '../relations/relation-rule.js'
import { jsonTextDecoder } from '../data/json-text.js'
import { propertiesOf } from '../schema/derive.js'
import type { JsonSchema } from '../schema/derive.js'
import type { Row } from '../sql.js'

// A nested POST answers its new parent with its relations, loaded after the commit under the caller's rules. A new
// parent's children are the rows the write just created, and what the load would read back is exactly them where
// nothing stands between the rows written and the rows read: no row rule or field rule on the related table, no
// order but the key's (which a new row's generated key follows), no nested relations, and no afterWrite that could
// write more of them. There the children are answered as written (each from its write's RETURNING or read-back) and
// the load, one more statement after the commit, is skipped (benchmarks/analysis.md, "Nested POST, session 9").

/** How a one-to-many's children are answered as written, decided once the application is ready. */
export interface AsWritten {
  /** The columns the relation's load would read of each child: the related rows' fields and the foreign key. */
  readonly columns: readonly string[]
  /** The children the load would keep (the relation's `limit`), or `undefined` for all. */
  readonly limit: number | undefined
}

/** The child viewset as the plan reads it: its key, its entity, and whether a hook of its own runs after a write. */
export interface AsWrittenTarget {
  readonly primaryKey: string
  readonly entity: JsonSchema
  /** An `afterWrite` other than the history's. */
  readonly afterWrite: boolean
}

/**
 * How `relation`'s children may be answered as written through `target`, or `undefined` where only the load gives the
 * answer: an order other than the key's, nested relations, a field the child's rows lack or decode otherwise (a JSON
 * document), an afterWrite of the child's.
 *
 * @example
 * ```ts
 * written.asWritten = asWrittenOf(relation, { primaryKey: 'id', entity, afterWrite: false })
 * ```
 */
export function asWrittenOf (relation: DeclaredRelation, target: AsWrittenTarget): AsWritten | undefined {
  if (relation.kind !== 'one-to-many' || relation.relatedConfig !== undefined || target.afterWrite) return undefined
  // The load orders by `orderBy`, then by `id`: only the generated key's order is the order of writing.
  if (target.primaryKey !== 'id' || !(relation.orderBy ?? []).every((key) => key === 'id')) return undefined
  if (relation.foreignKey === undefined) return undefined
  const columns = [...new Set([...Object.keys(relation.target.properties), relation.foreignKey])]
  const stored = propertiesOf(target.entity)
  if (!columns.every((column) => column in stored)) return undefined
  // The load answers a JSON document's text as read; the child's rows are decoded.
  if (jsonTextDecoder({ schema: { properties: stored }, columns }) !== undefined) return undefined
  return { columns, limit: relation.limit }
}

/**
 * The children of a new parent as its relation's load would answer them, or `undefined` where only the load can
 * tell: the related table has a rule now (row or field), or the keys are not in ascending order (the order of the
 * load).
 *
 * @example
 * ```ts
 * const children = childrenAsWritten(plan, relation.rule, rows)
 * if (children !== undefined) parent.books = children
 * ```
 */
export function childrenAsWritten (plan: AsWritten, rule: RelationRuleSlot, rows: readonly Row[]): Row[] | undefined {
  if (rule.hasRule) return undefined
  let previous: number | bigint | undefined
  for (const row of rows) {
    const key = row.id
    if (typeof key !== 'number' && typeof key !== 'bigint') return undefined
    if (previous !== undefined && !(key > previous)) return undefined
    previous = key
  }
  const kept = plan.limit === undefined ? rows : rows.slice(0, plan.limit)
  return kept.map((row) => {
    const child: Row = {}
    for (const column of plan.columns) child[column] = row[column]
    return child
  })
}

/** The relations left to load of each parent answered with children as written. */
const left = new WeakMap<object, ReadonlySet<string>>()

/**
 * Says that `row`, answered with relations `only` (`undefined`: all of `all`), has `answered` already: the load reads
 * only the others.
 *
 * @example
 * ```ts
 * answeredAsWritten(row, ['books'], ['books', 'publisher'], context.fields.defaultRelations)
 * ```
 */
export function answeredAsWritten (
  row: object, answered: readonly string[], all: readonly string[], only: ReadonlySet<string> | undefined
): void {
  left.set(row, new Set(all.filter((field) => (only === undefined || only.has(field)) && !answered.includes(field))))
}

/**
 * The relations to load of `row`, of those `only` names: the ones not answered as written ({@link answeredAsWritten}).
 *
 * @example
 * ```ts
 * const fields = relationsLeft(row, context.fields.defaultRelations)
 * ```
 */
export function relationsLeft (row: unknown, only: ReadonlySet<string> | undefined): ReadonlySet<string> | undefined {
  return (typeof row === 'object' && row !== null ? left.get(row) : undefined) ?? only
}
