import type { CompiledQuery, RootOperationNode } from 'kysely'
import { answersOneRow } from './one-row.js'

// Which statements may read many rows. The issue that asked for it (36) bounds the work of one request, not
// only its answer: a heavy statement runs where it cannot hold up a key lookup (on SQLite, a worker thread;
// on PostgreSQL and MySQL, within the bulkhead of connections heavy statements may hold). A statement is
// classed once, by the shape of its operation tree (never by its values), and the class is kept with its
// compiled node, which a cached statement keeps while it is cached: the same WeakMap idea as one-row.ts.

/**
 * `cheap`: its rows are found by a key or an index range and few are read (a key lookup, a page in index
 * order). `heavy`: it may read or sort many rows whatever its LIMIT (a substring match, a subquery per row,
 * an aggregate, a window, a delete that may cascade).
 */
export type CostClass = 'cheap' | 'heavy'

/**
 * `learned`: cheap until the path that runs it finds that a run read many rows ({@link learnedHeavy}), heavy from
 * then on. For a statement whose cost is in the data, not its shape: a to-many load reads every child of its
 * parents, two for most, 250,000 for some. `unbounded`: heavy, since it reads every row its filter finds (to sort
 * them in an order no index gives, to aggregate them), unless the database's statistics bound those rows
 * (dialect/sqlite/sqlite-statistics.ts).
 */
export type CostDeclaration = CostClass | 'learned' | 'unbounded'

/**
 * Rows a statement may read, by the database's statistics, and still be cheap wherever its shape or its sort would
 * class it: reading and sorting a thousand rows takes under a millisecond (benchmarks/analysis.md#bounded-rows).
 */
export const boundedRows = 1000

const declared = new WeakMap<RootOperationNode, CostClass>()
const classified = new WeakMap<RootOperationNode, CostClass>()
const learning = new WeakSet<RootOperationNode>()
const unbounded = new WeakSet<RootOperationNode>()

/**
 * Declares the class of a compiled statement, overriding its shape's, and returns it: the one line a path adds
 * when it knows better than its tree (a to-many load, `learned`). A later path (a bulk write by filter, an
 * aggregate) needs nothing more than this, or nothing at all when its tree already says so.
 *
 * @example
 * ```ts
 * const children = declareCost(db.selectFrom('books').selectAll().where('author_id', 'in', [0]).compile(), 'learned')
 * ```
 */
export function declareCost<Q extends CompiledQuery> (compiled: Q, cost: CostDeclaration): Q {
  if (cost === 'learned') learning.add(compiled.query)
  else if (cost === 'unbounded') unbounded.add(compiled.query)
  else declared.set(compiled.query, cost)
  return compiled
}

/**
 * The class declared for a statement ({@link declareCost}, or learned heavy), if any: no query plan overrides it. An
 * `unbounded` statement has none: heavy by {@link costOf}, which a bound on its rows may lift
 * (dialect/sqlite/sqlite-statistics.ts).
 */
export function declaredCost (query: RootOperationNode): CostClass | undefined {
  return declared.get(query)
}

/** Whether a statement is `learned` and not yet found heavy (its shape included). */
export function learnsCost (query: RootOperationNode): boolean {
  return learning.has(query) && costOf(query) === 'cheap'
}

/**
 * Records that a run of a `learned` statement read many rows (a to-many load that found more children than its
 * limit): heavy from now on, for every parent, in this process.
 */
export function learnedHeavy (query: RootOperationNode): void {
  if (!learning.delete(query)) return
  declared.set(query, 'heavy')
}

/** Operators no B-tree index answers: each row's text is read (or every row but a few, for `not in`). */
const scanningOperators = new Set([
  'like', 'not like', 'ilike', 'not ilike', 'regexp', '~', '~*', '!~', '!~*', 'not in',
])

/**
 * A raw fragment that matches text (SQLite's `lower(x) like lower(?)`, an `EXISTS`), a filter group's `or` and
 * `not` (query/filter-groups.ts), which no single index range answers, or a JSON path's value (query/json-paths.ts),
 * read from each row's document: no expression index is detected for it.
 */
const scanningFragment = /\b(?:like|exists|over|or|not|json_extract|json_value)\b|#>>/i

/** Whether a value is an operation node (an object with a string `kind`). */
export function isNode (value: unknown): value is { readonly kind: string } {
  return typeof value === 'object' && value !== null && 'kind' in value && typeof value.kind === 'string'
}

/** Whether a node (not the root) makes its statement heavy. */
export function heavyNode (node: { readonly kind: string }): boolean {
  switch (node.kind) {
    // A subquery: per row when correlated (a relation filter, search or ordering), or a whole derived table.
    case 'SelectQueryNode':
    case 'AggregateFunctionNode':
    case 'OverNode':
      return true
    case 'OperatorNode':
      return 'operator' in node && typeof node.operator === 'string' && scanningOperators.has(node.operator)
    case 'RawNode':
      return 'sqlFragments' in node && Array.isArray(node.sqlFragments) &&
        node.sqlFragments.some((fragment) => typeof fragment === 'string' && scanningFragment.test(fragment))
    default:
      return false
  }
}

/** Whether any node under `value` is heavy: a depth-first walk over the node's fields, arrays included. */
function containsHeavy (value: unknown): boolean {
  if (Array.isArray(value)) return value.some(containsHeavy)
  if (!isNode(value)) return false
  if (heavyNode(value)) return true
  return Object.values(value).some((field) => typeof field === 'object' && field !== null && containsHeavy(field))
}

/**
 * The class of a statement's tree: a DELETE may cascade to any number of rows (one by key that the catalog says
 * cascades nowhere is declared cheap: dialect/shared/returning-writes.ts); any other by what it holds.
 */
function shapeCost (query: RootOperationNode): CostClass {
  if (query.kind === 'DeleteQueryNode') return 'heavy'
  const parts = Object.values(query)
  return parts.some((part) => typeof part === 'object' && part !== null && containsHeavy(part)) ? 'heavy' : 'cheap'
}

/**
 * The class of a compiled statement: declared ({@link declareCost}; a `learned` one is cheap until a run was
 * slow), else `cheap` for a SELECT by primary key
 * (one-row.ts), else its tree's. Walked once per compiled node. A shape that reads as cheap may still scan for
 * want of an index: SQLite asks its query plan as well (dialect/sqlite/sqlite-readers.ts); on every dialect a LIST
 * page ordered by a column no index orders is declared heavy from the catalog (mount/index-report.ts), and
 * `statementTimeout` bounds the rest (an unindexed filter).
 *
 * @example
 * ```ts
 * costOf(db.selectFrom('items').selectAll().where('name', 'like', '%a%').compile().query) // 'heavy'
 * ```
 */
export function costOf (query: RootOperationNode): CostClass {
  const known = declared.get(query) ?? classified.get(query)
  if (known !== undefined) return known
  const cost = answersOneRow(query) ? 'cheap' : unbounded.has(query) ? 'heavy' : shapeCost(query)
  classified.set(query, cost)
  return cost
}
