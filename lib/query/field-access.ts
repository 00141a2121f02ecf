import type { FastifyRequest } from 'fastify'
import type { Eventually } from '../execution/eventually.js'
import { LruCache } from '../execution/lru-cache.js'
import { carryCancellationThroughUserCode } from '../execution/cancellation.js'
import { isRecord } from '../schema/object-schema.js'
import type { ViewsetToken } from '../tokens.js'
import type { ViewsetMethod } from '../methods.js'

// Field rules per request (`fieldAccess`): which schema fields a caller may not read (`hidden`) and may not write
// (`readOnly`). A returned list is normalized once into a FieldView, kept per distinct list in a bounded cache, so
// that the plans derived from a view (query strings, bodies: http/field-hiding.ts) are cached by its `key`.

/**
 * What `fieldAccess` answers for a request: the schema fields the caller may not read (`hidden`: absent from every
 * response, and an unknown name in query strings and bodies) and may not write (`readOnly`: accepted and ignored).
 * `undefined` or `{}` allows everything. A name that is not a field of the schema fails closed: every field but the
 * primary key is hidden (or read-only), and the request's log says which name was wrong. The key is always served.
 *
 * @example
 * ```ts
 * const support: FieldAccess = { hidden: ['customer_email'], readOnly: ['priority'] }
 * ```
 */
export interface FieldAccess {
  readonly hidden?: readonly string[] | undefined
  readonly readOnly?: readonly string[] | undefined
}

/**
 * What `fieldAccess` knows of a request: as `scope` gets it (the request, the verified token's claims, the
 * viewset method); for a relation load of another viewset, the method is `'GET'` (to-one) or `'LIST'`.
 *
 * @example
 * ```ts
 * const fieldAccess = ({ token }: FieldAccessContext) => (token?.role === 'admin' ? {} : { hidden: ['email'] })
 * ```
 */
export interface FieldAccessContext {
  readonly request: FastifyRequest
  readonly token: ViewsetToken | null
  readonly method: ViewsetMethod
}

/**
 * The field rule of a viewset: a function of the request's context, which may answer a promise.
 *
 * @example
 * ```ts
 * const fieldAccess: FieldAccessFunction = ({ token }) => (token?.role === 'support' ? { hidden: ['email'] } : {})
 * ```
 */
export type FieldAccessFunction = (
  context: FieldAccessContext
) => FieldAccess | undefined | Promise<FieldAccess | undefined>

/**
 * Field rules per role: the entry of the caller's role (read from the token by `roleOf`), else `fallback` (default:
 * every field hidden but the key, so that a role nobody listed sees nothing it should not).
 *
 * @example
 * ```ts
 * fieldAccess: fieldAccessByRole({ admin: {}, support: { hidden: ['customer_email'], readOnly: ['priority'] } },
 *   (token) => String(token?.role ?? ''))
 * ```
 */
export function fieldAccessByRole (
  roles: Readonly<Record<string, FieldAccess>>,
  roleOf: (token: ViewsetToken | null) => string,
  fallback: FieldAccess = { hidden: [everyField] }
): FieldAccessFunction {
  return ({ token }) => {
    const role = roleOf(token)
    return Object.hasOwn(roles, role) ? roles[role] : fallback
  }
}

/** The name a role list uses for "every field but the key": no schema field may be named so (it has a space). */
const everyField = '* every field'

/** One normalized answer of `fieldAccess`: sets of schema field names, and what identifies them. */
export interface FieldView {
  readonly hidden: ReadonlySet<string>
  readonly readOnly: ReadonlySet<string>
  /** Equal keys, equal views: the caches of plans derived from a view are keyed by it. */
  readonly key: string
}

/** The view of a caller who may read and write every field. */
export const allVisible: FieldView = Object.freeze({ hidden: new Set<string>(), readOnly: new Set<string>(), key: '' })

/** Distinct views kept per viewset; each keeps its derived plans (http/field-hiding.ts) alive. */
const maxViews = 64
/** Answers compared as given before any is normalized: a rule answers one list per role, and roles are few. */
const maxRecent = 8

/** Whether a value is a promise (or any thenable) rather than an answer. */
function isThenable (value: unknown): value is PromiseLike<unknown> {
  return isRecord(value) && typeof value.then === 'function'
}

/**
 * A viewset's `fieldAccess`, normalized: one frozen {@link FieldView} per distinct answer, in schema order.
 * `identity` tells two viewsets' rules apart (the option, else the class's method).
 */
