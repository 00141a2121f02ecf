import {
  AliasNode,
  AndNode,
  BinaryOperationNode,
  ColumnNode,
  OperatorNode,
  OrNode,
  ParensNode,
  PrimitiveValueListNode,
  RawNode,
  ReferenceNode,
  SelectQueryNode,
  TableNode,
  UpdateQueryNode,
  ValueListNode,
  ValueNode,
} from 'kysely'
import type { CompiledQuery, OperationNode, QueryResult, RootOperationNode } from 'kysely'
import { heavyNode, isNode } from './cost-class.js'
import type { Row } from '../sql.js'

// A statement heavy only for the rows it may sort or aggregate (a page in an order no index gives, AGGREGATE, an OR
// group: cost-class.ts) reads no more rows than its WHERE's index equalities find. Which columns those are, and how
// many values each is compared with, is in its tree; how many rows one value has is in the database's statistics
// (dialect/postgres/postgres-statistics.ts). Read from the tree once per compiled node, as its class is.

/**
 * The rows a WHERE reads, as its equalities bound them: `key`, the rows of `values` values of one column; `all`
 * (AND), the fewest of its parts'; `any` (OR), the sum of its parts'.
 */
export type RowBound =
  | { readonly kind: 'key'; readonly column: string; readonly values: number }
  | { readonly kind: 'all' | 'any'; readonly parts: readonly RowBound[] }

/** A statement's one table, and the bound its WHERE puts on the rows it reads there. */
export interface BoundedSource {
  readonly schema: string | undefined
  readonly table: string
  readonly bound: RowBound
}

/**
 * What lifts heavy statements to cheap by the database's statistics (dialect/postgres/postgres-statistics.ts): the
 * bulkhead lets a `bounded` one through (prepared-kysely.ts) and tells it how long each run took, since statistics
 * that went stale may be wrong: a run past {@link boundedRunLimit} has the dialect check the rows it read
 * (dialect/postgres/postgres-statistics.ts).
 */
export interface RowBounds {
  /** Whether the statistics bound the rows of this heavy statement; `false` while they are being read. */
  readonly bounded: (compiled: CompiledQuery) => boolean
  /** A bounded statement ran from `start` to `end` (`performance.now()`), from its call to its answer. */
  readonly ran: (compiled: CompiledQuery, start: number, end: number) => void
}

/** Runs a query of the database's catalog or plans for {@link RowBounds} (through Kysely, outside the bulkhead). */
export type CatalogQuery = (compiled: CompiledQuery<Row>) => Promise<QueryResult<Row>>

/** Milliseconds a statistics-lifted statement may take: the p99 issue 36's attack bounds a key lookup to. */
export const boundedRunLimit = 50

/** A column's name, when the node is a plain column reference (`author_id`, `books.author_id`). */
function columnOf (node: OperationNode): string | undefined {
  if (!ReferenceNode.is(node) || !ColumnNode.is(node.column)) return undefined
  return node.column.column.name
}

/** How many values an equality's right side holds: one, or each of an `in` list. */
function valuesOf (node: OperationNode): number | undefined {
  if (ValueNode.is(node)) return 1
  if (PrimitiveValueListNode.is(node)) return node.values.length
  if (ValueListNode.is(node)) return node.values.length
  return undefined
}

/** `column = ?` or `column in (?, …)`, as a key bound. */
function comparison (node: BinaryOperationNode): RowBound | undefined {
  if (!OperatorNode.is(node.operator) || (node.operator.operator !== '=' && node.operator.operator !== 'in')) {
    return undefined
  }
  const column = columnOf(node.leftOperand)
  const values = valuesOf(node.rightOperand)
  return column === undefined || values === undefined ? undefined : { kind: 'key', column, values }
}

/** A raw fragment that only groups or joins its parts with `or` (query/filter-groups.ts' OR group). */
const groupingFragment = /^[\s()]*(?:or)?[\s()]*$/i

/** The parts of a raw OR group (nested joins flattened, their ` or ` separators dropped), and whether it has an or. */
function rawParts (node: RawNode, parts: OperationNode[]): boolean | undefined {
  if (!node.sqlFragments.every((fragment) => groupingFragment.test(fragment))) return undefined
  let or = node.sqlFragments.some((fragment) => /or/i.test(fragment))
  for (const parameter of node.parameters) {
    if (!RawNode.is(parameter)) {
      parts.push(parameter)
      continue
    }
    const nested = rawParts(parameter, parts)
    if (nested === undefined) return undefined
    or ||= nested
  }
  return or
}

/** AND's bound: the parts that have one (at least one); OR's: every part's, or none. */
function combined (kind: 'all' | 'any', nodes: readonly OperationNode[]): RowBound | undefined {
  const parts = nodes.map(boundOf)
  const known = parts.filter((part) => part !== undefined)
  if (known.length === 0 || (kind === 'any' && known.length < parts.length)) return undefined
  return known.length === 1 ? known[0] : { kind, parts: known }
}

/** The bound a WHERE expression puts on the rows read; none when no index equality bounds them all. */
function boundOf (node: OperationNode): RowBound | undefined {
  if (BinaryOperationNode.is(node)) return comparison(node)
  if (ParensNode.is(node)) return boundOf(node.node)
  if (AndNode.is(node)) return combined('all', [node.left, node.right])
  if (OrNode.is(node)) return combined('any', [node.left, node.right])
  if (!RawNode.is(node)) return undefined
  const parts: OperationNode[] = []
  const or = rawParts(node, parts)
  return or === undefined ? undefined : combined(or ? 'any' : 'all', parts)
}

