import type { FastifyRequest } from 'fastify'
import type { Kysely, Transaction } from 'kysely'
import type { AnyDatabase, Row } from '../sql.js'
import type { ScopedMethod, ViewsetToken } from '../options.js'
import type { ScopeCondition } from '../query/scope.js'
import type { AfterRow } from '../data/gateway-results.js'
import { servedRequest } from '../execution/served-request.js'
import type { AfterWriteMethod } from '../write-hooks.js'
import type { PreparedViewset } from './mount-viewset.js'

// What mounting prepared for each viewset, and the row rule its helpers apply (viewset-table.ts reads both): kept
// beside the viewset object, not on it, so that a subclass's members never collide with them. Also the typed views a
// viewset gives of what the data layer holds untyped.

// What each viewset prepared when it was mounted; a viewset not mounted yet has none.
const prepared = new WeakMap<object, PreparedViewset>()

/** Records what mounting prepared for `viewset`: its helpers and handlers read it from then on. */
export function setPrepared (viewset: object, value: PreparedViewset): void { prepared.set(viewset, value) }

/** What mounting prepared for `viewset`, or `undefined` before it is mounted. */
export function mountedOf (viewset: object): PreparedViewset | undefined { return prepared.get(viewset) }

/** What mounting prepared for `viewset`; a helper called before the viewset is registered throws. */
export function preparedOf (viewset: object): PreparedViewset {
  const found = prepared.get(viewset)
  if (found === undefined) {
    throw new Error('The viewset is not registered yet: register() it on a Fastify instance first')
  }
  return found
}

/**
 * How a helper's write (`this.insert`, `this.update`, `this.deleteById`, `this.purgeById`) is recorded in the viewset's
 * history, in the write's transaction, as the routes record theirs: the actor from the request being served (none
 * outside a request); `undefined` without `history`. The viewset's own `afterWrite` is not run for helpers.
 *
 * @example
 * ```ts
 * await resource.update(db, key, values, rule, precondition, rule, undefined, helperHistory(this, 'PATCH'))
 * ```
 */
export function helperHistory (viewset: object, method: AfterWriteMethod): AfterRow | undefined {
  const record = preparedOf(viewset).defaults.context.recordHistory
  if (record === undefined) return undefined
  const request = servedRequest()
  const context = request === undefined ? undefined : { request, token: request.viewsetToken, method }
  return async (trx, before, after) => { await record(trx, method, context, { before, after }) }
}

/**
 * A viewset's row rule as its helpers apply it: its `scope` for one request and method, compiled.
 *
 * @example
 * ```ts
 * const rule: HelperRule = (request, token, method) => scopeOf(request, token, method)
 * ```
 */
export type HelperRule = (
  request: FastifyRequest,
  token: ViewsetToken | null,
  method: ScopedMethod
) => ScopeCondition | undefined

// The row rule of each viewset that has one (a `scope`): its helpers apply it.
const helperRules = new WeakMap<object, HelperRule>()

/** Records the row rule `viewset`'s helpers apply: called by a viewset with a `scope` when it is created. */
export function setHelperRule (viewset: object, rule: HelperRule): void {
  helperRules.set(viewset, rule)
}

/** The row rule `viewset`'s helpers apply, or `undefined` when it has none. */
export function helperRuleOf (viewset: object): HelperRule | undefined {
  return helperRules.get(viewset)
}

/** Rows read through the schema's columns, typed as the schema types them: the serializer writes them by it. */
export function asServed<T> (rows: Row | Row[]): T {
  return rows as T // selected by the schema's own columns; the driver's value types are coerced on the way out
}

/** The same Kysely instance (or transaction) under another type: DB is a compile-time map of tables. */
function retyped<To> (db: object): To {
  return db as To // the instance is the same; only the map of tables its type names differs
}

/** The viewset reaches tables by names checked at mounting, so it queries through an untyped view of `db`. */
export function untyped<DB> (db: Kysely<DB>): AnyDatabase {
  return retyped<AnyDatabase>(db)
}

/** A write's transaction as the hooks a user writes take it: typed with the app's `DB`. */
export function typedTransaction<DB> (trx: AnyDatabase): Transaction<DB> {
  return retyped<Transaction<DB>>(trx)
}
