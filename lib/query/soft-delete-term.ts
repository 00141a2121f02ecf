import { expressionBuilder } from 'kysely'
import type { Expression, SqlBool } from 'kysely'
import type { FastifyRequest } from 'fastify'
import type { ShowDeletedFunction } from '../data/soft-delete-options.js'
import type { ScopedMethod } from '../viewset-options.js'
import type { Row } from '../sql.js'
import type { AnyExpressionBuilder } from './condition.js'
import type { ScopeCondition } from './scope.js'

// Soft delete as a row rule (issue 39, item 2): the term "the row lives" is ANDed into the rule of every method, so
// that every statement that already applies the viewset's rule (LIST and its counts, GET, the writes by key and by
// filter, the relations and relation paths of other viewsets) leaves deleted rows out without a path of its own.

/** How the column marks a deleted row: a timestamp that is not NULL, or a boolean that is true. */
export type SoftDeleteKind = 'timestamp' | 'boolean'

/** The column that marks deleted rows, and its kind (read from the catalog at mounting). */
export interface SoftDeleteColumn {
  readonly column: string
  readonly kind: SoftDeleteKind
}

/** A mounted viewset's soft delete: its column, who may see deleted rows, and its two terms compiled once. */
export interface SoftDeletePlan extends SoftDeleteColumn {
  readonly showDeleted: ShowDeletedFunction | undefined
  /** The row lives (the column is NULL, or false). */
  readonly live: ScopeCondition
  /** The row is deleted. */
  readonly deleted: ScopeCondition
}

/** Which rows a request reaches: live ones (the default), deleted ones (`?deleted=only`), or both. */
export type DeletedMode = 'live' | 'deleted' | 'any'

/** The `deleted` query parameter: what LIST and GET take with `softDelete` (mount/soft-delete-check.ts). */
export const deletedQuery = {
  type: 'string',
  enum: ['include', 'only'],
  description:
    'Deleted rows too (`include`) or only them (`only`): for callers softDelete.showDeleted admits, else a 403',
} as const

/** Stateless, so one serves every call: the column is checked against the catalog at mounting. */
const eb: AnyExpressionBuilder = expressionBuilder<Record<string, Row>, string>()

/**
 * The term "the row is deleted" (`deleted` true) or "the row lives", over the bare column (a scope qualifies it).
 * A boolean is compared with 1 and 0, which SQLite stores, MySQL's TINYINT(1) holds and PostgreSQL reads as a boolean.
 *
 * @example
 * ```ts
 * deletedTerm({ column: 'deleted_at', kind: 'timestamp' }, false) // deleted_at is null
 * ```
 */
export function deletedTerm ({ column, kind }: SoftDeleteColumn, deleted: boolean): Expression<SqlBool> {
  if (kind === 'boolean') return eb(eb.ref(column), '=', deleted ? 1 : 0)
  return eb(eb.ref(column), deleted ? 'is not' : 'is', null)
}

/** `own` AND "the row lives": the rule another viewset's relation applies to a soft-deleting table. */
export function andLive (own: Expression<SqlBool> | undefined, column: SoftDeleteColumn): Expression<SqlBool> {
  const live = deletedTerm(column, false)
  return own === undefined ? live : eb.and([own, live])
}

// The requests whose `?deleted=` was granted by showDeleted (http/soft-delete-routes.ts): only they reach deleted
// rows, so a custom route that reads `deleted` from its own query string never does.
const granted = new WeakMap<FastifyRequest, DeletedMode>()

/** Records that `request` may read the rows of `mode` (its `?deleted=` was granted). */
export function grantDeleted (request: FastifyRequest, mode: DeletedMode): void {
  granted.set(request, mode)
}

/**
 * The rows a method reaches: LIST and GET the live ones unless the request's `?deleted=` was granted; RESTORE and
 * PURGE any row (a deleted one is what they are for); every other method the live ones only.
 *
 * @example
 * ```ts
 * deletedModeOf('PATCH', request) // 'live': a deleted row is a 404 to PATCH
 * ```
 */
export function deletedModeOf (method: ScopedMethod, request: FastifyRequest): DeletedMode {
  if (method === 'RESTORE' || method === 'PURGE') return 'any'
  if (method === 'LIST' || method === 'GET') return granted.get(request) ?? 'live'
  return 'live'
}

/**
 * Two conditions ANDed as one: the viewset's own rule first, then the soft-delete term. Each shape is self-delimiting
 * (query/scope.ts), so their concatenation names one SQL text, and the parameters follow in the same order.
 */
export function bothConditions (
  own: ScopeCondition | undefined,
  term: ScopeCondition | undefined
): ScopeCondition | undefined {
  if (own === undefined || term === undefined) return own ?? term
  return new BothConditions(own, term)
}

/**
 * {@link bothConditions}' answer, built per request: a class, since an object literal with a getter and a closure cost
 * a scoped request of a soft-deleting viewset microseconds to create where an instance costs a fraction of one
 * (benchmarks/analysis.md#soft-delete-rule). Its terms are ANDed only when a statement is built from it.
 */
class BothConditions implements ScopeCondition {
  readonly shape: string
  readonly parameters: readonly unknown[]
  readonly #own: ScopeCondition
  readonly #term: ScopeCondition

  constructor (own: ScopeCondition, term: ScopeCondition) {
    this.#own = own
    this.#term = term
    this.shape = `${own.shape}${term.shape}`
    this.parameters = term.parameters.length === 0 ? own.parameters : [...own.parameters, ...term.parameters]
  }

  expression (builder: AnyExpressionBuilder): Expression<SqlBool> {
    return builder.and([this.#own.expression(builder), this.#term.expression(builder)])
  }

  get where (): Expression<SqlBool> {
    return eb.and([this.#own.where, this.#term.where])
  }
}
