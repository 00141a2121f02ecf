import type { OperationNode } from 'kysely'
import type { AnyDatabase } from '../sql.js'
import { LruCache } from '../execution/lru-cache.js'

// A scope is rebuilt by its rule on every request, and compiling it to learn its shape cost more than the rest of a
// scoped GET. Its operation nodes spelled without their bound values name the SQL it compiles to, so the shape and
// the order in which the compiler binds those values are learnt once per spelling and dialect, then reused. A learnt
// shape is named by a short key rather than its SQL: it goes into the statement caches' keys of every request, whose
// hashing costs by length. Spelling a tree and hashing the spelling still cost a scoped GET a fifth of its own work,
// so the last trees learnt in each context are kept as patterns that a new tree is matched against node by node,
// with no string built (benchmarks/analysis.md#scope-patterns).

/** What one spelling compiles to: its key, and for each bound parameter the index of its value in walk order. */
interface LearntShape {
  readonly key: string
  readonly order: readonly number[]
  /** `order` is 0, 1, 2…: the values in walk order are the parameters as they are. */
  readonly inWalkOrder: boolean
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

/** Patterns tried per context before spelling: a rule usually builds one tree shape, or one per role. */
const maxPatterns = 8
/** Contexts kept per dialect adapter, each with its last patterns matched. */
const patterns = new WeakMap<object, LruCache<string, ScopePatterns>>()

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
 * A learnt tree as {@link match} reads it: what {@link spell} would spell, kept as nodes rather than text. A primitive
 * is compared as it is, a bound value or value list only counted, an object by its keys in their enumeration order.
 */
type Pattern =
  | { readonly is: 'literal'; readonly value: unknown }
  | { readonly is: 'value' }
  | { readonly is: 'list'; readonly length: number }
  | { readonly is: 'array'; readonly items: readonly Pattern[] }
  | { readonly is: 'object'; readonly keys: readonly string[]; readonly fields: readonly Pattern[] }

/** A learnt tree's pattern and what it compiles to. */
interface Learnt {
  readonly pattern: Pattern
  readonly shape: LearntShape
}

/** The pattern of a tree {@link spell} spelled (so every object in it is plain, every leaf a primitive). */
function patternOf (value: unknown): Pattern {
  if (typeof value !== 'object' || value === null) return { is: 'literal', value }
  if (Array.isArray(value)) return { is: 'array', items: value.map(patternOf) }
  if (!isPlainObject(value)) throw new Error('a scope pattern is made of a tree that was spelled')
  if (value.kind === 'ValueNode' && value.immediate !== true) return { is: 'value' }
  if (value.kind === 'PrimitiveValueListNode' && Array.isArray(value.values)) {
    return { is: 'list', length: value.values.length }
  }
  const keys: string[] = []
  const fields: Pattern[] = []
  for (const key in value) {
    keys.push(key)
    fields.push(patternOf(value[key]))
  }
  return { is: 'object', keys, fields }
}

/** Whether `value` is a bound value or value list, which {@link spell} spells as `?`, not as an object. */
function isBound (value: Record<string, unknown>): boolean {
  return (value.kind === 'ValueNode' && value.immediate !== true) ||
    (value.kind === 'PrimitiveValueListNode' && Array.isArray(value.values))
}

/**
 * Whether `value` would spell as the tree of `pattern` did, pushing its bound values to `values` in {@link spell}'s
 * walk order: a match is the same spelling, so the same SQL, without building a string or hashing one.
 */
function match (value: unknown, pattern: Pattern, values: unknown[]): boolean {
  switch (pattern.is) {
    case 'literal':
      return value === pattern.value
    case 'array': {
      if (!Array.isArray(value) || value.length !== pattern.items.length) return false
      let index = 0
      for (const item of pattern.items) if (!match(value[index++], item, values)) return false
      return true
    }
    default:
      return typeof value === 'object' && value !== null && !Array.isArray(value) && isPlainObject(value) &&
        matchObject(value, pattern, values)
  }
}

function matchObject (value: Record<string, unknown>, pattern: Pattern, values: unknown[]): boolean {
  if (pattern.is === 'value') {
    if (value.kind !== 'ValueNode' || value.immediate === true) return false
    values.push(value.value)
    return true
  }
  if (pattern.is === 'list') {
    const list = value.values
    if (value.kind !== 'PrimitiveValueListNode' || !Array.isArray(list) || list.length !== pattern.length) return false
    for (const item of list) values.push(item)
    return true
  }
  if (pattern.is !== 'object' || isBound(value)) return false
  const { keys, fields } = pattern
  let index = 0
  for (const key in value) {
    const field = fields[index]
    if (field === undefined || keys[index] !== key || !match(value[key], field, values)) return false
    index++
  }
  return index === keys.length
}

/** The parameters of a learnt shape from the values of its tree, in walk order. */
function parametersOf (shape: LearntShape, values: unknown[]): unknown[] {
  if (shape.inWalkOrder) return values
  const parameters: unknown[] = []
  for (const index of shape.order) parameters.push(values[index])
  return parameters
}

/**
 * The trees last learnt by one caller of {@link compiledOnce} (a viewset's rule, a relation's), most recent first, each
 * with the dialect adapter and context it was learnt in: held by the caller, they are found with no lookup by name.
 */
export class ScopePatterns {
  readonly #kept: Array<Learnt & { readonly adapter: object, readonly context: string }> = []