export class FieldRules {
  readonly identity: object
  readonly #source: FieldAccessFunction
  readonly #fields: readonly string[]
  /** The key's columns: never hidden nor read-only (a row is named by its key). */
  readonly #key: readonly string[]
  readonly #views = new LruCache<string, FieldView>(maxViews)
  /** The last answers that named fields only, as given, most recent first, with their views. */
  readonly #recent: Array<{
    readonly hidden: readonly unknown[] | undefined
    readonly readOnly: readonly unknown[] | undefined
    readonly view: FieldView
  }> = []

  constructor (source: FieldAccessFunction, identity: object, fields: readonly string[], key: readonly string[]) {
    this.#source = source
    this.identity = identity
    this.#fields = fields
    this.#key = key
  }

  /**
   * The caller's view: at once when `fieldAccess` answered at once. One that answers a promise may query before it
   * settles: from then on the cancellation context rides on every promise, as for any user code that awaits (a rule
   * that answers at once leaves the process's promises without those hooks: benchmarks/analysis.md#cancellation-hooks).
   */
  view (context: FieldAccessContext): FieldView | Promise<FieldView> {
    const access: unknown = this.#source(context)
    if (!isThenable(access)) return this.#viewOf(access, context.request)
    carryCancellationThroughUserCode()
    return Promise.resolve(access).then((answer) => this.#viewOf(answer, context.request))
  }

  #viewOf (access: unknown, request: FastifyRequest): FieldView {
    if (access === undefined || access === null) return allVisible
    const given = isRecord(access) ? access : { hidden: [everyField], readOnly: [everyField] }
    // A rule answers the same few lists over and over (one per role): an answer naming what one of the last did, in
    // the same order, is that answer's view, found with no name looked up, joined or hashed.
    for (const recent of this.#recent) {
      if (sameNames(given.hidden, recent.hidden) && sameNames(given.readOnly, recent.readOnly)) return recent.view
    }
    const hidden = this.#names(given.hidden, request, 'hidden')
    const readOnly = this.#names(given.readOnly, request, 'readOnly')
    const view = hidden.names.length === 0 && readOnly.names.length === 0
      ? allVisible
      : this.#viewNamed(hidden.names, readOnly.names)
    // Only an answer that names nothing unknown is remembered: one that does is logged on every request.
    if (hidden.complete && readOnly.complete) {
      this.#recent.unshift({ hidden: copyOf(given.hidden), readOnly: copyOf(given.readOnly), view })
      if (this.#recent.length > maxRecent) this.#recent.pop()
    }
    return view
  }

  #viewNamed (hidden: readonly string[], readOnly: readonly string[]): FieldView {
    const key = `${hidden.join(',')}|${readOnly.join(',')}`
    let view = this.#views.get(key)
    if (view === undefined) {
      view = Object.freeze({ hidden: new Set(hidden), readOnly: new Set(readOnly), key })
      this.#views.set(key, view)
    }
    return view
  }

  /**
   * The fields a list names, in schema order; an unknown name (or a list that is none) names them all. `complete`:
   * the list is absent or names fields only.
   */
  #names (
    list: unknown, request: FastifyRequest, which: 'hidden' | 'readOnly'
  ): { readonly names: string[], readonly complete: boolean } {
    if (list === undefined) return { names: [], complete: true }
    const names = Array.isArray(list) ? list : [everyField]
    const unknown = names.filter((name) => typeof name !== 'string' || !this.#fields.includes(name))
    const every = unknown.length > 0
    if (every && !(unknown.length === 1 && unknown[0] === everyField)) {
      request.log.warn(
        `fieldAccess: ${which} names ${unknown.map((name) => JSON.stringify(name)).join(', ')}, not a field of the ` +
          'schema; every field but the key is taken as listed (fail closed)'
      )
    }
    const named = this.#fields.filter((field) => !this.#key.includes(field) && (every || names.includes(field)))
    return { names: named, complete: Array.isArray(list) && !every }
  }
}

/** The names of an answer's list as last seen: a copy, since the rule may change its own array later. */
function copyOf (list: unknown): readonly unknown[] | undefined {
  return Array.isArray(list) ? [...list] : undefined
}

/** Whether an answer's list names what a remembered one did, in the same order (both absent counts). */
function sameNames (list: unknown, remembered: readonly unknown[] | undefined): boolean {
  if (remembered === undefined) return list === undefined
  if (!Array.isArray(list) || list.length !== remembered.length) return false
  for (let index = 0; index < list.length; index++) if (list[index] !== remembered[index]) return false
  return true
}

/**
 * The caller's view for `context.method`; for AGGREGATE, which derives from LIST, and HISTORY, from GET, what either
 * view hides is hidden (a rule written for LIST or GET covers it).
 */
export function viewWithBase (rules: FieldRules, context: FieldAccessContext): Eventually<FieldView> {
  const base = context.method === 'AGGREGATE' ? 'LIST' : context.method === 'HISTORY' ? 'GET' : undefined
  if (base === undefined) return rules.view(context)
  return (async () => {
    const view = await rules.view(context)
    const list = await rules.view({ ...context, method: base })
    if (list.key === view.key) return view
    const hidden = new Set([...view.hidden, ...list.hidden])
    const readOnly = new Set([...view.readOnly, ...list.readOnly])
    return { hidden, readOnly, key: `${view.key}&${list.key}` }
  })()
}

/**
 * Blanks the hidden fields of each row served, in place (`undefined`, which the serializer and `JSON.stringify` leave
 * out): the serializer never sees their values, and the rows keep their shape, where `delete` would turn each into a
 * slower dictionary-mode object (a LIST 10 under a field rule spent about a quarter of its extra time there).
 */
export function blankHidden (rows: readonly unknown[], hidden: ReadonlySet<string>): void {
  if (hidden.size === 0) return
  for (const row of rows) {
    if (!isRecord(row)) continue
    for (const field of hidden) if (row[field] !== undefined) row[field] = undefined
  }
}

/** Removes the hidden fields of each row, in place: the serializer never sees their values. */
export function stripHidden (rows: readonly unknown[], hidden: ReadonlySet<string>): void {
  if (hidden.size === 0) return
  for (const row of rows) {
    if (!isRecord(row)) continue
    for (const field of hidden) delete row[field]
  }
}
