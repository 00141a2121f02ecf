import { invalidOption } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'
import { baseMethods } from '../viewset-options.js'
import type { ScopedMethod, ViewsetMethod } from '../viewset-options.js'

// The `scope` option's two forms: one function for every method (whose `undefined` is no restriction), or one
// entry per method, which fails closed: a registered method without an entry fails at startup. And the rule of a
// derived method: its own AND its base's, so that a rule written for the core methods covers the derived ones.

/** The core methods a row rule restricts. */
const coreScoped: readonly ScopedMethod[] = ['LIST', 'GET', 'PUT', 'PATCH', 'DELETE']

/** The keys a per-method `scope` may hold: the core methods, and the derived methods whose base is one of them. */
const scopedKeys: readonly string[] = [
  ...coreScoped,
  ...Object.keys(baseMethods).filter((method) => coreScoped.some((core) => core === baseMethods[method])),
]

/** The base of each derived method whose base a row rule restricts: looked up on every scoped request. */
const scopedBases: ReadonlyMap<string, ScopedMethod> = new Map(
  Object.entries(baseMethods).flatMap(([method, base]): Array<[string, ScopedMethod]> => {
    const scoped = coreScoped.find((core) => core === base)
    return scoped === undefined ? [] : [[method, scoped]]
  })
)

/**
 * Checks the `scope` option's shape: a function, or an object whose keys are methods a rule applies to and
 * whose values are functions or `null`. Throws `FST_VIEWSET_INVALID_OPTION` naming the wrong entry.
 */
export function checkScopeOption (scope: unknown): void {
  if (scope === undefined || typeof scope === 'function') return
  if (!isRecord(scope)) fail('expected a function, or an object with one rule per method')
  for (const [method, rule] of Object.entries(scope)) {
    if (!scopedKeys.includes(method)) {
      fail(`"${method}" is not a method a row rule applies to (methods: ${scopedKeys.join(', ')})`)
    }
    if (rule !== null && typeof rule !== 'function') fail(`${method}: expected a function, or null for no restriction`)
  }
}

function fail (message: string): never {
  return invalidOption('scope', message)
}

/**
 * The methods a per-method `scope` must name, for the registered `methods`: the core ones registered; GET when
 * POST or BULK is (what they write must be readable); PATCH when they upsert (`conflictFields`).
 */
export function requiredScopeEntries (methods: readonly ViewsetMethod[], upserts: boolean): ScopedMethod[] {
  const creates = methods.includes('POST') || methods.includes('BULK')
  return coreScoped.filter((method) =>
    methods.includes(method) || (method === 'GET' && creates) || (method === 'PATCH' && creates && upserts))
}

/**
 * Fails startup when a per-method `scope` lacks an entry a registered method needs ({@link requiredScopeEntries}),
 * naming every missing one. The function form, and no `scope`, pass.
 *
 * @example
 * ```ts
 * checkScopeEntries({ LIST: null, GET: mine }, ['LIST', 'GET', 'DELETE'], false) // throws: no rule for DELETE
 * ```
 */
export function checkScopeEntries (scope: unknown, methods: readonly ViewsetMethod[], upserts: boolean): void {
  if (!isRecord(scope)) return
  const missing = requiredScopeEntries(methods, upserts).filter((method) => !Object.hasOwn(scope, method))
  if (missing.length === 0) return
  fail(
    `no rule for ${missing.join(', ')}: a per-method scope names every registered method it applies to, ` +
      'with a function, or null for no restriction'
  )
}

/** Whether `method` is a derived method whose base a row rule restricts: its rule is {@link withBaseRule}'s AND. */
export function hasScopedBase (method: string): boolean {
  return scopedBases.has(method)
}

/**
 * The rule of `method`: its own, ANDed with its base's when it is a derived method ({@link baseMethods}), so a
 * rule written for the core methods still restricts the derived ones; `undefined` when neither has one.
 *
 * @example
 * ```ts
 * withBaseRule('PATCH_MANY', (method) => rules[method], (a, b) => eb.and([a, b])) // PATCH_MANY's AND PATCH's
 * ```
 */
export function withBaseRule<M extends string, E> (
  method: M,
  rule: (method: M | ScopedMethod) => E | undefined,
  and: (own: E, inherited: E) => E
): E | undefined {
  const own = rule(method)
  const scopedBase = scopedBases.get(method)
  if (scopedBase === undefined) return own
  const inherited = withBaseRule<ScopedMethod, E>(scopedBase, rule, and)
  return own === undefined ? inherited : inherited === undefined ? own : and(own, inherited)
}
