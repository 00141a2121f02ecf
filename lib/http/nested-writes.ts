import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyValidationResult } from 'fastify/types/schema.js'
import { inAmbientTransaction, joinAmbientTransaction, leaveAmbientTransaction } from '../data/ambient-transaction.js'
import { invalidFields, ViewsetErrors } from '../errors.js'
import type { FieldError } from '../errors.js'
import { allVisible } from '../query/field-access.js'
import type { FieldRules, FieldView } from '../query/field-access.js'
import type { RelationKind } from '../relations/declaration.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { ScopeCondition } from '../query/scope.js'
import type { RelationRuleSlot } from '../relations/relation-rule.js'
import { propertiesOf } from '../schema/derive.js'
import type { JsonSchema } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import { viewsetValidatorCompiler } from '../schema/validator.js'
import { LruCache } from '../execution/lru-cache.js'
import { RequestTransaction, underlyingDatabase } from '../execution/request-transaction.js'
import { authHook } from './auth.js'
import type { DefaultHandlers } from './default-handlers.js'
import type { RouteContext, RouteHandlers } from './route-context.js'
import { setPlainLinks, setServedLinks } from './nested-links.js'
import { pointed, schemaErrors } from './child-errors.js'
import { answeredAsWritten, childrenAsWritten } from './children-as-written.js'
import type { AsWritten } from './children-as-written.js'
import type { LinkViewset } from './nested-links.js'

// Nested writes (issue 38 item 2): a body of POST, PUT or PATCH that sends a writable relation's field writes it in
// the parent's transaction. A to-one by reference (the parent's foreign key), a many-to-many by setting its link
// rows, a one-to-many by its children, each child through the viewset serving its table exactly as that viewset's
// own route would write it: its protectedMethods and authorize, its field rules, its default handler (row rules and
// WITH CHECK, beforeWrite, afterWrite). Every error names its element by JSON pointer (`/books/2/title`).

/** A mounted viewset as nested writes reach it: its default handlers and what its routes are declared from. */
export interface NestedTarget {
  readonly defaults: DefaultHandlers
  readonly context: RouteContext
  readonly rules: FieldRules | undefined
}

/** A relation declared `writable: true`, as a request writes it. */
export interface WritableRelation {
  readonly field: string
  readonly kind: RelationKind
  readonly table: string
  /** many-to-one: the parent's column; one-to-many: the child's column. */
  readonly foreignKey: string
  /** The key of the related rows (of a child, the child viewset's primary key, known once the app is ready). */
  targetKey: string
  /** one-to-many: the parent's column the children's foreign key holds; many-to-many: the parent's key. */
  readonly parentKey: string
  readonly through: { readonly table: string, readonly sourceKey: string, readonly targetKey: string } | undefined
  /** The row rule of the related table, as the relation's loads apply it (`'GET'` to-one, `'LIST'` else). */
  readonly rule: RelationRuleSlot
  /** The viewset serving the related table, found when the application is ready. */
  target: NestedTarget | undefined
  /** A many-to-many's link table's viewset, when one serves it: the links are written as its rows (nested-links.ts). */
  link?: LinkViewset | undefined
  /** How a new parent's children may be answered as written (children-as-written.ts), once the app is ready. */
  asWritten?: AsWritten | undefined
}

/** What a new parent is answered with: its relation fields, those its answer loads, and whether only the defaults
 * write it (no createElement or afterWrite of its viewset's, which could write children the load would read). */
export interface ParentAnswer {
  readonly all: readonly string[]
  readonly only: ReadonlySet<string> | undefined
  readonly defaultWrite: boolean
}

/** The writable relation fields a body sends, each with its value. */
type Sent = ReadonlyArray<{ readonly relation: WritableRelation, readonly value: unknown }>

const missing = 'refers to a row that does not exist'

/** A key a body may carry: a string or a number, as a path parameter would be. */
function isKey (value: unknown): value is string | number {
  return typeof value === 'string' || typeof value === 'number'
}

/** The row rule of a relation's table for this request (`'GET'` to-one, `'LIST'` else), or `undefined` for none. */
function ruleOf (trx: AnyDatabase, request: FastifyRequest, relation: WritableRelation): ScopeCondition | undefined {
  return relation.rule.condition(trx, { request, token: request.viewsetToken }, relation.table)
}

/** Throws a 400 naming each key (by its pointer) that is not one the target's key column can hold. */
function checkKeys (relation: WritableRelation, keys: ReadonlyArray<readonly [string, unknown]>): void {
  const entity = relation.target?.context.schemas.entity ?? {}
  const { readOnly: _readOnly, ...schema } = propertiesOf(entity)[relation.targetKey] ?? {}
  const validate = viewsetValidatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' })
  const errors = keys.flatMap(([field, key]) =>
    validate(key) === true ? [] : [{ in: 'body', field, message: `is not a valid ${relation.targetKey}` }])
  if (errors.length > 0) throw invalidFields(errors)
}

