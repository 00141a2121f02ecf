import { deletedQuery } from '../query/soft-delete-term.js'
import type {
  FastifyRequest, preHandlerAsyncHookHandler, preHandlerHookHandler, preValidationHookHandler,
} from 'fastify'
import { LruCache } from '../execution/lru-cache.js'
import type { Eventually } from '../execution/eventually.js'
import type { ViewsetMethod } from '../options.js'
import { allVisible, blankHidden, stripHidden, viewWithBase } from '../query/field-access.js'
import type { FieldRules, FieldView } from '../query/field-access.js'
import type { FieldsPlan } from '../query/fields.js'
import type { ListQueryPlan } from '../query/list-query.js'
import type { RelatedRoot } from '../query/related-paths.js'
import type { RelationRuleSlot } from '../relations/relation-rule.js'
import type { JsonSchema } from '../schema/derive.js'
import { deriveBody, deriveKeyedPatch, propertiesOf } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import { checkedApart, compile, narrowed, narrowedCheck, validationError } from './narrowed-input.js'
import type { NarrowedCheck, Validator } from './narrowed-input.js'

// Field rules at the edge of a request: ONE view of the fields a caller may name and read, computed before
// validation (the token is known then), which every name lookup consults through `visibleName`. A name the caller
// may not read is an unknown name: the query string and the body are validated against the schemas of a viewset
// without it (derived once per view, kept in a bounded cache), so the 400 is the one a truly unknown name gets.
// Responses lose the hidden fields before serialization (`hideFields`); relations do in their loader.

/** What the field rules of one request resolved to: its own view, GET's (for If-Match), and its relations'. */
interface RequestFields {
  readonly hiding: FieldHiding
  readonly view: FieldView
  /** The view of GET, whose tag an If-Match compares; `undefined` when no If-Match is compared. */
  readonly read: FieldView | undefined
  readonly related: ReadonlyMap<RelationRuleSlot, FieldView>
  /** The plans of a viewset without the hidden names, for this request's method; `undefined` when nothing is. */
  readonly restricted: Restricted | undefined
}

/** The views a request's plans derive from. */
type Views = Pick<RequestFields, 'view' | 'related'>

/** What a request validates and parses against when some names are hidden from it. */
interface Restricted {
  readonly validate: Validator | undefined
  readonly part: 'querystring' | 'body'
  readonly list: ListQueryPlan | undefined
  readonly fields: FieldsPlan | undefined
  /** A second part validated, when the request has two (PATCH_MANY: its filters, then its body). */
  readonly body?: Validator | undefined
  /**
   * What of the query string (or PATCH's body) the route's own validation checks as `validate` would: an input naming
   * only those names, and others valid alone, is not validated whole here ({@link checkedApart}).
   */
  readonly check?: NarrowedCheck | undefined
}

const requests = new WeakMap<FastifyRequest, RequestFields>()

/** Derived plans kept per viewset: one per method and distinct visibility. */
const maxPlans = 64
/** Plans kept by their view's identity, tried before the keyed cache: a few roles times a few methods. */
const maxRecent = 8

/** The check of an input that must name nothing to skip its validation (GET's, whose schema is its own). */
const noNames: NarrowedCheck = { alike: new Set(), apartNames: new Set(), apart: undefined }

/** The relation views of a request that reads no relation path under a rule. */
const noRelated: ReadonlyMap<RelationRuleSlot, FieldView> = new Map()