  /** The shape and parameters of `node` if it matches a tree kept for `adapter` and `context`, else `undefined`. */
  find (
    adapter: object, context: string, node: OperationNode
  ): { readonly shape: string, readonly parameters: readonly unknown[] } | undefined {
    let values: unknown[] = []
    for (const learnt of this.#kept) {
      if (learnt.adapter === adapter && learnt.context === context && match(node, learnt.pattern, values)) {
        return { shape: learnt.shape.key, parameters: parametersOf(learnt.shape, values) }
      }
      values = []
    }
    return undefined
  }

  /** Keeps `node`'s pattern, learnt as `shape`, first; the oldest goes past {@link maxPatterns}. */
  keep (adapter: object, context: string, node: OperationNode, shape: LearntShape): void {
    this.#kept.unshift({ pattern: patternOf(node), shape, adapter, context })
    if (this.#kept.length > maxPatterns) this.#kept.pop()
  }
}

/** The patterns of the callers that hold none, by context. */
function patternsOf (adapter: object, context: string): ScopePatterns {
  let contexts = patterns.get(adapter)
  if (contexts === undefined) {
    contexts = new LruCache(maxSpellings)
    patterns.set(adapter, contexts)
  }
  let kept = contexts.get(context)
  if (kept === undefined) {
    kept = new ScopePatterns()
    contexts.set(context, kept)
  }
  return kept
}

/**
 * What compiles a tree for {@link compiledOnce}, given the database and context it was called with: a function of
 * the module rather than a closure, so that a matched tree (every request but the first) allocates none.
 */
export type ScopeCompiler = (
  node: OperationNode, db: AnyDatabase, context: string
) => { readonly sql: string, readonly parameters: readonly unknown[] }

/**
 * The shape of `node` (a key that two nodes share only when they compile to the same SQL through `compile`: a short
 * learnt key, or the SQL itself when it cannot be learnt) and its parameters, learnt once per spelling on `db`'s
 * dialect. `compile` must compile the given node the same way whatever its values are; an instance with plugins
 * (which may rewrite values) compiles every time. `kept`: the caller's own patterns, else those of `context`.
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
  compile: ScopeCompiler,
  kept?: ScopePatterns
): { readonly shape: string, readonly parameters: readonly unknown[] } {
  const executor = db.getExecutor()
  if (executor.plugins.length !== 0) return compiledNow(node, db, context, compile)
  const { adapter } = executor
  const patterns = kept ?? patternsOf(adapter, context)
  const found = patterns.find(adapter, context, node)
  if (found !== undefined) return found
  const values: unknown[] = []
  const shape = spelledShape(adapter, context, node, values, (unbound) => compile(unbound, db, context))
  if (shape === undefined) return compiledNow(node, db, context, compile)
  patterns.keep(adapter, context, node, shape)
  return { shape: shape.key, parameters: parametersOf(shape, values) }
}

/** The shape learnt for `node`'s spelling (learnt now if new), its values pushed to `values`; `undefined` when its
 * tree cannot be spelled or its parameters are not its values. */
function spelledShape (
  adapter: object,
  context: string,
  node: OperationNode,
  values: unknown[],
  compile: (node: OperationNode) => { readonly sql: string, readonly parameters: readonly unknown[] }
): LearntShape | undefined {
  const spelled = spell(node, values)
  if (spelled === undefined) return undefined
  let shapes = learnt.get(adapter)
  if (shapes === undefined) {
    shapes = new LruCache(maxSpellings)
    learnt.set(adapter, shapes)
  }
  const key = `${context}\u0000${spelled}`
  let shape = shapes.get(key)
  if (shape === undefined) {
    shape = learn(node, compile)
    shapes.set(key, shape)
  }
  return shape ?? undefined
}

function compiledNow (
  node: OperationNode, db: AnyDatabase, context: string, compile: ScopeCompiler
): { readonly shape: string, readonly parameters: readonly unknown[] } {
  const { sql, parameters } = compile(node, db, context)
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
  const inWalkOrder = order.length === count && order.every((index, position) => index === position)
  return { key: `scope#${++learntCount};`, order, inWalkOrder } // the `;` ends it: a shape joined to others stays one
}
