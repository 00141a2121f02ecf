import fp from 'fastify-plugin'
import type { FastifyBaseLogger } from 'fastify'
import type { HandlerContext } from './channels.js'
import { whileOpen } from './request-statements.js'

/** The request and reply, as far as their loggers go. */
interface Logged { log: FastifyBaseLogger }

/** Whether a request or reply carries its logger (Fastify's both do). */
function isLogged (value: object): value is Logged {
  return 'log' in value && typeof value.log === 'object' && value.log !== null
}

/** Binds the handler run's fields to its request's logger, which Fastify's completion line is written with. */
function annotate (context: HandlerContext): void {
  const { request, reply, problem } = context
  const bindings: Record<string, unknown> = {
    viewset: context.viewset,
    viewsetMethod: context.method,
    statements: context.statements ?? 0,
  }
  // A 5xx says which kind of database fault it was (never the driver's text, which may hold values).
  if (problem !== undefined && problem.status >= 500) bindings.dbFault = problem.fault ?? 'none'
  if (!isLogged(request) || !isLogged(reply)) return
  const log = request.log.child(bindings)
  // The completion line is written with the reply's logger, errors with the request's.
  request.log = log
  reply.log = log
}

/**
 * Adds `viewset`, `viewsetMethod` and `statements` (how many SQL statements it ran) to the log lines of each request a
 * viewset answers, Fastify's `request completed` line included; a request answered 5xx also gets `dbFault`, the kind of
 * database fault (`unavailable`, `timeout`, ..., or `none`), never SQL, values or driver text. Register it once, on
 * the root instance: it annotates every viewset of the process's applications while one of them has it.
 *
 * @example
 * ```ts
 * const app = Fastify({ logger: true })
 * await app.register(viewsetLogs)
 * // {"reqId":"req-1","viewset":"items","viewsetMethod":"LIST","statements":2,"msg":"request completed",...}
 * ```
 */
export const viewsetLogs = fp(
  async function viewsetLogs (fastify) {
    whileOpen(fastify, annotate)
  },
  { fastify: '5.x', name: 'fastify-viewsets-logs' }
)