/** What a viewset's field hiding is built from, at mounting. */
export interface FieldHidingPlan {
  /** The viewset's own field rule, or `undefined` when only its relation paths reach tables with one. */
  readonly rules: FieldRules | undefined
  /** The entity as served. */
  readonly entity: JsonSchema
  /** The table and its relations, for dotted names. */
  readonly root: RelatedRoot | undefined
  /** The dotted names of `filterFields`, `orderingFields` and `searchFields`. */
  readonly paths: readonly string[]
  /** LIST's route query string as validated (with `listQuery`), and the part of it the LIST plan makes. */
  readonly listQuerystring: JsonSchema
  readonly planned: JsonSchema
  /** LIST planned again for a narrower entity and options. */
  readonly list: (entity: JsonSchema, visible: (name: string) => boolean) => NarrowList
  /** `?fields=` planned again for a narrower entity. */
  readonly fields: (entity: JsonSchema) => FieldsPlan
  /** AGGREGATE's query string over LIST's narrowed one, when the viewset registers AGGREGATE. */
  readonly aggregate?: ((listQuerystring: JsonSchema, visible: (name: string) => boolean) => JsonSchema) | undefined
  readonly maxBulk: number
  /** The key BULK_PATCH's elements carry: its column, or a composite key's columns. */
  readonly primaryKey?: string | readonly string[]
}

/** LIST planned for a narrower entity: its query string and its parse plan. */
export interface NarrowList {
  readonly querystring: JsonSchema
  readonly query: ListQueryPlan
}

