import { ColumnNode, OperationNodeTransformer, ReferenceNode, TableNode } from 'kysely';
import { expressionOf } from './condition.js';
/**
 * Qualifies the bare column references of a scope with its table (`owner` → `items.owner`), so that a join
 * added to a statement cannot make them ambiguous. Subqueries are left as written: their bare columns
 * belong to their own `FROM`.
 */
class QualifyColumns extends OperationNodeTransformer {
    #table;
    constructor(table) {
        super();
        const dot = table.indexOf('.');
        this.#table =
            dot === -1 ? TableNode.create(table) : TableNode.createWithSchema(table.slice(0, dot), table.slice(dot + 1));
    }
    transformReference(node) {
        if (node.table !== undefined || !ColumnNode.is(node.column))
            return super.transformReference(node);
        return ReferenceNode.create(node.column, this.#table);
    }
    transformSelectQuery(node) {
        return node;
    }
}
/**
 * A viewset's `scope` as one more `WHERE` term of the statements of a request: its column references
 * qualified with the table, and its `shape` the SQL it compiles to (values apart), so that a scoped LIST
 * still shares one compiled statement per shape. The length prefix keeps two scopes from ever spelling
 * the same shape once joined with the other terms.
 *
 * @example
 * ```ts
 * const owned = scopeCondition(db, 'items', eb('owner', '=', token.sub)) // WHERE "items"."owner" = ?
 * await resource.find(db, id, { scope: owned })
 * ```
 */
export function scopeCondition(db, table, expression) {
    const qualified = expressionOf(new QualifyColumns(table).transformNode(expression.toOperationNode()));
    // Compiled only for its text and values: a statement never run.
    const { sql, parameters } = db.selectFrom(table).where(qualified).compile();
    return { shape: `scope:${sql.length}:${sql}`, parameters, expression: () => qualified, where: qualified };
}
//# sourceMappingURL=scope.js.map