import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyValidationResult } from 'fastify/types/schema.js'
import { invalidFields, ViewsetErrors } from '../errors.js'
import { andThen } from '../execution/eventually.js'
import type { Eventually } from '../execution/eventually.js'
import { LruCache } from '../execution/lru-cache.js'
import { allVisible } from '../query/field-access.js'
import type { FieldView } from '../query/field-access.js'
import type { ViewsetToken } from '../options.js'
import { propertiesOf } from '../schema/derive.js'
import type { JsonSchema } from '../schema/derive.js'
import { viewsetValidatorCompiler } from '../schema/validator.js'
import type { Row } from '../sql.js'
import { authHook } from './auth.js'
import { schemaErrors } from './child-errors.js'
import type { NestedTarget, WritableRelation } from './writable-relation.js'

// What one child of a nested write goes through before its write, as the child's own route would: its viewset's
// authentication and `authorize`, its field view, its body's validation. None of it reads the write's transaction, so
// a nested POST may run all of it before the transaction opens (http/nested-creation.ts).

/** A child's write as prepared: its request, token, field view, and the body it writes (the parent's key aside). */
export interface PreparedChild {
  readonly child: FastifyRequest
  readonly token: ViewsetToken | null
  readonly view: FieldView
}

/**
 * A child's request as a view of its parent's ({@link childRequest}): what the child holds of its
 * own (its body, key, headers and token, and whatever its hooks set on it), every other property the parent's, read
 * with the child as `this`. A proxy rather than an object whose prototype is the parent's request: making the request
 * a prototype cost about 4 µs a child and gave it a map of its own (benchmarks/analysis.md, issue 43).
 */
class ChildView implements ProxyHandler<FastifyRequest> {
  readonly #own: Map<string | symbol, unknown>

  constructor (own: Map<string | symbol, unknown>) {
    this.#own = own
  }

  get (parent: FastifyRequest, key: string | symbol, child: unknown): unknown {
    return this.#own.has(key) ? this.#own.get(key) : Reflect.get(parent, key, child)
  }

  set (_parent: FastifyRequest, key: string | symbol, value: unknown): boolean {
    this.#own.set(key, value)
    return true
  }

  has (parent: FastifyRequest, key: string | symbol): boolean {
    return this.#own.has(key) || Reflect.has(parent, key)
  }

  /** A value defined on the child is the child's; an accessor, or a property that could not be changed, is refused. */
  defineProperty (_parent: FastifyRequest, key: string | symbol, descriptor: PropertyDescriptor): boolean {
    if (!('value' in descriptor) || descriptor.configurable === false) return false
    this.#own.set(key, descriptor.value)
    return true
  }

  /** Deleting never reaches the parent: a property of the child's own is dropped (the parent's shows again). */
  deleteProperty (_parent: FastifyRequest, key: string | symbol): boolean {
    this.#own.delete(key)
    return true
  }
}

/** A request for one child's write: its body and key, without the parent's preferences and preconditions; the rest
 * (connection, log, server, decorations) is the parent's. */
export function childRequest (request: FastifyRequest, body: Row, id: unknown): FastifyRequest {
  const { prefer: _prefer, 'if-match': _ifMatch, ...headers } = request.headers
  const own = new Map<string | symbol, unknown>([['body', body], ['params', id === undefined ? {} : { id }]])
  own.set('headers', headers).set('viewsetToken', request.viewsetToken)
  return new Proxy(request, new ChildView(own))
}

/** The child route's own authentication: its protected methods verify the token and call its `authorize`; the
 * token, at once when the method is not protected. */
export function authorizedChild (target: Pick<NestedTarget, 'context'>,
  method: 'POST' | 'PATCH' | 'DELETE' | 'RESTORE', child: FastifyRequest, reply: FastifyReply
): Eventually<ViewsetToken | null> {
  const { auth } = target.context
  if (!auth.protectedMethods.includes(method)) return child.viewsetToken
  return authHook(method, auth.options).call(child.server, child, reply).then(() => child.viewsetToken)
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
 * The body a child writes, as its field view lets it: its read-only fields and its key dropped; the 403 when the
 * caller may not write the foreign key its parent sets.
 *
 * @example
 * ```ts
 * child.body = { ...childBody(view, relation, element), [relation.foreignKey]: parentKey }
 * ```
 */
export function childBody (view: FieldView, relation: WritableRelation, element: Row): Row {
  const body: Row = {}
  for (const [name, field] of Object.entries(element)) {
    if (!view.readOnly.has(name) && name !== relation.targetKey) body[name] = field
  }
  if (view.readOnly.has(relation.foreignKey) || view.hidden.has(relation.foreignKey)) {
    throw new ViewsetErrors.Forbidden(`This token may not write ${relation.foreignKey} of ${relation.table}`)
  }
  return body
}

/**
 * Prepares the children of one viewset's nested writes: the validators of their bodies are made once per relation,
 * method and field view (compiling them again, or finding them by their schema's text, cost a nested POST more than
 * its writes: benchmarks/analysis.md, issue 43), bounded as the field views are (query/field-access.ts).
 *
 * @example
 * ```ts
 * const { child, token, view } = await children.prepare(request, reply, relation, element, undefined)
 * ```
 */
export class ChildPreparation {
  readonly #validators = new LruCache<string, FastifyValidationResult>(256)

  /** A child's request, authorized as the child's route would be, its field view, its body validated (a 400); at
   * once where nothing awaits (no protected method, a field rule that answers at once). */
  prepare (request: FastifyRequest, reply: FastifyReply, relation: WritableRelation & { target: NestedTarget },
    element: Row, key: unknown): Eventually<PreparedChild> {
    const { target } = relation
    const method = key === undefined ? 'POST' : 'PATCH'
    if (target.context.schemas.components.bodies[method] === undefined) {
      throw new ViewsetErrors.Forbidden(`${target.context.prefix} does not serve ${method}`)
    }
    const child = childRequest(request, { ...element }, key)
    return andThen(authorizedChild(target, method, child, reply), (token) => andThen(
      target.rules === undefined ? allVisible : target.rules.view({ request: child, token, method }), (view) => {
        const validate = this.#validatorOf(target, method, view, relation)
        if (validate(element) !== true) {
          throw invalidFields(schemaErrors(Array.isArray(validate.errors) ? validate.errors : []))
        }
        return { child, token, view }
      }))
  }

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
}