/** The field rules of one viewset's routes. */
export class FieldHiding {
  readonly #plan: FieldHidingPlan
  /** The relation rule slots along each dotted name, in the order of its segments. */
  readonly #pathSlots: ReadonlyMap<string, readonly RelationRuleSlot[]>
  readonly #slots: readonly RelationRuleSlot[]
  /** The slots whose table has a field rule, once known. */
  #ruled: readonly RelationRuleSlot[] | undefined
  readonly #restricted = new LruCache<string, Restricted>(maxPlans)
  /** The last plans found for a view of the viewset's own rule alone, most recent first. */
  readonly #recent: Array<{
    readonly view: FieldView, readonly method: ViewsetMethod, readonly restricted: Restricted
  }> = []

  constructor (plan: FieldHidingPlan) {
    this.#plan = plan
    const pathSlots = new Map<string, RelationRuleSlot[]>()
    for (const path of plan.paths) {
      const slots: RelationRuleSlot[] = []
      let links = plan.root?.links
      for (const segment of path.split('.').slice(0, -1)) {
        const link = links?.get(segment)
        if (link === undefined) break
        slots.push(link.rules.target)
        links = link.links
      }
      pathSlots.set(path, slots)
    }
    this.#pathSlots = pathSlots
    this.#slots = [...new Set([...pathSlots.values()].flat())]
  }

  /**
   * Resolves the request's views (its own for `method`, GET's when an If-Match is compared, its relation paths'),
   * then validates its query string or body against a viewset without the hidden names. A preValidation hook's work:
   * at once (`undefined`) when every rule answered at once, so that a ruled request awaits nothing here.
   */
  prepare (request: FastifyRequest, method: ViewsetMethod): Promise<void> | undefined {
    const rules = this.#plan.rules
    // The slots are resolved when the application is ready, before its first request: read once then.
    this.#ruled ??= this.#slots.filter((slot) => slot.hasFieldRule)
    const ruled = this.#ruled
    if (rules === undefined && ruled.length === 0) return undefined
    const context = { request, token: request.viewsetToken, method }
    const view = rules === undefined ? allVisible : viewWithBase(rules, context)
    const compared = (method === 'PUT' || method === 'PATCH' || method === 'DELETE' || method === 'RESTORE' ||
      method === 'PURGE') &&
      request.headers['if-match'] !== undefined
    const filtered = method === 'LIST' || method === 'AGGREGATE' || method === 'PATCH_MANY' || method === 'DELETE_MANY'
    if (view instanceof Promise || compared || (filtered && ruled.length > 0)) {
      return this.#prepareLater(request, method, { view, compared, filtered })
    }
    this.#validate(request, method, view, undefined, noRelated)
    return undefined
  }

  /** {@link prepare} when a view is awaited, GET's view is needed (If-Match), or relation paths have rules. */
  async #prepareLater (
    request: FastifyRequest,
    method: ViewsetMethod,
    { view, compared, filtered }: { view: Eventually<FieldView>, compared: boolean, filtered: boolean }
  ): Promise<void> {
    const rules = this.#plan.rules
    const own = await view
    const read = rules !== undefined && compared
      ? await rules.view({ request, token: request.viewsetToken, method: 'GET' })
      : undefined
    const related = new Map<RelationRuleSlot, FieldView>()
    for (const slot of filtered ? this.#ruled ?? [] : []) {
      const slotView = slot.fieldView({ request, token: request.viewsetToken })
      if (slotView !== undefined) related.set(slot, await slotView)
    }
    this.#validate(request, method, own, read, related)
  }

  /** Keeps the request's views, then validates its input against the plans of its views (when some name is hidden). */
  #validate (
    request: FastifyRequest,
    method: ViewsetMethod,
    view: FieldView,
    read: FieldView | undefined,
    related: ReadonlyMap<RelationRuleSlot, FieldView>
  ): void {
    const restricted = this.#restrictedFor(view, related, method)
    requests.set(request, { hiding: this, view, read, related, restricted })
    const validate = restricted?.validate
    if (restricted === undefined || validate === undefined) return
    if (restricted.part === 'body') {
      const body = request.body
      if (!checkedApart(body, restricted.check) && validate(body) !== true) {
        throw validationError(validate.errors ?? [], 'body')
      }
    } else if (!checkedApart(request.query, restricted.check)) {
      // The query string is validated on a copy: Fastify's own validation coerces the request's.
      const data = { ...(isRecord(request.query) ? request.query : {}) }
      if (validate(data) !== true) throw validationError(validate.errors ?? [], 'querystring')
    }
    const body = restricted.body
    if (body !== undefined && body(request.body) !== true) throw validationError(body.errors ?? [], 'body')
  }

  /**
   * The views of a request no generated route prepared (a custom route's): GET's, which its answers (`represent`)
   * and the tag its `If-Match` compares (`precondition`) follow. Nothing is validated: the route validates its input.
   */
  async resolve (request: FastifyRequest): Promise<void> {
    const rules = this.#plan.rules
    if (rules === undefined || requests.has(request)) return
    const view = await rules.view({ request, token: request.viewsetToken, method: 'GET' })
    requests.set(request, { hiding: this, view, read: view, related: new Map(), restricted: undefined })
  }

  /** Whether a name (a field, a dotted path through relations, a JSON path) is one the request's caller may name. */
  visible (fields: Views, name: string): boolean {
    const segments = name.split('.')
    // A JSON path (`meta->color`) is its column's: hidden with it.
    if (fields.view.hidden.has((segments[0] ?? name).split('->')[0] ?? name)) return false
    const slots = this.#pathSlots.get(name) ?? []
    return slots.every((slot, index) => !(fields.related.get(slot)?.hidden.has(segments[index + 1] ?? '') ?? false))
  }

  #restrictedFor (
    view: FieldView, related: ReadonlyMap<RelationRuleSlot, FieldView>, method: ViewsetMethod
  ): Restricted | undefined {
    if (related.size === 0) {
      if (view === allVisible) return undefined
      // Most requests come back with one of a few views: found by identity, with no key built and hashed.
      for (const recent of this.#recent) if (recent.view === view && recent.method === method) return recent.restricted
    } else if (view === allVisible && [...related.values()].every((slotView) => slotView === allVisible)) {
      return undefined
    }
    let key = `${method} ${view.key}`
    for (const [slot, slotView] of related) key += ` ${slot.path}:${slotView.key}`
    let restricted = this.#restricted.get(key)
    if (restricted === undefined) {
      restricted = this.#build({ view, related }, method)
      this.#restricted.set(key, restricted)
    }
    // AGGREGATE's and HISTORY's views may be made per request (viewWithBase): they would only push the others out.
    if (related.size === 0 && method !== 'AGGREGATE' && method !== 'HISTORY') {
      this.#recent.unshift({ view, method, restricted })
      if (this.#recent.length > maxRecent) this.#recent.pop()
    }
    return restricted
  }

  /** The plans of a viewset whose entity and options lack what the request's views hide. */
  #build (fields: Views, method: ViewsetMethod): Restricted {
    const plan = this.#plan
    const entity = narrowed(plan.entity, fields.view)
    if (method === 'LIST') {
      const { querystring, query } = plan.list(entity, (name) => this.visible(fields, name))
      const narrow = propertiesOf(querystring)
      const planned = propertiesOf(plan.planned)
      const properties: Record<string, JsonSchema> = {}
      for (const [name, property] of Object.entries(propertiesOf(plan.listQuerystring))) {
        const kept = name in planned ? narrow[name] : property
        if (kept !== undefined) properties[name] = kept
      }
      for (const [name, property] of Object.entries(narrow)) properties[name] ??= property
      const schema = { ...plan.listQuerystring, properties }
      const check = narrowedCheck(properties, propertiesOf(plan.listQuerystring), 'querystring')
      return { validate: compile(schema, 'querystring'), part: 'querystring', list: query, fields: query.fields, check }
    }
    if (method === 'AGGREGATE') {
      const { querystring, query } = plan.list(entity, (name) => this.visible(fields, name))
      const schema = plan.aggregate?.(querystring, (name) => this.visible(fields, name))
      const validate = schema === undefined ? undefined : compile(schema, 'querystring')
      return { validate, part: 'querystring', list: query, fields: undefined }
    }
    if (method === 'HISTORY') return { validate: undefined, part: 'querystring', list: undefined, fields: undefined }
    if (method === 'GET') {
      const selection = plan.fields(entity)
      // `?deleted=` of a soft-deleting viewset and `as_of` of one with a history are no fields (the route's own schema
      // refuses them on any other viewset).
      const properties = { ...selection.properties, deleted: { ...deletedQuery }, as_of: { type: 'string' } }
      const validate = compile({ type: 'object', properties, additionalProperties: false }, 'querystring')
      // No name, no difference: an empty query string is valid here, as for any route.
      const check = validate({}) === true ? noNames : undefined
      return { validate, part: 'querystring', list: undefined, fields: selection, check }
    }
    if (method === 'PATCH_MANY' || method === 'DELETE_MANY') return this.#filters(fields, entity, method)
    const bodiless = method === 'DELETE' || method === 'RESTORE' || method === 'PURGE'
    const body = bodiless ? undefined : deriveBody(entity, method === 'PATCH')
    const element = method === 'BULK_PATCH' ? deriveKeyedPatch(entity, plan.primaryKey ?? 'id') : body
    const schema = method === 'BULK' || method === 'BULK_PATCH'
      ? { type: 'array', items: element, maxItems: plan.maxBulk }
      : body
    const validate = schema === undefined ? undefined : compile(schema, 'body')
    // PATCH's route body is the whole entity's, partial as this one (no required name): compared property by property.
    const check = method === 'PATCH' && body !== undefined
      ? narrowedCheck(propertiesOf(body), propertiesOf(deriveBody(plan.entity, true)), 'body')
      : undefined
    return { validate, part: 'body', list: undefined, fields: undefined, check }
  }

  /** PATCH_MANY and DELETE_MANY: LIST's filters and `search` without the hidden names, and PATCH_MANY's body. */
  #filters (fields: Views, entity: JsonSchema, method: 'PATCH_MANY' | 'DELETE_MANY'): Restricted {
    const { query } = this.#plan.list(entity, (name) => this.visible(fields, name))
    const properties = { ...query.search.properties, ...query.filters.properties }
    const validate = compile({ type: 'object', properties, additionalProperties: false }, 'querystring')
    const body = method === 'PATCH_MANY' ? compile(deriveBody(entity, true), 'body') : undefined
    return { validate, part: 'querystring', list: query, fields: undefined, body }
  }
}

