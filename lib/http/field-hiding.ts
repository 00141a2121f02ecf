import { deletedQuery } from '../query/soft-delete-term.js'
import type {
  FastifyRequest, FastifySchemaValidationError, preHandlerAsyncHookHandler, preValidationAsyncHookHandler,
} from 'fastify'
import { LruCache } from '../execution/lru-cache.js'
import type { ViewsetMethod } from '../options.js'
import { allVisible, blankHidden, stripHidden } from '../query/field-access.js'
import type { FieldAccessContext, FieldRules, FieldView } from '../query/field-access.js'
import type { FieldsPlan } from '../query/fields.js'
import type { ListQueryPlan } from '../query/list-query.js'
import type { RelatedRoot } from '../query/related-paths.js'
import type { RelationRuleSlot } from '../relations/relation-rule.js'
import type { JsonSchema } from '../schema/derive.js'
import { deriveBody, deriveKeyedPatch, propertiesOf } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import { viewsetValidatorCompiler } from '../schema/validator.js'

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

/** What a request validates and parses against when some names are hidden from it. */
interface Restricted {
  readonly validate: Validator | undefined
  readonly part: 'querystring' | 'body'
  readonly list: ListQueryPlan | undefined
  readonly fields: FieldsPlan | undefined
  /** A second part validated, when the request has two (PATCH_MANY: its filters, then its body). */
  readonly body?: Validator | undefined
}

/** A validator as the routes' validator compiler makes it. */
type Validator = ReturnType<typeof viewsetValidatorCompiler>

const requests = new WeakMap<FastifyRequest, RequestFields>()

/** Derived plans kept per viewset: one per method and distinct visibility. */
const maxPlans = 64

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

/** The schema fields of an entity without `hidden`, and with `readOnly` marked read-only. */
function narrowed (entity: JsonSchema, view: FieldView): JsonSchema {
  const properties: Record<string, JsonSchema> = {}
  for (const [name, property] of Object.entries(propertiesOf(entity))) {
    if (view.hidden.has(name)) continue
    properties[name] = view.readOnly.has(name) ? { ...property, readOnly: true } : property
  }
  const required: unknown[] = Array.isArray(entity.required) ? entity.required : []
  return { ...entity, properties, required: required.filter((name) => typeof name === 'string' && name in properties) }
}

