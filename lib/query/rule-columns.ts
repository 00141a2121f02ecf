import type { OperationNode } from 'kysely'
import { LruCache } from '../execution/lru-cache.js'

// The column names a row rule reads, so that a write that changes none of them can skip its `WITH CHECK` read: the
// row after such a write is in the rule exactly when the row before was, and the write's own WHERE tested that.

/** Learnt per rule shape (its SQL without values), the least recently used forgotten past 256 shapes. */
const learnt = new LruCache<string, ReadonlySet<string> | null>(256)

/** Whether a value is an operation node (an object with a `kind`), the only values the walk descends into. */
function isNode (value: unknown): value is OperationNode {
  return typeof value === 'object' && value !== null && typeof Reflect.get(value, 'kind') === 'string'
}

/** Collects the column names under `node` into `names`; false when the tree reads something no name states. */
function collect (node: OperationNode, names: Set<string>): boolean {
  // Raw SQL and `*` read columns that no node names: a rule holding one is never known to be untouched.
  if (node.kind === 'RawNode' || node.kind === 'SelectAllNode') return false
  if (node.kind === 'ColumnNode') {
    const name: unknown = Reflect.get(Reflect.get(node, 'column') ?? {}, 'name')
    if (typeof name !== 'string') return false
    names.add(name)
    return true
  }
  for (const value of Object.values(node)) {
    const children: readonly unknown[] = Array.isArray(value) ? value : [value]
    for (const child of children) if (isNode(child) && !collect(child, names)) return false
  }
  return true
}

/**
 * The names of every column a rule's tree references, at any depth (its subqueries' too, whatever their table), or
 * `undefined` when it holds raw SQL or `*`. Learnt once per `shape`: a shape is the rule's SQL without its values, so
 * two trees of one shape reference the same columns.
 *
 * @example
 * ```ts
 * columnsRead('scope#1;', eb('owner', '=', 'alice').toOperationNode()) // Set { 'owner' }
 * ```
 */
export function columnsRead (shape: string, node: OperationNode): ReadonlySet<string> | undefined {
  const known = learnt.get(shape)
  if (known !== undefined) return known ?? undefined
  const names = new Set<string>()
  const read = collect(node, names) ? names : null
  learnt.set(shape, read)
  return read ?? undefined
}