/** Whether the related rows a body sends exist in `trx` for the caller, by key: the keys that are missing. */
async function invisibleKeys (
  trx: AnyDatabase, request: FastifyRequest, relation: WritableRelation, keys: ReadonlyArray<string | number>
): Promise<Set<string>> {
  const rule = ruleOf(trx, request, relation)
  const found = keys.length === 0
    ? []
    : await trx.selectFrom(relation.table).select(relation.targetKey).where(relation.targetKey, 'in', [...keys])
      .$if(rule !== undefined, (query) => query.where((eb) => rule?.where ?? eb.lit(true))).execute()
  const seen = new Set(found.map((row) => String(row[relation.targetKey])))
  return new Set(keys.map(String).filter((key) => !seen.has(key)))
}

/** A request for one child's write: its body and key, without the parent's preferences and preconditions. */
function childRequest (request: FastifyRequest, body: Row, id: unknown): FastifyRequest {
  const { prefer: _prefer, 'if-match': _ifMatch, ...headers } = request.headers
  // A view of the parent's request: the same connection, token and log.
  const child: FastifyRequest = Object.create(request, {
    body: { value: body, writable: true },
    params: { value: id === undefined ? {} : { id } },
    headers: { value: headers },
    viewsetToken: { value: request.viewsetToken, writable: true },
  })
  return child
}

/** The body a child's write is validated against: the child's body of `method` without what the caller may not see,
 * its key typed (it addresses the child). */
function childSchema (target: NestedTarget, method: 'POST' | 'PATCH', view: FieldView, relation: WritableRelation) {
  const key = relation.targetKey
  const { components, entity } = target.context.schemas
  const body: JsonSchema = components.bodies[method] ?? { type: 'object' }
  const { $id: _id, examples: _examples, required, ...rest } = body
  const properties: Record<string, JsonSchema> = {}
  for (const [name, property] of Object.entries(propertiesOf(body))) {
    if (!view.hidden.has(name)) properties[name] = property
  }
  const { readOnly: _readOnly, ...keySchema } = propertiesOf(entity)[key] ?? {}
  if (method === 'PATCH') properties[key] = keySchema
  // The foreign key is the parent's to set: a child need not send it.
  const kept = Array.isArray(required)
    ? required.filter((name) => typeof name === 'string' && name in properties && name !== relation.foreignKey)
    : []
  return { ...rest, properties, ...(kept.length > 0 ? { required: kept } : {}) }
}

/**
 * The nested writes of one viewset: its writable relations, and its handlers wrapped to write them. A body that sends
 * none is handed to the handlers as it is.
 */
export class NestedWrites {
  readonly #relations: readonly WritableRelation[]
  readonly #db: AnyDatabase
  readonly #maxBulk: number
  readonly #answer: ParentAnswer
  /** See {@link #validatorOf}; bounded as the field views are (query/field-access.ts). */
  readonly #validators = new LruCache<string, FastifyValidationResult>(256)

  constructor (relations: readonly WritableRelation[], db: AnyDatabase, maxBulk: number, answer: ParentAnswer) {
    this.#relations = relations
    this.#db = db
    this.#maxBulk = maxBulk
    this.#answer = answer
  }

