import type {
  FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler, RouteHandlerMethod,
} from 'fastify'
import type { RowSecurity, ViewsetDialect } from '../dialect/dialect.js'
import { ViewsetErrors } from '../errors.js'
import { RequestTransaction, RequestTransactionDatabase } from '../execution/request-transaction.js'
import type { WrappedDatabase } from '../execution/request-transaction.js'
import type { AnyDatabase } from '../sql.js'
import type { RowLevelSecurityOptions, ViewsetToken } from '../tokens.js'
import { isRecord } from '../schema/object-schema.js'
import { isMethodRoute } from './allowed-methods.js'
import { openTokenHook } from './auth.js'
import type { AuthOptions } from './auth.js'

// `rowLevelSecurity`: every route of the viewset (generated and custom) runs its request in one transaction that
// PostgreSQL's policies see the caller in (the claims and the role, transaction-local, so a pooled connection,
// PgBouncer's transaction mode included, carries nothing to the next request). The transaction commits before
// the answer is sent (onSend) when the answer is not an error, and rolls back otherwise.

/** The transactions of the requests being served, until their answer is sent. */
const open = new WeakMap<FastifyRequest, RequestTransaction>()

/**
 * The role a request runs as: its token's `role` claim when it is one of `roles`, `defaultRole` without a token or
 * a `role` claim; any other claim is a 403, before any SQL.
 */
export function roleOf ({ roles, defaultRole }: RowLevelSecurityOptions, token: ViewsetToken | null): string {
  const claimed: unknown = isRecord(token) ? token.role : undefined
  if (claimed === undefined || claimed === null) return defaultRole
  if (typeof claimed === 'string' && roles.includes(claimed)) return claimed
  throw new ViewsetErrors.Forbidden('The token\'s role may not use this resource')
}

/** Ends a request's transaction, if it is still open: commits when `commit`, else rolls back. */
async function settle (request: FastifyRequest, commit: boolean): Promise<void> {
  const trx = open.get(request)
  if (trx === undefined) return
  open.delete(request)
  await trx.end(commit)
}

/**
 * `handler`, run in a transaction of its request: the transaction stays open until its answer is sent (onSend),
 * and rolls back when the handler throws, or once it has finished if the client went away before an answer.
 */
function inTransaction (
  handler: RouteHandlerMethod,
  options: RowLevelSecurityOptions,
  base: WrappedDatabase,
  security: RowSecurity,
  verify: onRequestAsyncHookHandler
): RouteHandlerMethod {
  return async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
    // A custom route's token, when one is sent, is verified as on open methods (a generated route's already is).
    if (request.viewsetToken === null) await verify.call(this, request, reply)
    const token = request.viewsetToken
    const role = roleOf(options, token)
    const claims = JSON.stringify(token ?? {})
    const trx = await RequestTransaction.open(base, security.settings(claims, role).compile(base))
    open.set(request, trx)
    // 'close' comes once the answer is sent (the transaction already ended) or when the client is gone.
    let running = true
    reply.raw.once('close', () => {
      if (!running) void settle(request, false)
    })
    try {
      return await trx.run(() => handler.call(this, request, reply))
    } catch (error) {
      await settle(request, false)
      throw error
    } finally {
      running = false
      if (reply.raw.destroyed && !reply.sent) await settle(request, false)
    }
  }
}

/**
 * Checks `rowLevelSecurity` against the database (PostgreSQL, roles that exist, do not bypass row-level security and
 * can be SET, the table's row-level security enabled), then makes every route of the viewset's plugin run in a
 * transaction of its request ({@link runInRowSecurity}). Without the option, does nothing.
 *
 * @example
 * ```ts
 * await mountRowSecurity(fastify, resolved.rowLevelSecurity, db, dialect, { table: resolved.table, auth: options })
 * ```
 */
export async function mountRowSecurity (
  fastify: FastifyInstance,
  options: RowLevelSecurityOptions | undefined,
  db: AnyDatabase,
  dialect: ViewsetDialect,
  { table, auth }: { readonly table: string; readonly auth: AuthOptions }
): Promise<void> {
  if (options === undefined) return
  const security = dialect.rowSecurity
  if (security === undefined) {
    throw new ViewsetErrors.InvalidOption('rowLevelSecurity', `is PostgreSQL only: ${dialect.name} has no row-level ` +
      'security policies (use scope)')
  }
  if (!(db instanceof RequestTransactionDatabase)) {
    throw new ViewsetErrors.InvalidOption('rowLevelSecurity', 'the viewset\'s db is not wrapped for it')
  }
  const problem = await security.problem(db.base, table, [...new Set([options.defaultRole, ...options.roles])])
  if (problem !== undefined) throw new ViewsetErrors.InvalidOption('rowLevelSecurity', problem)
  runInRowSecurity(fastify, options, db.base, security, openTokenHook(auth))
}

/**
 * Makes every route of the viewset's plugin (`fastify`, encapsulated) run in a transaction of its request that
 * PostgreSQL's row-level security policies see the caller in, on a connection of `base`: routes added after this
 * call are wrapped as they are declared.
 *
 * @example
 * ```ts
 * runInRowSecurity(fastify, resolved.rowLevelSecurity, db.base, dialect.rowSecurity, openTokenHook(options))
 * ```
 */
export function runInRowSecurity (
  fastify: FastifyInstance,
  options: RowLevelSecurityOptions,
  base: WrappedDatabase,
  security: RowSecurity,
  verify: onRequestAsyncHookHandler
): void {
  const wrapped = new WeakSet<object>()
  fastify.addHook('onRoute', (route) => {
    // OPTIONS and 405 answers run no SQL; a HEAD route Fastify derives from a GET may carry its wrapped handler.
    if (isMethodRoute(route) || wrapped.has(route.handler)) return
    route.handler = inTransaction(route.handler, options, base, security, verify)
    wrapped.add(route.handler)
  })
  // Before the answer leaves: a client told 201 finds the row written.
  fastify.addHook('onSend', async (request, reply, payload) => {
    await settle(request, reply.statusCode < 400)
    return payload
  })
  // An answer sent some other way (reply.hijack()): nothing the request did is kept.
  fastify.addHook('onResponse', async (request) => { await settle(request, false) })
}
