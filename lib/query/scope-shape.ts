import type { OperationNode } from 'kysely'
import type { AnyDatabase } from '../sql.js'
import { LruCache } from '../execution/lru-cache.js'

// A scope is rebuilt by its rule on every request, and compiling it to learn its shape cost more than the rest of a
// scoped GET. Its operation nodes spelled without their bound values name the SQL it compiles to, so the shape and
// the order in which the compiler binds those values are learnt once per spelling and dialect, then reused. A learnt
// shape is named by a short key rather than its SQL: it goes into the statement caches' keys of every request, whose
// hashing costs by length.

/** What one spelling compiles to: its key, and for each bound parameter the index of its value in walk order. */
interface LearntShape {
  readonly key: string
  readonly order: readonly number[]
}

/** Learnt shapes so far in this process: each key is new, so a key names one spelling's SQL for good. */
let learntCount = 0

/** A value stand-in while a spelling is compiled: where it lands among the parameters gives the binding order. */
class Slot {
  constructor (readonly index: number) {}
}

/** Spellings kept per dialect adapter: each is one short string and a few numbers. */
const maxSpellings = 256
const learnt = new WeakMap<object, LruCache<string, LearntShape | null>>()

function isPlainObject (value: object): value is Record<string, unknown> {
  return Object.getPrototypeOf(value) === Object.prototype
}

/**
 * The node tree spelled with `?` for each value the compiler binds (pushed to `values`, in walk order), or
 * `undefined` when it holds something not spelled exactly (a class instance, an immediate `Date`…): then the
 * scope is compiled as before.
 */
function spell (value: unknown, values: unknown[]): string | undefined {
  if (value === null) return 'n'
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean') return `${value}`
  if (value === undefined) return 'u'
  if (typeof value !== 'object') return undefined
  let out = '['
  if (Array.isArray(value)) {
    for (const item of value) {
      const part = spell(item, values)
      if (part === undefined) return undefined
      out += `${part},`
    }
    return `${out}]`
  }
  if (!isPlainObject(value)) return undefined
  if (value.kind === 'ValueNode' && value.immediate !== true) {
    values.push(value.value)
    return '?'
  }
  if (value.kind === 'PrimitiveValueListNode' && Array.isArray(value.values)) {
    values.push(...value.values)
    return `?${value.values.length}`
  }
  out = '{'
  for (const key in value) {
    const part = spell(value[key], values)
    if (part === undefined) return undefined
    out += `${key}:${part},`
  }
  return `${out}}`
}

/** The same tree with each bound value replaced by a {@link Slot}, in {@link spell}'s walk order. */
function withSlots (value: unknown, next: () => Slot): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) return value.map((item) => withSlots(item, next))
  if (!isPlainObject(value)) return value
  if (value.kind === 'ValueNode' && value.immediate !== true) return { ...value, value: next() }
  if (value.kind === 'PrimitiveValueListNode' && Array.isArray(value.values)) {
    return { ...value, values: value.values.map(() => next()) }
  }
  const copy: Record<string, unknown> = {}
  for (const key in value) copy[key] = withSlots(value[key], next)
  return copy
}

function isOperationNode (value: unknown): value is OperationNode {
  return typeof value === 'object' && value !== null && 'kind' in value && typeof value.kind === 'string'
}

/**
 * The shape of `node` (a key that two nodes share only when they compile to the same SQL through `compile`: a short
 * learnt key, or the SQL itself when it cannot be learnt) and its parameters, learnt once per spelling on `db`'s
 * dialect. `compile` must compile the given node the same way whatever its values are; an instance with plugins
 * (which may rewrite values) compiles every time.
 *
 * @example
 * ```ts
 * const compile = (n: OperationNode) => db.selectFrom('items').where(expressionOf(n)).compile()
 * const { shape, parameters } = compiledOnce(db, 'items', node, compile) // compiles once per spelling
 * ```
 */
export function compiledOnce (
  db: AnyDatabase,
  context: string,
  node: OperationNode,
  compile: (node: OperationNode) => { readonly sql: string, readonly parameters: readonly unknown[] }
): { readonly shape: string, readonly parameters: readonly unknown[] } {
  const executor = db.getExecutor()
  const values: unknown[] = []
  const spelled = executor.plugins.length === 0 ? spell(node, values) : undefined
  if (spelled === undefined) return compiledNow(node, compile)
  let shapes = learnt.get(executor.adapter)
  if (shapes === undefined) {
    shapes = new LruCache(maxSpellings)
    learnt.set(executor.adapter, shapes)
  }
  const key = `${context}\u0000${spelled}`
  let shape = shapes.get(key)
  if (shape === undefined) {
    shape = learn(node, compile)
    shapes.set(key, shape)
  }
  if (shape === null) return compiledNow(node, compile)
  const parameters: unknown[] = []
  for (const index of shape.order) parameters.push(values[index])
  return { shape: shape.key, parameters }
}

function compiledNow (
  node: OperationNode,
  compile: (node: OperationNode) => { readonly sql: string, readonly parameters: readonly unknown[] }
): { readonly shape: string, readonly parameters: readonly unknown[] } {
  const { sql, parameters } = compile(node)
  return { shape: sql, parameters }
}

/** Compiles the tree with slots for values; `null` when a parameter is not one of them (so it is not learnt). */
function learn (
  node: OperationNode,
  compile: (node: OperationNode) => { readonly sql: string, readonly parameters: readonly unknown[] }
): LearntShape | null {
  let count = 0
  const slotted = withSlots(node, () => new Slot(count++))
  if (!isOperationNode(slotted)) return null
  const { parameters } = compile(slotted)
  const order: number[] = []
  for (const parameter of parameters) {
    if (!(parameter instanceof Slot)) return null
    order.push(parameter.index)
  }
  return { key: `scope#${++learntCount};`, order } // the `;` ends it: a shape joined to others stays one
}
