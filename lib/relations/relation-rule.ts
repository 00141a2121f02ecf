import type { FastifyRequest } from 'fastify'
import { expressionBuilder } from 'kysely'
import type { Expression, ExpressionBuilder, SqlBool } from 'kysely'
import type { AnyDatabase, Row } from '../sql.js'
import { LruCache } from '../execution/lru-cache.js'
import { scopeCondition } from '../query/scope.js'
import { ScopePatterns } from '../query/scope-shape.js'
import type { ScopeCondition } from '../query/scope.js'
import type { FieldRules, FieldView } from '../query/field-access.js'
import type { BatchedQuery } from './batched-query.js'
import type { RelationRule, RelationRuleContext, RulesFrom } from './config.js'

/** The request a relation is read for: its rules are called with the outer request's context. */
export interface RuleRequest {
  readonly request: FastifyRequest
  readonly token: RelationRuleContext['token']
  /** The fields of the row itself the request's GET hides: an If-Match compares the tag of what GET served. */
  readonly hidden?: ReadonlySet<string> | undefined
}

/** A rule as the loader calls it: over any table, since each relation's table is known only at run time. */
type AnyRule = RelationRule<Record<string, Row>>

/** Stateless, so one serves every request (as the viewset's own). */
const eb: ExpressionBuilder<Record<string, Row>, string> = expressionBuilder<Record<string, Row>, string>()

/**
 * The row rule of one table a relation reads (its target, or a many-to-many's join table), as the relation's
 * statements alias it (`t`, `j`). Declared with the relation, resolved once when the application is ready
 * (mount/relation-rules.ts), never during a request.
 */
export class RelationRuleSlot {
  /** Where the relation is declared, named in startup errors. */
  readonly path: string
  readonly table: string
  readonly alias: string
  readonly rulesFrom: RulesFrom<unknown> | undefined
  /** `'GET'` for the target of a to-one relation, `'LIST'` for every other read. */
  readonly method: 'GET' | 'LIST'
  #rule: AnyRule | undefined
  #fields: FieldRules | undefined
  #resolved = false
  /** The trees the rule built before, matched before any is spelled (query/scope-shape.ts). */
  readonly #patterns = new ScopePatterns()

  constructor (
    path: string, table: string, alias: string, rulesFrom: RulesFrom<unknown> | undefined, method: 'GET' | 'LIST'
  ) {
    this.path = path
    this.table = table
    this.alias = alias
    this.rulesFrom = rulesFrom
    this.method = method
  }

  /** Sets the row rule and the field rule (`undefined`: the table has none); once. */
  resolve (rule: RelationRule<unknown> | undefined, fields?: FieldRules): void {
    if (this.#resolved) throw new Error(`${this.path}: its row rule is already resolved`)
    this.#rule = rule as AnyRule | undefined // its scope is called over the relation's table, whatever DB it typed
    this.#fields = fields
    this.#resolved = true
  }

  /** Whether the table has a row rule or a field rule (known once resolved): a to-one row may then be hidden. */
  get hasRule (): boolean {
    return this.#rule !== undefined || this.#fields !== undefined
  }

  /** Whether the table has a field rule (known once resolved). */
  get hasFieldRule (): boolean {
    return this.#fields !== undefined
  }

  /**
   * The fields of the table the request may not read here (its `fieldAccess` for the slot's method), or `undefined`
   * when the table has no field rule or there is no request.
   */
  fieldView (request: RuleRequest | undefined): FieldView | Promise<FieldView> | undefined {
    if (request === undefined || this.#fields === undefined) return undefined
    // The request's own token, typed as the viewset's rules see it (the rule request's is the relations' looser type).
    return this.#fields.view({ request: request.request, token: request.request.viewsetToken, method: this.method })
  }

  /**
   * The rule for `request`, qualified with the alias (the slot's, or `alias` for a relation path's subquery), or
   * `undefined` for none. Without a request (a helper's load outside one) no rule applies; with one, a rule not
   * yet resolved is a programming error, never an open read.
   */
  condition (db: AnyDatabase, request: RuleRequest | undefined, alias = this.alias): ScopeCondition | undefined {
    if (request === undefined) return undefined
    if (!this.#resolved) throw new Error(`${this.path}: relation rules are resolved when the application is ready`)
    // A literal of the context's three fields rather than a spread of the request's (which may carry `hidden`): one
    // shape at every call, and no copy of what the rule does not get.
    const context: RelationRuleContext = { request: request.request, token: request.token, method: this.method }
    const expression: Expression<SqlBool> | undefined = this.#rule?.scope(eb, context)
    return expression === undefined ? undefined : scopeCondition(db, alias, expression, this.#patterns)
  }
}

/**
 * Builds a relation's statement under `conditions` (each qualified with its table's alias, bound in this order after
 * the keys); `targetRuled`: one of them is the rule of the table whose rows the relation reads.
 */
export type RuledBuild = (conditions: readonly ScopeCondition[], targetRuled: boolean) => BatchedQuery

/** Distinct rule shapes kept per relation: each is one compiled statement per batch size. */
const maxShapes = 64

/**
 * A relation's batched statement for the rules of a request: the unscoped one, or one per shape of its rules
 * (their SQL, values apart), built once and kept in a bounded cache, so that a ruled relation is still one
 * statement per batch whose values are the keys and then the rules' parameters.
 */
export class RuledQuery {
  readonly slots: readonly RelationRuleSlot[]
  readonly #base: BatchedQuery
  readonly #build: RuledBuild
  readonly #shapes = new LruCache<string, BatchedQuery>(maxShapes)

  constructor (slots: readonly RelationRuleSlot[], build: RuledBuild) {
    this.slots = slots
    this.#build = build
    this.#base = build([], false)
  }

  /** The slot of the table whose rows it reads (not a join table's): whose field rule its rows are served under. */
  get target (): RelationRuleSlot | undefined {
    return this.slots[0]
  }

  /** The statement with no rule: for tests and logs. */
  get base (): BatchedQuery {
    return this.#base
  }

  /** The related rows of `keys` that the rules admit for `request`. */
  async run (db: AnyDatabase, keys: readonly unknown[], request: RuleRequest | undefined): Promise<Row[]> {
    const conditions: ScopeCondition[] = []
    let targetRuled = false
    for (const slot of this.slots) {
      const condition = slot.condition(db, request)
      if (condition === undefined) continue
      conditions.push(condition)
      targetRuled ||= slot === this.target
    }
    if (conditions.length === 0) return await this.#base.run(db, keys)
    // One rule (the usual case): its shape and parameters as they are, no new key string to hash per request.
    const [only] = conditions
    let shape = only?.shape ?? ''
    let parameters = only?.parameters ?? []
    if (conditions.length > 1) {
      shape = conditions.map((condition) => condition.shape).join('')
      parameters = conditions.flatMap((condition) => condition.parameters)
    }
    let query = this.#shapes.get(shape)
    if (query === undefined) {
      // The target's condition is part of the shape (its SQL names the target's alias): one build per shape.
      query = this.#build(conditions, targetRuled)
      this.#shapes.set(shape, query)
    }
    return await query.run(db, keys, parameters)
  }
}
