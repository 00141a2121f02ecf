import type { FastifyReply, FastifyRequest } from 'fastify'
import { inAmbientTransaction, inJoinedTransaction, joinAmbientTransaction } from '../data/ambient-transaction.js'
import { invalidFields, ViewsetErrors } from '../errors.js'
import type { FieldError } from '../errors.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { ScopeCondition } from '../query/scope.js'
import { propertiesOf } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import { viewsetValidatorCompiler } from '../schema/validator.js'
import { andThen } from '../execution/eventually.js'
import { RequestTransaction, underlyingDatabase } from '../execution/request-transaction.js'
import type { DefaultHandlers } from './default-handlers.js'
import type { RouteHandlers } from './route-context.js'
import type { WritableRelation } from './writable-relation.js'
import { setPlainLinks, setServedLinks } from './nested-links.js'
import { pointed } from './child-errors.js'
import { authorizedChild, childBody, ChildPreparation, childRequest } from './child-preparation.js'
import { answeredAsWritten, childrenAsWritten } from './children-as-written.js'
import { childWrite, hasTarget, prepareCreation, splitsCreation, writeCreation } from './nested-creation.js'

// Nested writes (issue 38 item 2): a body of POST, PUT or PATCH that sends a writable relation's field writes it in
// the parent's transaction. A to-one by reference (the parent's foreign key), a many-to-many by setting its link
// rows, a one-to-many by its children, each child through the viewset serving its table exactly as that viewset's
// own route would write it: its protectedMethods and authorize, its field rules, its default handler (row rules and
// WITH CHECK, beforeWrite, afterWrite). Every error names its element by JSON pointer (`/books/2/title`).

/** What a new parent is answered with: its relation fields, those its answer loads, and whether only the defaults
 * write it (no createElement or afterWrite of its viewset's, which could write children the load would read). */
export interface ParentAnswer {
  readonly all: readonly string[]
  readonly only: ReadonlySet<string> | undefined
  readonly defaultWrite: boolean
  /** The parent viewset's default handlers, where its createElement is theirs (a new parent and its children may then
   * be written in two steps: nested-creation.ts). */
  readonly defaults: DefaultHandlers | undefined
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

/**
 * The nested writes of one viewset: its writable relations, and its handlers wrapped to write them. A body that sends
 * none is handed to the handlers as it is.
 */
export class NestedWrites {
  readonly #relations: readonly WritableRelation[]
  readonly #db: AnyDatabase
  readonly #maxBulk: number
  readonly #answer: ParentAnswer
  readonly #preparation = new ChildPreparation()

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
        const parent = () => handlers.createElement(request, reply, token)
        if (splitsCreation(this.#db, request, token, sent, this.#answer.defaults)) {
          return this.#writeSplit(request, reply, sent, parent)
        }
        return this.#write(request, reply, sent, parent, true)
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
          const complete = answered !== undefined && written.length === value.length
          if (complete) this.#asWritten(row, relation, written, answered)
        }
      }
      return this.#answered(row, answered)
    })
  }

  /** A new parent's write in two steps, on SQLite its writes in one synchronous transaction (nested-creation.ts): at
   * once where nothing awaits. */
  #writeSplit (request: FastifyRequest, reply: FastifyReply, sent: Sent, parent: () => unknown) {
    const answered: string[] | undefined = this.#answer.defaultWrite ? [] : undefined
    const answer = (row: Row, relation: WritableRelation, created: Row[]) => {
      // As the one-step write: a new parent (not an upsert's update) with each child it was sent created.
      const value = sent.find((each) => each.relation === relation)?.value
      if (reply.statusCode !== 201 || !Array.isArray(value) || created.length < value.length) return
      if (answered !== undefined) this.#asWritten(row, relation, created, answered)
    }
    return andThen(prepareCreation(this.#preparation, request, reply, sent), (prepared) =>
      andThen(writeCreation(this.#db, request, reply, prepared, parent, answer), (row) =>
        isRecord(row) ? this.#answered(row, answered) : row))
  }

  /** Answers a new parent's `relation` with its children as written where they are its answer (children-as-written). */
  #asWritten (row: Row, relation: WritableRelation, written: readonly Row[], answered: string[]): void {
    const children = relation.asWritten === undefined
      ? undefined
      : childrenAsWritten(relation.asWritten, relation.rule, written)
    if (children === undefined) return
    row[relation.field] = children
    answered.push(relation.field)
  }

  /** `row`, its relations answered as written (`answered`) left out of the load after the commit. */
  #answered (row: Row, answered: readonly string[] | undefined): Row {
    if (answered !== undefined && answered.length > 0) {
      answeredAsWritten(row, answered, this.#answer.all, this.#answer.only)
    }
    return row
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
      await authorizedChild(link, method, child, reply)
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
    if (!hasTarget(relation)) return
    const key = element[relation.targetKey]
    const prepared = await this.#preparation.prepare(request, reply, relation, element, key)
    // A child of another parent (or none) is not this parent's to change: the 404 of a missing one.
    const owned = key === undefined || await trx.selectFrom(relation.table).select(relation.targetKey)
      .where(relation.targetKey, '=', key).where(relation.foreignKey, '=', parent).executeTakeFirst() !== undefined
    if (!owned) throw new ViewsetErrors.NotFound(`No ${relation.field} row with ${relation.targetKey} = ${String(key)}`)
    const body = childBody(prepared.view, relation, element)
    if (key === undefined) return await childWrite(request, reply, relation, { ...prepared, body }, parent)
    const { child, token } = prepared
    child.body = { ...body, [relation.foreignKey]: parent }
    // The child's handler finds the nested write's transaction by its request (data/ambient-transaction.ts).
    const { defaults } = relation.target
    await inJoinedTransaction(child, request, () => defaults.updateElement(child, token, true, undefined))
    return undefined
  }
}
