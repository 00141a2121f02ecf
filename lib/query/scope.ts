import { ColumnNode, OperationNodeTransformer, ReferenceNode, TableNode } from 'kysely'
import type { Expression, OperationNode, SelectQueryNode, SqlBool } from 'kysely'
import type { AnyDatabase } from '../sql.js'
import type { Condition } from './condition.js'
import { expressionOf } from './condition.js'
import { compiledOnce } from './scope-shape.js'

/**
 * Qualifies the bare column references of a scope with its table (`owner` → `items.owner`), so that a join
 * added to a statement cannot make them ambiguous. Subqueries are left as written: their bare columns
 * belong to their own `FROM`.
 */
class QualifyColumns extends OperationNodeTransformer {
  readonly #table: TableNode

  constructor (table: string) {
    super()
    const dot = table.indexOf('.')
    this.#table =
      dot === -1 ? TableNode.create(table) : TableNode.createWithSchema(table.slice(0, dot), table.slice(dot + 1))
  }

  protected override transformReference (node: ReferenceNode): ReferenceNode {
    if (node.table !== undefined || !ColumnNode.is(node.column)) return super.transformReference(node)
    return ReferenceNode.create(node.column, this.#table)
  }

  protected override transformSelectQuery (node: SelectQueryNode): SelectQueryNode {
    return node
  }
}

/** A scope as a `WHERE` term of LIST and GET, and as the expression the writes add (already qualified). */
export interface ScopeCondition extends Condition {
  readonly where: Expression<SqlBool>
}

/**
 * A viewset's `scope` as one more `WHERE` term of the statements of a request: its column references
 * qualified with the table, and its `shape` a key of the SQL it compiles to (values apart: a short key learnt once per
 * spelling, else the SQL itself), so that a scoped LIST still shares one compiled statement per shape. The SQL's
 * length prefix, and the learnt key's end mark, keep two scopes from ever spelling the same shape once joined with
 * the other terms.
 *
 * @example
 * ```ts
 * const owned = scopeCondition(db, 'items', eb('owner', '=', token.sub)) // WHERE "items"."owner" = ?
 * await resource.find(db, id, { scope: owned })
 * ```
 */
export function scopeCondition (db: AnyDatabase, table: string, expression: Expression<SqlBool>): ScopeCondition {
  const node = expression.toOperationNode()
  let qualified: Expression<SqlBool> | undefined
  const where = (): Expression<SqlBool> => (qualified ??= qualify(table, node))
  // Compiled only for its text and values (a statement never run), once per spelling of the rule's tree.
  const { shape, parameters } = compiledOnce(db, table, node, (unbound) => {
    const { sql, parameters: bound } = db.selectFrom(table).where(qualify(table, unbound)).compile()
    return { sql: `scope:${sql.length}:${sql}`, parameters: bound } // the shape, kept flat for the lookups that follow
  })
  return { shape, parameters, expression: where, get where () { return where() } }
}

function qualify (table: string, node: OperationNode): Expression<SqlBool> {
  return expressionOf(new QualifyColumns(table).transformNode(node))
}
