import {
  BinaryOperationNode,
  OperationNodeTransformer,
  OperatorNode,
  PrimitiveValueListNode,
  RawNode,
  TupleNode,
  ValueListNode,
  ValueNode,
} from 'kysely'
import type { KyselyPlugin, OperationNode, QueryId } from 'kysely'

// SQLite built with STAT4 (better-sqlite3 is) reads a bound value that an index constraint compares with to
// estimate how many rows match, and then marks the statement to be prepared again whenever that value is
// bound anew: every run of a filtered LIST on an analyzed table (ANALYZE, or `PRAGMA optimize`) was parsed and
// planned again, twice the cost of a run (benchmarks/analysis.md#sqlite-stable-plans). Written `+?`, the value
// is the same (unary plus is a no-op in SQLite, and a parameter has no affinity either way), the index still
// serves the term, and the planner no longer reads the value: one plan per statement, as
// `SQLITE_DBCONFIG_ENABLE_QPSG` would give (better-sqlite3 does not expose it). The trade-off is QPSG's: on
// skewed data the plan no longer changes with the value compared.

/** The operators SQLite answers from an index (its WO_EQ, WO_IS, WO_IN and the ranges): those whose value STAT4 reads.
 * */
const indexed = new Set<string>(['=', '==', 'is', 'in', '<', '<=', '>', '>='])

/** `+?`: the value as a parameter the planner does not look into. */
function opaque (value: ValueNode): OperationNode {
  return value.immediate === true ? value : RawNode.create(['+', ''], [value])
}

function opaqueAll (values: readonly OperationNode[]): OperationNode[] {
  return values.map((value) => (ValueNode.is(value) ? opaque(value) : value))
}

/** A comparison's right side with each bound value opaque: one value, an `IN` list, or a row value `(?, ?)`. */
function opaqueOperand (node: OperationNode): OperationNode {
  if (ValueNode.is(node)) return opaque(node)
  if (PrimitiveValueListNode.is(node)) {
    return ValueListNode.create(node.values.map((value) => opaque(ValueNode.create(value))))
  }
  if (ValueListNode.is(node)) return ValueListNode.create(opaqueAll(node.values))
  if (TupleNode.is(node)) return TupleNode.create(opaqueAll(node.values))
  return node
}

class OpaqueComparedValues extends OperationNodeTransformer {
  protected override transformBinaryOperation (node: BinaryOperationNode, queryId?: QueryId): BinaryOperationNode {
    const transformed = super.transformBinaryOperation(node, queryId)
    const { operator } = transformed
    if (!OperatorNode.is(operator) || !indexed.has(operator.operator)) return transformed
    return BinaryOperationNode.create(transformed.leftOperand, operator, opaqueOperand(transformed.rightOperand))
  }
}

// Stateless between calls (transforms run synchronously, one at a time): one instance serves every statement.
const transformer = new OpaqueComparedValues()

/**
 * The plugin the data layer compiles its SQLite statements with: every value compared by an operator an index
 * can answer is written `+?`, so that a statement keeps one plan instead of being prepared again on each run.
 * Only the library's own statements get it; a query the user builds is compiled as written.
 *
 * @example
 * ```ts
 * db.selectFrom('books').selectAll().where('author_id', '=', 3).withPlugin(stablePlans).compile().sql
 * // select * from "books" where "author_id" = +?
 * ```
 */
export const stablePlans: KyselyPlugin = {
  transformQuery: ({ node }) => transformer.transformNode(node),
  transformResult: async ({ result }) => result,
}
