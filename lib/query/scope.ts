import { ColumnNode, OperationNodeTransformer, ReferenceNode, TableNode } from 'kysely'
import type { Expression, OperationNode, SelectQueryNode, SqlBool } from 'kysely'
import type { AnyDatabase } from '../sql.js'
import type { Condition } from './condition.js'
import { expressionOf } from './condition.js'
import { columnsRead } from './rule-columns.js'
import { compiledOnce } from './scope-shape.js'
import type { ScopePatterns } from './scope-shape.js'

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
  /** The column names the rule reads, at any depth (query/rule-columns.ts); `undefined` when unknown (raw SQL, `*`). */
  readonly reads?: ReadonlySet<string> | undefined
}

/**
 * A viewset's `scope` as one more `WHERE` term of the statements of a request: its column references
 * qualified with the table, and its `shape` a key of the SQL it compiles to (values apart: a short key learnt once per
 * spelling, else the SQL itself), so that a scoped LIST still shares one compiled statement per shape. The SQL's
 * length prefix, and the learnt key's end mark, keep two scopes from ever spelling the same shape once joined with
 * the other terms. `patterns`: the trees its caller's rule built before (query/scope-shape.ts), matched first.
 *
 * @example
 * ```ts
 * const owned = scopeCondition(db, 'items', eb('owner', '=', token.sub)) // WHERE "items"."owner" = ?
 * await resource.find(db, id, { scope: owned })
 * ```
 */
export function scopeCondition (
  db: AnyDatabase, table: string, expression: Expression<SqlBool>, patterns?: ScopePatterns
): ScopeCondition {
  const node = expression.toOperationNode()
  // Compiled only for its text and values (a statement never run), once per spelling of the rule's tree.
  const { shape, parameters } = compiledOnce(db, table, node, compiledScope, patterns)
  return new QualifiedScope(table, node, shape, parameters)
}

/** A scope's tree compiled alone, its shape kept flat for the lookups that follow (the SQL's length prefixed). */
function compiledScope (
  node: OperationNode, db: AnyDatabase, table: string
): { sql: string, parameters: readonly unknown[] } {
  const { sql, parameters } = db.selectFrom(table).where(qualify(table, node)).compile()
  return { sql: `scope:${sql.length}:${sql}`, parameters }
}

/** A scope of one request: its tree is qualified only when a statement is built from it (a cache miss). */
class QualifiedScope implements ScopeCondition {
  readonly shape: string
  readonly parameters: readonly unknown[]
  readonly #table: string
  readonly #node: OperationNode
  #qualified: Expression<SqlBool> | undefined

  constructor (table: string, node: OperationNode, shape: string, parameters: readonly unknown[]) {
    this.#table = table
    this.#node = node
    this.shape = shape
    this.parameters = parameters
  }

  get where (): Expression<SqlBool> {
    return (this.#qualified ??= qualify(this.#table, this.#node))
  }

  get reads (): ReadonlySet<string> | undefined {
    return columnsRead(this.shape, this.#node)
  }

  expression (): Expression<SqlBool> {
    return this.where
  }
}

function qualify (table: string, node: OperationNode): Expression<SqlBool> {
  return expressionOf(new QualifyColumns(table).transformNode(node))
}
