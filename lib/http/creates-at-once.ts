import type { FastifyRequest } from 'fastify'
import type { ViewsetToken } from '../options.js'
import type { Row } from '../sql.js'
import type { DefaultHandlers } from './default-handlers.js'

// A nested POST on SQLite writes its parent and children in one synchronous transaction (http/nested-creation.ts),
// where a promise midway would outlive it: it is taken only where each default createElement is known, before it
// starts, to run nothing that awaits on a transaction that answers at once.

/**
 * Whether `defaults.createElement` of `request` runs at once on a transaction that answers at once, writing `values`:
 * no `Prefer` resolution (an upsert), no `beforeWrite` or `afterWrite` of the viewset's (the history's included), no
 * GET rule to check the row against (its check is a statement of Kysely's builder), no foreign key written that a rule
 * checks (in `values` as the write has them). A foreign key whose row is not written yet is any value but `null`.
 *
 * @example
 * ```ts
 * if (createsAtOnce(target.defaults, child, token, { ...body, author_id: 0 })) runTheWritesAtOnce()
 * ```
 */
export function createsAtOnce (
  defaults: DefaultHandlers, request: FastifyRequest, token: ViewsetToken | null, values: Row
): boolean {
  const { context } = defaults
  if (context.beforeWriteInTransaction === true || context.afterWrite !== undefined) return false
  if (defaults.resolution(request) !== undefined || context.scopeOf(request, token, 'GET') !== undefined) return false
  // The values as the write will have them: with no beforeWrite of the viewset's, the parent route's values added.
  const written = defaults.beforeWriteOf(values, { request, token, method: 'POST' }, context.db)
  if (written instanceof Promise) {
    written.catch(() => {}) // none of the viewset's: never a promise, and never a fault of the request's
    return false
  }
  return context.foreignKeys.checkOf(context.db, [written], { request, token }, false) === undefined
}