  /** `handlers` whose POST, PUT and PATCH write the writable relations a body sends, in one transaction. */
  wrap (handlers: RouteHandlers): RouteHandlers {
    return {
      list: (...args) => handlers.list(...args),
      getElement: (...args) => handlers.getElement(...args),
      createElements: async (...args) => await handlers.createElements(...args),
      deleteElement: (...args) => handlers.deleteElement(...args),
      updateMany: async (...args) => await handlers.updateMany(...args),
      deleteMany: async (...args) => await handlers.deleteMany(...args),
      updateElements: async (...args) => await handlers.updateElements(...args),
      createElement: (request, reply, token) => {
        const sent = this.#sent(request.body)
        if (sent === undefined) return handlers.createElement(request, reply, token)
        return this.#write(request, reply, sent, () => handlers.createElement(request, reply, token), true)
      },
      updateElement: (request, reply, token, partial, precondition) => {
        const sent = this.#sent(request.body)
        if (sent === undefined) return handlers.updateElement(request, reply, token, partial, precondition)
        return this.#write(request, reply, sent, () =>
          handlers.updateElement(request, reply, token, partial, precondition))
      },
    }
  }

  /** The writable relation fields the body sends, their shapes checked (a 400 naming each by pointer); `undefined`
   * when it sends none. */
  #sent (body: unknown): Sent | undefined {
    if (!isRecord(body)) return undefined
    const sent = this.#relations.flatMap((relation) =>
      body[relation.field] === undefined ? [] : [{ relation, value: body[relation.field] }])
    if (sent.length === 0) return undefined
    const errors: FieldError[] = []
    let children = 0
    for (const { relation, value } of sent) {
      const at = `/${relation.field}`
      const keyed = (element: unknown) => isRecord(element) && isKey(element[relation.targetKey])
      if (relation.kind === 'many-to-one') {
        if (value !== null && !keyed(value)) {
          errors.push({ in: 'body', field: at, message: `must be null or an object with its ${relation.targetKey}` })
        }
        continue
      }
      if (!Array.isArray(value)) {
        errors.push({ in: 'body', field: at, message: 'must be an array of objects' })
        continue
      }
      children += value.length
      value.forEach((element, index) => {
        if (!isRecord(element)) errors.push({ in: 'body', field: `${at}/${index}`, message: 'must be an object' })
        else if (relation.kind === 'many-to-many' && !keyed(element)) {
          errors.push({ in: 'body', field: `${at}/${index}/${relation.targetKey}`, message: 'is required' })
        }
      })
    }
    if (children > this.#maxBulk) {
      const message = `sends ${children} related rows: at most ${this.#maxBulk} (maxBulk)`
      errors.push({ in: 'body', field: '', message })
    }
    if (errors.length > 0) throw invalidFields(errors)
    return sent
  }

  /** The parent's write and its relations', in one transaction: the references first, the children once the parent's
   * key is known. */
  async #write (request: FastifyRequest, reply: FastifyReply, sent: Sent, parent: () => unknown, creates = false) {
    const nested = RequestTransaction.isOpen(underlyingDatabase(this.#db))
    return await inAmbientTransaction(this.#db, request, async (trx) => {
      for (const { relation, value } of sent) {
        if (relation.kind === 'many-to-one') await this.#reference(trx, request, relation, value)
      }
      const row = await parent()
      if (!isRecord(row)) return row
      // A new parent (not an upsert's update), outside a request's transaction (whose reads a policy may narrow).
      const answered: string[] | undefined =
        creates && !nested && reply.statusCode === 201 && this.#answer.defaultWrite ? [] : undefined
      for (const { relation, value } of sent) {
        if (!Array.isArray(value)) continue
        if (relation.kind === 'many-to-many') await this.#links(trx, request, reply, relation, value, row)
        else {
          const written = await this.#children(trx, request, reply, relation, value, row)
          const children = relation.asWritten === undefined || answered === undefined || written.length < value.length
            ? undefined
            : childrenAsWritten(relation.asWritten, relation.rule, written)
          if (children !== undefined) {
            row[relation.field] = children
            answered?.push(relation.field)
          }
        }
      }
      if (answered !== undefined && answered.length > 0) {
        answeredAsWritten(row, answered, this.#answer.all, this.#answer.only)
      }
      return row
    })
  }

  /** A to-one by reference: the target must be one the caller may read (else the 409 of a missing row), and its key
   * becomes the parent's foreign key. */
  async #reference (trx: AnyDatabase, request: FastifyRequest, relation: WritableRelation, value: unknown) {
    const key = isRecord(value) ? value[relation.targetKey] : null
    if (key !== null) checkKeys(relation, [[`/${relation.field}/${relation.targetKey}`, key]])
    if (isKey(key) && (await invisibleKeys(trx, request, relation, [key])).size > 0) {
      const errors = [{ in: 'body', field: `/${relation.field}`, message: missing }]
      throw new ViewsetErrors.Conflict(`The row ${missing}`, errors)
    }
    if (isRecord(request.body)) request.body = { ...request.body, [relation.foreignKey]: key }
  }

  /**
   * A many-to-many set: its link rows become exactly the targets sent among those the caller may read (links to rows
   * it may not read are left as they are); a target it may not read is the 409 of a missing row.
   */
  async #links (trx: AnyDatabase, request: FastifyRequest, reply: FastifyReply, relation: WritableRelation,
    value: readonly unknown[], row: Row) {
    const through = relation.through
    if (through === undefined) return
    const keys = value.map((element) => (isRecord(element) ? element[relation.targetKey] : undefined)).filter(isKey)
    checkKeys(relation, keys.map((key, index) => [`/${relation.field}/${index}/${relation.targetKey}`, key]))
    const invisible = await invisibleKeys(trx, request, relation, keys)
    if (invisible.size > 0) {
      const errors = keys.flatMap((key, index) => invisible.has(String(key))
        ? [{ in: 'body', field: `/${relation.field}/${index}/${relation.targetKey}`, message: missing }]
        : [])
      throw new ViewsetErrors.Conflict(`A related row ${missing}`, errors)
    }
    const parent = row[relation.parentKey]
    const target = { table: relation.table, key: relation.targetKey, rule: ruleOf(trx, request, relation) }
    const set = { through, parent, keys, target }
    // Links to rows the caller may not read are not its to remove; a viewset serving the link table writes them.
    if (relation.link === undefined) {
      await setPlainLinks(trx, set)
      return
    }
    const link = relation.link
    await setServedLinks(trx, set, { link, request, reply }, async (method, body, id) => {
      const child = childRequest(request, body ?? {}, id)
      await this.#authorized(link, method, child, reply)
      // The link's handler finds the nested write's transaction by its request; the entry goes with the child object.
      joinAmbientTransaction(child, request)
      return child
    })
  }

  /** A one-to-many's children, in order: each created (no key) or updated (its key) through the child's viewset. */
  async #children (trx: AnyDatabase, request: FastifyRequest, reply: FastifyReply, relation: WritableRelation,
    value: readonly unknown[], row: Row): Promise<Row[]> {
    const parent = row[relation.parentKey]
    // The rows created, in order: a new parent's answer when nothing else could be among its children.
    const created: Row[] = []
    for (const [index, element] of value.entries()) {
      const pointer = `/${relation.field}/${index}`
      try {
        const written = isRecord(element)
          ? await this.#child(trx, request, reply, relation, element, parent)
          : undefined
        if (isRecord(written)) created.push(written)
      } catch (error) {
        throw pointed(error, pointer)
      }
    }
    return created
  }

  /** One child's write, as the child's own POST or PATCH route would make it: the row created, if it created one. */
  async #child (trx: AnyDatabase, request: FastifyRequest, reply: FastifyReply, relation: WritableRelation,
    element: Row, parent: unknown): Promise<unknown> {
    const target = relation.target
    if (target === undefined) return
    const key = element[relation.targetKey]
    const method = key === undefined ? 'POST' : 'PATCH'
    if (target.context.schemas.components.bodies[method] === undefined) {
      throw new ViewsetErrors.Forbidden(`${target.context.prefix} does not serve ${method}`)
    }
    const child = childRequest(request, { ...element }, key)
    const token = await this.#authorized(target, method, child, reply)
    const view = target.rules === undefined ? allVisible : await target.rules.view({ request: child, token, method })
    const validate = this.#validatorOf(target, method, view, relation)
    if (validate(element) !== true) {
      throw invalidFields(schemaErrors(Array.isArray(validate.errors) ? validate.errors : []))
    }
    // A child of another parent (or none) is not this parent's to change: the 404 of a missing one.
    const owned = key === undefined || await trx.selectFrom(relation.table).select(relation.targetKey)
      .where(relation.targetKey, '=', key).where(relation.foreignKey, '=', parent).executeTakeFirst() !== undefined
    if (!owned) throw new ViewsetErrors.NotFound(`No ${relation.field} row with ${relation.targetKey} = ${String(key)}`)
    const body: Row = {}
    for (const [name, field] of Object.entries(element)) {
      if (!view.readOnly.has(name) && name !== relation.targetKey) body[name] = field
    }
    if (view.readOnly.has(relation.foreignKey) || view.hidden.has(relation.foreignKey)) {
      throw new ViewsetErrors.Forbidden(`This token may not write ${relation.foreignKey} of ${relation.table}`)
    }
    child.body = { ...body, [relation.foreignKey]: parent }
    // The child's handler finds the nested write's transaction by its request (data/ambient-transaction.ts).
    joinAmbientTransaction(child, request)
    try {
      if (method === 'POST') return await target.defaults.createElement(child, reply, token)
      await target.defaults.updateElement(child, token, true, undefined)
      return undefined
    } finally {
      leaveAmbientTransaction(child)
    }
  }

  /** The validator of a child's body, made once per relation, method and field view: compiling it again, or finding it
   * by its schema's text, cost a nested POST more than its writes (benchmarks/analysis.md, issue 43). */
  #validatorOf (target: NestedTarget, method: 'POST' | 'PATCH', view: FieldView, relation: WritableRelation) {
    const key = `${relation.field}|${method}|${view.key}`
    let validate = this.#validators.get(key)
    if (validate === undefined) {
      const schema = childSchema(target, method, view, relation)
      validate = viewsetValidatorCompiler({ schema, httpPart: 'body', method, url: '' })
      this.#validators.set(key, validate)
    }
    return validate
  }

  /** The child route's own authentication: its protected methods verify the token and call its `authorize`. */
  async #authorized (target: Pick<NestedTarget, 'context'>, method: 'POST' | 'PATCH' | 'DELETE' | 'RESTORE',
    child: FastifyRequest, reply: FastifyReply) {
    const { auth } = target.context
    if (auth.protectedMethods.includes(method)) await authHook(method, auth.options).call(child.server, child, reply)
    return child.viewsetToken
  }
}