/** Whether a node is a raw fragment (a node's kind says what it is; Kysely's guard takes typed nodes only). */
function isRaw (node: { readonly kind: string }): node is RawNode {
  return node.kind === 'RawNode' && 'sqlFragments' in node && Array.isArray(node.sqlFragments)
}

/**
 * Whether a node holds something heavy that reads beyond the rows its source bounds: a subquery (but `derived`), a
 * window, a raw fragment (but an OR group's). An aggregate, or a substring match, over bounded rows reads only them.
 */
function heavyBeyond (value: unknown, derived: OperationNode | undefined): boolean {
  if (Array.isArray(value)) return value.some((item) => heavyBeyond(item, derived))
  if (!isNode(value) || value === derived || subqueryExempt.has(value)) return false
  switch (value.kind) {
    case 'AggregateFunctionNode':
    case 'OperatorNode':
      break
    case 'RawNode':
      if (isRaw(value) && rawParts(value, []) !== undefined) break
      if (heavyNode(value)) return true
      break
    default:
      if (heavyNode(value)) return true
  }
  return Object.values(value).some((field) =>
    typeof field === 'object' && field !== null && heavyBeyond(field, derived))
}

/** Subqueries an UPDATE's bound already counts ({@link updatedSource}), while its tree is walked for the rest. */
const subqueryExempt = new WeakSet<object>()

/** Whether a node is a SELECT (a node's kind says what it is; Kysely's guard takes typed nodes only). */
function isSelect (node: { readonly kind: string }): node is SelectQueryNode {
  return node.kind === 'SelectQueryNode'
}

/** The SELECTs under a node, each whole (not walked into). */
function subqueriesOf (value: unknown, found: SelectQueryNode[]): SelectQueryNode[] {
  if (Array.isArray(value)) {
    for (const item of value) subqueriesOf(item, found)
  } else if (isNode(value)) {
    if (isSelect(value)) found.push(value)
    else for (const field of Object.values(value)) subqueriesOf(field, found)
  }
  return found
}

/** The one table a SELECT reads (no join), and its schema. */
function tableOf (select: SelectQueryNode): { schema: string | undefined, table: string } | undefined {
  const froms = select.from?.froms
  if (froms?.length !== 1 || select.joins !== undefined) return undefined
  const from = froms[0]
  if (from === undefined || !TableNode.is(from)) return undefined
  return { schema: from.table.schema?.name, table: from.table.identifier.name }
}

/**
 * The table a heavy SELECT reads and the bound its WHERE's equalities put on those rows, when nothing else in it
 * reads more: a page of one table (sorted in any order), AGGREGATE's page of groups over one derived table of one
 * table (data/aggregate-statement.ts), or a PATCH by filter's bounded UPDATE ({@link updatedSource}). None for any
 * other statement (a join, a subquery per row, a scan).
 *
 * @example
 * ```ts
 * boundedSource(db.selectFrom('books').selectAll().where('author_id', '=', 7).orderBy('year').compile().query)
 * // { schema: undefined, table: 'books', bound: { kind: 'key', column: 'author_id', values: 1 } }
 * ```
 */
export function boundedSource (query: RootOperationNode): BoundedSource | undefined {
  if (UpdateQueryNode.is(query)) return updatedSource(query)
  if (!SelectQueryNode.is(query)) return undefined
  const outer = query.from?.froms
  const derived = outer?.length === 1 && outer[0] !== undefined && AliasNode.is(outer[0]) ? outer[0].node : undefined
  const source = derived !== undefined && SelectQueryNode.is(derived) ? derived : query
  if (source !== query && query.joins !== undefined) return undefined
  const table = tableOf(source)
  const where = source.where?.where
  if (table === undefined || where === undefined) return undefined
  // The root's parts, then the derived table's (skipped in the first walk, a subquery only by its kind).
  if (heavyBeyond(Object.values(query), source === query ? undefined : source)) return undefined
  if (source !== query && heavyBeyond(Object.values(source), undefined)) return undefined
  const bound = boundOf(where)
  return bound === undefined ? undefined : { ...table, bound }
}

/**
 * An UPDATE of one table (no FROM, no join, no alias) whose WHERE's equalities bound the rows it changes, and whose
 * subqueries each read that same table, unaliased, within bounds of their own: the bounded UPDATE of a PATCH by filter
 * (data/bulk-update.ts: `… where <terms> and not exists (select … where <terms> limit 1 offset n)`). Such a subquery
 * names the table's columns only, so it is not correlated: run once, it adds its rows to the UPDATE's.
 */
function updatedSource (query: UpdateQueryNode): BoundedSource | undefined {
  const target = query.table
  if (query.from !== undefined || query.joins !== undefined || target === undefined || !TableNode.is(target)) {
    return undefined
  }
  const where = query.where?.where
  const bound = where === undefined ? undefined : boundOf(where)
  if (where === undefined || bound === undefined) return undefined
  const table = { schema: target.table.schema?.name, table: target.table.identifier.name }
  const parts: RowBound[] = [bound]
  for (const subquery of subqueriesOf(where, [])) {
    const source = boundedSource(subquery)
    const from = subquery.from?.froms[0]
    if (source === undefined || source.table !== table.table || source.schema !== table.schema ||
      from === undefined || !TableNode.is(from)) return undefined
    parts.push(source.bound)
    subqueryExempt.add(subquery)
  }
  return heavyBeyond(Object.values(query), undefined) ? undefined : { ...table, bound: { kind: 'any', parts } }
}
