import type { FastifyRequest } from 'fastify'
import { inElement } from '../data/bulk-conflicts.js'
import { deleteKeys, lockKeys, lockMatching, readKeys, updateBounded, updateKeys } from '../data/bulk-update.js'
import type { AfterRow } from '../data/gateway-results.js'
import { retryOnDeadlock } from '../data/retry-on-deadlock.js'
import { softDeleteKeys } from '../data/soft-delete.js'
import { checkWritten } from '../data/write-check.js'
import { invalidFields, missingRows, ViewsetErrors } from '../errors.js'
import type { FieldError } from '../errors.js'
import { currentCancellation, withCancellation } from '../execution/cancellation.js'
import { RequestTransaction, underlyingDatabase } from '../execution/request-transaction.js'
import type { AfterWriteMethod, ScopedMethod, ViewsetToken } from '../options.js'
import type { Condition } from '../query/condition.js'
import type { ScopeCondition } from '../query/scope.js'
import { isRecord } from '../schema/object-schema.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { DefaultHandlers } from './default-handlers.js'
import type { DefaultHandlerContext } from './default-handler-context.js'
import { preferences } from './prefer-header.js'
import { bodyWithoutKey } from './key-path.js'
import type { BulkLimits, ManyWritten } from './route-context.js'

// The bulk writes' default handlers (issue 38 item 1): PATCH_MANY and DELETE_MANY change the rows LIST's filters
// select, BULK_PATCH the rows an array of partial rows names by key. Each runs in one transaction, under the rule of
// its method (its own AND its base's: PATCH or DELETE), with beforeWrite, afterWrite once per row and the write check,
// all or none. A request by filter is bounded before it writes: at most `max-affected` rows are read, locked, and
// past it nothing is written.

const defaultLimits: BulkLimits = { maxAffected: 1000, maxBulk: 1000, versionField: undefined }

/** The one-field 400 of this file's checks. */
function invalid (part: string, field: string, message: string): Error {
  return invalidFields([{ in: part, field, message }])
}

/**
 * The If-Match of a collection route: only `*` (an entity tag names one row's representation, not a set of rows);
 * under `requireIfMatch` its absence is a 428, since `If-Match: *` acknowledges that no row's version is compared.
 */
function checkIfMatch (request: FastifyRequest, requireIfMatch: boolean): void {
  const header = request.headers['if-match']
  if (header === undefined) {
    if (!requireIfMatch) return
    throw new ViewsetErrors.PreconditionRequired(
      'This write of many rows needs If-Match: * (requireIfMatch): it compares no row\'s version, and says so'
    )
  }
  if (header.trim() !== '*') throw invalid('headers', 'if-match', 'must be * on a write of many rows')
}

/** A bound's 400: the request would change more rows than it may, and nothing was written. */
function overBound (bound: Bound): Error {
  const what = bound.field === 'max-affected' ? 'max-affected (or the maxAffected option)' : 'maxBulk'
  return invalid('headers', bound.field, `would change more than ${bound.most} rows (${what}): nothing was written`)
}

/** The most rows a write by filter may change, and the header or option that says so. */
interface Bound { readonly most: number; readonly field: string }

/** The bulk writes of one mounted viewset, over its default handlers' context. */
export class BulkWriteHandlers {
  readonly #context: DefaultHandlerContext
  readonly #defaults: DefaultHandlers
  readonly #limits: BulkLimits

  constructor (defaults: DefaultHandlers) {
    this.#defaults = defaults
    this.#context = defaults.context
    this.#limits = defaults.context.bulkLimits ?? defaultLimits
  }

  /** The request's filters as LIST parses them, under the caller's field and path rules: at least one, else a 400. */
  #conditions (request: FastifyRequest, token: ViewsetToken | null): Condition[] {
    const plan = this.#context.listPlanOf?.(request) ?? this.#context.listQuery
    const query = isRecord(request.query) ? request.query : {}
    const rules = { db: this.#context.db, request: { request, token } }
    const conditions = plan.filters.conditions(query, rules)
    const searched = plan.search.condition(query, rules)
    if (searched !== undefined) conditions.unshift(searched)
    if (conditions.length > 0) return conditions
    throw invalid('querystring', '', 'names no filter: a write of many rows needs at least one (a filter field, ' +
      '`search` or a group; `limit`, `offset` and `order_by` are none), so that no request writes every row')
  }

