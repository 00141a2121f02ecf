import type { RouteOptions } from 'fastify'
import { IdempotencyStore, prepareKeyTable } from '../data/idempotency-store.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { invalidOption } from '../errors.js'
import { RequestTransactionDatabase } from '../execution/request-transaction.js'
import { withIdempotency } from '../http/idempotency.js'
import type { RouteIdempotency } from '../http/idempotency.js'
import type { ResolvedOptions } from '../options.js'
import type { AnyDatabase } from '../sql.js'

// Mounting `idempotency`: the table of keys checked (or created) before any route exists, then every generated write
// route that takes `Idempotency-Key` wrapped (http/idempotency.ts): POST (and BULK's POST /bulk), and PATCH (and the
// bulk updates, PATCH on the collection and on /bulk). PUT and DELETE are idempotent already.

/** Whether a route takes `Idempotency-Key`: the POST and PATCH routes. */
function takesKey (route: RouteOptions): boolean {
  const methods = Array.isArray(route.method) ? route.method : [route.method]
  return methods.some((method) => method === 'POST' || method === 'PATCH')
}

/**
 * What routes need to honour `Idempotency-Key` (the viewset's, or the batch route's: `viewsetBatch({ idempotency })`
 * checked by `checkIdempotency`), once the table of keys is checked (created with `createTable`); `undefined` when
 * the option is off. Fails at startup naming the option. The statements a route's request runs join the request's
 * transaction when they go through a {@link RequestTransactionDatabase} over `db` (or `db`'s own base).
 *
 * @example
 * ```ts
 * const idempotency = await mountIdempotency({ idempotency: checkIdempotency(options.idempotency) }, db, dialect)
 * fastify.route(withIdempotency(batchRoute, idempotency))
 * ```
 */
export async function mountIdempotency (
  resolved: Pick<ResolvedOptions, 'idempotency'> & Partial<Pick<ResolvedOptions, 'rowLevelSecurity'>>,
  db: AnyDatabase,
  dialect: ViewsetDialect
): Promise<RouteIdempotency | undefined> {
  const options = resolved.idempotency
  if (options === undefined) return undefined
  if (resolved.rowLevelSecurity !== undefined) {
    invalidOption('idempotency', 'is not supported with rowLevelSecurity yet (both run the request in a transaction)')
  }
  const wrapped: RouteIdempotency['db'] =
    db instanceof RequestTransactionDatabase ? db : new RequestTransactionDatabase(db)
  await prepareKeyTable(wrapped.base, options, dialect.name)
  return { store: new IdempotencyStore(wrapped.base, options, (error) => dialect.classify(error)), db: wrapped }
}

/**
 * The routes, each POST and PATCH route honouring `Idempotency-Key` when the `idempotency` option is on (its table
 * checked first: {@link mountIdempotency}).
 *
 * @example
 * ```ts
 * const routes = await idempotentRoutes(viewsetRoutes(methods, handlers, context), resolved, db, dialect)
 * ```
 */
export async function idempotentRoutes (
  routes: readonly RouteOptions[],
  resolved: Pick<ResolvedOptions, 'idempotency' | 'rowLevelSecurity'>,
  db: AnyDatabase,
  dialect: ViewsetDialect
): Promise<RouteOptions[]> {
  // The viewset's own statements must join the request's transaction: viewset-table.ts wraps its db for the option.
  if (resolved.idempotency !== undefined && !(db instanceof RequestTransactionDatabase)) {
    invalidOption('idempotency', 'the viewset\'s db is not wrapped for it')
  }
  const idempotency = await mountIdempotency(resolved, db, dialect)
  return routes.map((route) => (takesKey(route) ? withIdempotency(route, idempotency) : route))
}
