import fp from 'fastify-plugin'
import type { HandlerContext } from './channels.js'
import { whileOpen } from './request-statements.js'

/** The statements of a request's handler run: how many, and their milliseconds summed. */
interface DatabaseTime { readonly statements: number, readonly milliseconds: number }

// Keyed by Fastify's request: the run's figures wait there for the onSend hook of the scopes that asked for them.
const times = new WeakMap<object, DatabaseTime>()

function record (context: HandlerContext): void {
  times.set(context.request, { statements: context.statements ?? 0, milliseconds: context.statementTime ?? 0 })
}

/**
 * The `Server-Timing` entry of a handler run: `db;dur=1.204;desc="3 statements"` (milliseconds, summed over its
 * statements, so statements that overlap count each).
 *
 * @example
 * ```ts
 * serverTimingEntry({ statements: 1, milliseconds: 0.25 }) // 'db;dur=0.250;desc="1 statement"'
 * ```
 */
export function serverTimingEntry (time: DatabaseTime): string {
  const noun = time.statements === 1 ? 'statement' : 'statements'
  return `db;dur=${time.milliseconds.toFixed(3)};desc="${time.statements} ${noun}"`
}

/**
 * Adds a `Server-Timing` header to each response a viewset's handler answers in the scope it is registered in:
 * `db;dur=<ms>;desc="N statements"`, the time its SQL statements took and how many ran (relations included), which
 * browsers' developer tools show beside the request. Off unless registered: it tells every client how long the
 * database took, which helps whoever probes for timing differences (register it only where clients are trusted, or
 * in development). An existing `Server-Timing` header is kept, the entry appended.
 *
 * @example
 * ```ts
 * import { viewsetServerTiming } from 'fastify-viewsets'
 * await app.register(viewsetServerTiming)
 * // Server-Timing: db;dur=0.412;desc="3 statements"
 * ```
 */
export const viewsetServerTiming = fp(
  async function viewsetServerTiming (fastify) {
    whileOpen(fastify, record)
    fastify.addHook('onSend', async (request, reply) => {
      const time = times.get(request)
      if (time === undefined) return
      const entry = serverTimingEntry(time)
      const before = reply.getHeader('server-timing')
      reply.header('server-timing', before === undefined ? entry : `${String(before)}, ${entry}`)
    })
  },
  { fastify: '5.x', name: 'fastify-viewsets-server-timing' }
)