/** The field rules resolved for `request`, or `undefined` when its viewset has none that apply. */
function fieldsOf (request: FastifyRequest): RequestFields | undefined {
  return requests.get(request)
}

/**
 * THE name lookup of field rules: whether the caller of `request` may name `name` (a schema field, or a dotted path
 * through relations such as `project.secret`). Every surface that resolves a name a client sends (filters,
 * ordering, `fields`, search, cursors, and any later one: OR groups, aggregates, JSON paths) asks it, or plans
 * against the narrowed LIST plan built from it ({@link narrowListPlan}); a hidden name is then an unknown one.
 *
 * @example
 * ```ts
 * if (!visibleName(request, 'project.secret')) throw unknownParameter('project.secret__contains')
 * ```
 */
export function visibleName (request: FastifyRequest, name: string): boolean {
  const fields = fieldsOf(request)
  return fields === undefined || fields.hiding.visible(fields, name)
}

/** LIST's parse plan for the request, narrowed to the names its caller may use; `undefined`: the viewset's own. */
export function narrowListPlan (request: FastifyRequest): ListQueryPlan | undefined {
  return fieldsOf(request)?.restricted?.list
}

/** GET's `?fields=` plan for the request, narrowed to the fields its caller may read; `undefined`: the viewset's. */
export function narrowFieldsPlan (request: FastifyRequest): FieldsPlan | undefined {
  return fieldsOf(request)?.restricted?.fields
}