/** The error Fastify's validation raises, so that the problem handler answers it alike. */
function validationError (errors: FastifySchemaValidationError[], part: string): Error {
  return Object.assign(new Error(`${part} is not valid`), {
    statusCode: 400, code: 'FST_ERR_VALIDATION', validation: errors, validationContext: part,
  })
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
   * then validates its query string or body against a viewset without the hidden names. A preValidation hook.
   */
  async prepare (request: FastifyRequest, method: ViewsetMethod): Promise<void> {
    const rules = this.#plan.rules
    // The slots are resolved when the application is ready, before its first request: read once then.
    this.#ruled ??= this.#slots.filter((slot) => slot.hasFieldRule)
    const ruled = this.#ruled
    if (rules === undefined && ruled.length === 0) return
    const context = { request, token: request.viewsetToken, method }
    const view = rules === undefined ? allVisible : await viewOf(rules, context)
    const compared = (method === 'PUT' || method === 'PATCH' || method === 'DELETE' || method === 'RESTORE' ||
      method === 'PURGE') &&
      request.headers['if-match'] !== undefined
    const read = rules !== undefined && compared ? await rules.view({ ...context, method: 'GET' }) : undefined
    const related = new Map<RelationRuleSlot, FieldView>()
    const filtered = method === 'LIST' || method === 'AGGREGATE' || method === 'PATCH_MANY' || method === 'DELETE_MANY'
    for (const slot of filtered ? ruled : []) {
      const slotView = slot.fieldView({ request, token: request.viewsetToken })
      if (slotView !== undefined) related.set(slot, await slotView)
    }
    const fields: RequestFields = { hiding: this, view, read, related, restricted: undefined }
    const restricted = this.#restrictedFor(fields, method)
    requests.set(request, { ...fields, restricted })
    const validate = restricted?.validate
    if (restricted === undefined || validate === undefined) return
    // The query string is validated on a copy: Fastify's own validation coerces the request's.
    const data = restricted.part === 'body' ? request.body : { ...(isRecord(request.query) ? request.query : {}) }
    if (validate(data) !== true) throw validationError(validate.errors ?? [], restricted.part)
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
  visible (fields: RequestFields, name: string): boolean {
    const segments = name.split('.')
    // A JSON path (`meta->color`) is its column's: hidden with it.
    if (fields.view.hidden.has((segments[0] ?? name).split('->')[0] ?? name)) return false
    const slots = this.#pathSlots.get(name) ?? []
    return slots.every((slot, index) => !(fields.related.get(slot)?.hidden.has(segments[index + 1] ?? '') ?? false))
  }

  #restrictedFor (fields: RequestFields, method: ViewsetMethod): Restricted | undefined {
    const { view, related } = fields
    let key = `${method} ${view.key}`
    for (const [slot, slotView] of related) key += ` ${slot.path}:${slotView.key}`
    if (view === allVisible && [...related.values()].every((slotView) => slotView === allVisible)) return undefined
    let restricted = this.#restricted.get(key)
    if (restricted === undefined) {
      restricted = this.#build(fields, method)
      this.#restricted.set(key, restricted)
    }
    return restricted
  }

  /** The plans of a viewset whose entity and options lack what the request's views hide. */
  #build (fields: RequestFields, method: ViewsetMethod): Restricted {
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
      return { validate: compile(schema, 'querystring'), part: 'querystring', list: query, fields: query.fields }
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
      const schema = { type: 'object', properties, additionalProperties: false }
      return { validate: compile(schema, 'querystring'), part: 'querystring', list: undefined, fields: selection }
    }
    if (method === 'PATCH_MANY' || method === 'DELETE_MANY') return this.#filters(fields, entity, method)
    const bodiless = method === 'DELETE' || method === 'RESTORE' || method === 'PURGE'
    const body = bodiless ? undefined : deriveBody(entity, method === 'PATCH')
    const element = method === 'BULK_PATCH' ? deriveKeyedPatch(entity, plan.primaryKey ?? 'id') : body
    const schema = method === 'BULK' || method === 'BULK_PATCH'
      ? { type: 'array', items: element, maxItems: plan.maxBulk }
      : body
    const validate = schema === undefined ? undefined : compile(schema, 'body')
    return { validate, part: 'body', list: undefined, fields: undefined }
  }

  /** PATCH_MANY and DELETE_MANY: LIST's filters and `search` without the hidden names, and PATCH_MANY's body. */
  #filters (fields: RequestFields, entity: JsonSchema, method: 'PATCH_MANY' | 'DELETE_MANY'): Restricted {
    const { query } = this.#plan.list(entity, (name) => this.visible(fields, name))
    const properties = { ...query.search.properties, ...query.filters.properties }
    const validate = compile({ type: 'object', properties, additionalProperties: false }, 'querystring')
    const body = method === 'PATCH_MANY' ? compile(deriveBody(entity, true), 'body') : undefined
    return { validate, part: 'querystring', list: query, fields: undefined, body }
  }
}

/**
 * The caller's view for `context.method`; for AGGREGATE, which derives from LIST, and HISTORY, from GET, what either
 * view hides is hidden (a rule written for LIST or GET covers it).
 */
async function viewOf (rules: FieldRules, context: FieldAccessContext): Promise<FieldView> {
  const view = await rules.view(context)
  const base = context.method === 'AGGREGATE' ? 'LIST' : context.method === 'HISTORY' ? 'GET' : undefined
  if (base === undefined) return view
  const list = await rules.view({ ...context, method: base })
  if (list.key === view.key) return view
  const hidden = new Set([...view.hidden, ...list.hidden])
  const readOnly = new Set([...view.readOnly, ...list.readOnly])
  return { hidden, readOnly, key: `${view.key}&${list.key}` }
}

/** A validator as the routes' validator compiler makes it (and caches it, by schema text). */
function compile (schema: JsonSchema, httpPart: 'querystring' | 'body'): Validator {
  return viewsetValidatorCompiler({ schema, httpPart, method: 'GET', url: '' })
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
): { preValidation: preValidationAsyncHookHandler[], preHandler: preHandlerAsyncHookHandler[] } {
  if (hiding === undefined) return { preValidation: [], preHandler: [] }
  const writes = method === 'POST' || method === 'BULK' || method === 'PUT' || method === 'PATCH' ||
    method === 'PATCH_MANY' || method === 'BULK_PATCH'
  return {
    preValidation: [async (request) => { await hiding.prepare(request, method) }],
    preHandler: writes ? [async (request) => { dropReadOnly(request) }] : [],
  }
}

/** A custom route's hook under field rules: the caller's views, resolved before its handler reads or writes. */
export function customRouteViews (hiding: FieldHiding): preHandlerAsyncHookHandler {
  return async (request) => { await hiding.resolve(request) }
}