  /**
   * The most rows this request may change: `Prefer: max-affected=N` within the `maxAffected` option, and the rows
   * `return=representation` can answer (`maxBulk`); which of them binds names the 400 past it.
   */
  #bound (request: FastifyRequest, represent: boolean): Bound {
    const asked = preferences(request.headers.prefer).get('max-affected')
    if (asked !== undefined && !/^\d{1,15}$/.test(asked)) {
      throw invalid('headers', 'max-affected', 'must be a whole number of rows (Prefer: max-affected=N)')
    }
    const { maxAffected, maxBulk } = this.#limits
    const most = Math.min(maxAffected, asked === undefined ? maxAffected : Number(asked))
    if (represent && maxBulk < most) return { most: maxBulk, field: 'return=representation' }
    return { most, field: 'max-affected' }
  }

  /** The viewset's `afterWrite` for the rows of `method`, or `undefined` without one. */
  #afterRow (request: FastifyRequest, token: ViewsetToken | null, method: AfterWriteMethod): AfterRow | undefined {
    const { afterWrite } = this.#context
    if (afterWrite === undefined) return undefined
    return async (trx, before, after) => { await afterWrite(trx, { request, token, method }, { before, after }) }
  }

  /** Runs `work` in a transaction (the request's, or one of its own, again after a deadlock), in the request's
   * cancellation scope. */
  async #transaction<T> (work: (trx: AnyDatabase) => Promise<T>): Promise<T> {
    const { db, resource } = this.#context
    const scope = currentCancellation()
    return await withCancellation(scope, async () => db.isTransaction
      ? await work(db)
      : await retryOnDeadlock(resource.dialect, async () => await db.transaction().execute(work)))
  }

  /** The rows a write by filter reaches, locked: a 400 naming its bound when there are more, before any write. */
  async #matching (trx: AnyDatabase, conditions: readonly Condition[], scope: ScopeCondition | undefined,
    bound: Bound): Promise<Row[]> {
    const { resource } = this.#context
    const limit = bound.most + 1
    const whole = resource.wholeRows
    const rows = await lockMatching(trx, resource.dialect, resource.target, { conditions, scope, limit, whole })
    if (rows.length <= bound.most) return rows
    throw overBound(bound)
  }

  /**
   * Whether a PATCH_MANY needs none of the rows it changes (no answer, rule, afterWrite, history or beforeWrite of the
   * viewset's own), so that the database can bound it in one statement (data/bulk-update.ts `updateBounded`).
   */
  #oneStatement (represent: boolean, scope: ScopeCondition | undefined, after: AfterRow | undefined): boolean {
    const { resource, beforeWriteInTransaction } = this.#context
    return resource.dialect.capabilities.boundedUpdate && !represent && scope === undefined && after === undefined &&
      !resource.wholeRows && beforeWriteInTransaction !== true
  }

  /**
   * PATCH_MANY as one bounded UPDATE, again after a deadlock outside a caller's transaction; `undefined` when it needs
   * its transaction after all: a foreign key it writes has a rule to check, or it sets nothing.
   */
  async #updateBounded (request: FastifyRequest, token: ViewsetToken | null, conditions: readonly Condition[],
    bound: Bound): Promise<ManyWritten | undefined> {
    const { resource, db, foreignKeys } = this.#context
    const context = { request, token, method: 'PATCH_MANY' } as const
    // The statement starts after an await: in the request's cancellation scope (execution/cancellation.ts).
    const scope = currentCancellation()
    const values = await this.#defaults.beforeWriteOf(this.#defaults.writable(request.body), context, db)
    const { versionField } = this.#limits
    if (Object.keys(values).length === 0 && versionField === undefined) return undefined
    if (foreignKeys.checkOf(db, [values], { request, token }, false) !== undefined) return undefined
    const { target, dialect } = resource
    const write = async () => await withCancellation(scope, () =>
      updateBounded(db, dialect, target, { conditions, most: bound.most, values, versionField }))
    const outside = !db.isTransaction && !RequestTransaction.isOpen(underlyingDatabase(db))
    const changed = outside ? await retryOnDeadlock(dialect, write) : await write()
    if (changed === undefined) throw overBound(bound)
    return { affected: changed, rows: [] }
  }

  /**
   * PATCH_MANY: sets what `beforeWrite` makes of the body on every row the filters select in the rule; the rows as
   * stored must still be in it (else a 403). `represent`: the rows are to be answered (bounded by `maxBulk`).
   */
  async updateMany (request: FastifyRequest, token: ViewsetToken | null, represent: boolean): Promise<ManyWritten> {
    checkIfMatch(request, this.#context.requireIfMatch)
    const conditions = this.#conditions(request, token)
    const bound = this.#bound(request, represent)
    const context = { request, token, method: 'PATCH_MANY' } as const
    const scope = this.#rule(request, token, 'PATCH_MANY')
    const after = this.#afterRow(request, token, 'PATCH_MANY')
    if (this.#oneStatement(represent, scope, after)) {
      const written = await this.#updateBounded(request, token, conditions, bound)
      if (written !== undefined) return written
    }
    const { resource, db, foreignKeys } = this.#context
    const { target, dialect } = resource
    return await this.#transaction(async (trx) => {
      // In the write's transaction, which beforeWrite receives (issue 38 item 8).
      const values = await this.#defaults.beforeWriteOf(this.#defaults.writable(request.body), context, trx)
      const before = await this.#matching(trx, conditions, scope, bound)
      if (before.length === 0) return { affected: 0, rows: [] }
      await foreignKeys.checkOf(db, [values], { request, token }, false)?.(trx)
      const keys = before.map((row) => target.key.of(row))
      await updateKeys(trx, dialect, target, keys, { values, versionField: this.#limits.versionField })
      // The rows as stored are read back only for whoever reads them: the answer, the write check, afterWrite.
      if (!represent && scope === undefined && after === undefined) return { affected: keys.length, rows: [] }
      const rows = await readKeys(trx, target, keys, dialect.values.keyOf)
      const written = { rows, ruleOf: () => scope, bulk: false }
      if (scope !== undefined) await checkWritten(trx, target, dialect.values.keyOf, written)
      for (const [index, row] of rows.entries()) await after?.(trx, before[index] ?? null, row)
      return { affected: rows.length, rows }
    })
  }

  /**
   * DELETE_MANY: deletes every row the filters select in the rule (with `softDelete`, marks them deleted); answers
   * them as they were.
   */
  async deleteMany (request: FastifyRequest, token: ViewsetToken | null, represent: boolean): Promise<ManyWritten> {
    checkIfMatch(request, this.#context.requireIfMatch)
    const conditions = this.#conditions(request, token)
    const bound = this.#bound(request, represent)
    const scope = this.#rule(request, token, 'DELETE_MANY')
    const after = this.#afterRow(request, token, 'DELETE_MANY')
    const { resource: { target, dialect }, softDelete } = this.#context
    const { versionField } = this.#limits
    return await this.#transaction(async (trx) => {
      const rows = await this.#matching(trx, conditions, scope, bound)
      if (rows.length === 0) return { affected: 0, rows }
      const keys = rows.map((row) => target.key.of(row))
      if (softDelete === undefined) await deleteKeys(trx, target, keys)
      else await softDeleteKeys(trx, dialect, target, keys, { column: softDelete, versionField })
      for (const row of rows) await after?.(trx, row, null)
      return { affected: rows.length, rows }
    })
  }

  /** The rule of a bulk method for this request: its own AND its base's (query/scope-rules.ts). */
  #rule (request: FastifyRequest, token: ViewsetToken | null, method: ScopedMethod): ScopeCondition | undefined {
    return this.#context.scopeOf(request, token, method)
  }

  /** The keys of a BULK_PATCH body, each element's: a 400 naming each element that repeats an earlier one's. */
  #keysOf (bodies: readonly unknown[]): unknown[] {
    const { key } = this.#context.resource.target
    const { keyOf } = this.#context.resource.dialect.values
    const first = new Map<unknown, number>()
    const errors: FieldError[] = []
    const keys = bodies.map((body, index) => {
      const row = isRecord(body) ? body : {}
      const named = key.mapKeyOf(row, keyOf)
      const earlier = first.get(named)
      if (earlier === undefined) first.set(named, index)
      else errors.push({ in: 'body', field: `/${index}/${key.first}`, message: `repeats element ${earlier}'s key` })
      return key.of(row)
    })
    if (errors.length > 0) throw invalidFields(errors)
    return keys
  }

  /**
   * BULK_PATCH: updates each element's row (by its key, in the rule) with what `beforeWrite` makes of its other
   * fields, all or none; a row missing or outside the rule is a 404 naming each such element (`/3`). The rows as
   * stored, in element order.
   */
  async updateElements (request: FastifyRequest, token: ViewsetToken | null): Promise<Row[]> {
    checkIfMatch(request, this.#context.requireIfMatch)
    const bodies: unknown[] = Array.isArray(request.body) ? request.body : []
    const keys = this.#keysOf(bodies)
    const context = { request, token, method: 'BULK_PATCH' } as const
    const scope = this.#rule(request, token, 'BULK_PATCH')
    const { resource } = this.#context
    return await this.#transaction(async (trx) => {
      // Each element's beforeWrite, in the write's transaction (issue 38 item 8); its error names the element.
      const values: Row[] = []
      for (const [index, body] of bodies.entries()) {
        try {
          const sent = bodyWithoutKey(resource.target.key, this.#defaults.writable(body), keys[index])
          values.push(await this.#defaults.beforeWriteOf(sent, context, trx))
        } catch (error) {
          throw inElement(error, index)
        }
      }
      await this.#checkFound(trx, keys, scope)
      await this.#context.foreignKeys.checkOf(this.#context.db, values, { request, token }, true)?.(trx)
      return await this.#updateEach(trx, keys, values, scope, this.#afterRow(request, token, 'BULK_PATCH'))
    })
  }

  /** Locks the rows of `keys` in the rule: a 404 naming every element whose row is not there, before any write. */
  async #checkFound (trx: AnyDatabase, keys: readonly unknown[], scope: ScopeCondition | undefined): Promise<void> {
    const { resource } = this.#context
    const { keyOf } = resource.dialect.values
    const found = await lockKeys(trx, resource.dialect, resource.target, keys, scope)
    const { key } = resource.target
    const seen = new Set(found.map((row) => key.mapKeyOf(row, keyOf)))
    const missing: FieldError[] = keys.flatMap((id, index) =>
      seen.has(key.mapKey(id, keyOf)) ? [] : [{ in: 'body', field: `/${index}`, message: 'no such row' }])
    if (missing.length > 0) throw missingRows(missing)
  }

  /** Each element's update, in element order, as PATCH writes one row (version, write check, afterWrite). */
  async #updateEach (trx: AnyDatabase, keys: readonly unknown[], values: readonly Row[],
    scope: ScopeCondition | undefined, after: AfterRow | undefined): Promise<Row[]> {
    const rows: Row[] = []
    for (const [index, key] of keys.entries()) {
      let row: Row | undefined
      try {
        const { resource } = this.#context
        row = await resource.update(trx, key, values[index] ?? {}, scope, undefined, scope, undefined, after)
      } catch (error) {
        throw inElement(error, index)
      }
      // The rows are locked: a row gone since is a fault, not a client's mistake.
      if (row === undefined) throw new Error(`row of element ${index} vanished under its lock`)
      rows.push(row)
    }
    return rows
  }
}