/** Removes from a response's row (or rows) the fields the caller may not read, before serialization and ETag. */
export function hideFields (request: FastifyRequest, result: unknown): void {
  const hidden = fieldsOf(request)?.view.hidden
  if (hidden === undefined || hidden.size === 0) return
  blankHidden(Array.isArray(result) ? result : [result], hidden)
}

/** The fields GET hides from the caller of a write: its If-Match compares the tag of the row without them. */
export function hiddenFromRead (request: FastifyRequest): ReadonlySet<string> | undefined {
  const hidden = fieldsOf(request)?.read?.hidden
  return hidden === undefined || hidden.size === 0 ? undefined : hidden
}

/** Drops from a write's body (each element of BULK's) the fields its caller may not write: accepted, ignored. */
export function dropReadOnly (request: FastifyRequest): void {
  const readOnly = fieldsOf(request)?.view.readOnly
  if (readOnly === undefined || readOnly.size === 0) return
  const { body } = request
  stripHidden(Array.isArray(body) ? body : [body], readOnly)
}

/**
 * The hooks of a route whose viewset has field rules (or relation paths into tables with them): the views resolved
 * and the input validated before Fastify's validation, and the read-only fields dropped from a body after it.
 */
export function fieldHooks (
  hiding: FieldHiding | undefined,
  method: ViewsetMethod
): { preValidation: preValidationHookHandler[], preHandler: preHandlerHookHandler[] } {
  if (hiding === undefined) return { preValidation: [], preHandler: [] }
  const writes = method === 'POST' || method === 'BULK' || method === 'PUT' || method === 'PATCH' ||
    method === 'PATCH_MANY' || method === 'BULK_PATCH'
  // Hooks that call `done`, not async ones: a request whose rules answer at once allocates no promise here.
  const prepare: preValidationHookHandler = (request, _reply, done) => {
    let pending: Promise<void> | undefined
    try {
      pending = hiding.prepare(request, method)
    } catch (error) {
      done(asError(error))
      return
    }
    if (pending === undefined) done()
    else pending.then(() => { done() }, (error: unknown) => { done(asError(error)) })
  }
  const dropping: preHandlerHookHandler = (request, _reply, done) => {
    try {
      dropReadOnly(request)
    } catch (error) {
      done(asError(error))
      return
    }
    done()
  }
  return { preValidation: [prepare], preHandler: writes ? [dropping] : [] }
}

/** What a hook hands `done`: thrown values that are no `Error` are wrapped, as Fastify's async hooks do. */
function asError (error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}

/** A custom route's hook under field rules: the caller's views, resolved before its handler reads or writes. */
export function customRouteViews (hiding: FieldHiding): preHandlerAsyncHookHandler {
  return async (request) => { await hiding.resolve(request) }
}
