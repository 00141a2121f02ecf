import diagnosticsChannel from 'node:diagnostics_channel'
import type { Channel, TracingChannel } from 'node:diagnostics_channel'
import type { Eventually } from '../execution/eventually.js'
import type { AnsweredProblem } from './problem-code.js'

// The library's trace points, on node:diagnostics_channel, the convention Node libraries publish on (undici,
// Fastify's `tracing:fastify.request.handler`, mysql2): instrumentations (fastify-viewsets/otel, the metrics plugin,
// your own) subscribe, and nothing is built while nobody does (each trace point checks `hasSubscribers` first).

/**
 * The databases a statement runs on.
 *
 * @example
 * ```ts
 * statementChannel.subscribe({ start (context) { if (context.dialect === 'postgres') count++ }, ... })
 * ```
 */
export type StatementDialect = 'sqlite' | 'postgres' | 'mysql'

/**
 * What a statement does: transaction control and raw SQL (the catalog, session settings) are not statement events.
 *
 * @example
 * ```ts
 * const writes = new Set<StatementOperation>(['insert', 'update', 'delete'])
 * ```
 */
export type StatementOperation = 'select' | 'insert' | 'update' | 'delete'

/**
 * The context of one event on the `fastify-viewsets:statement` channel: one per SQL statement a viewset runs on a
 * database from createDatabase or withPreparedStatements. Never holds parameter values.
 *
 * @example
 * ```ts
 * import diagnosticsChannel from 'node:diagnostics_channel'
 * diagnosticsChannel.tracingChannel('fastify-viewsets:statement').subscribe({
 *   start () {}, end () {}, asyncStart () {}, error () {},
 *   asyncEnd (context) { console.log(context.operation, context.table, context.rows) },
 * })
 * ```
 */
export interface StatementContext {
  readonly dialect: StatementDialect
  readonly operation: StatementOperation
  /** The table the statement reads or writes (its first `FROM` / `INTO` table), when it names one. */
  readonly table: string | undefined
  /** The statement text, parameters as placeholders (`$1`, `?`): never their values. */
  readonly sql: string
  /** Whether it took the prepared fast path (a cached SQLite statement, a pooled PostgreSQL named statement). */
  prepared: boolean
  /** Whether its shape classes it heavy (execution/cost-class.ts; SQLite also reads its plan), or `undefined`. */
  readonly heavy: boolean | undefined
  /** `performance.now()` when it started: the shortcut publishes `start` only once it knows it ran the statement. */
  readonly startTime: number
  /** At `end` (synchronous) or `asyncEnd`: the rows returned, or affected by a write that returns none. */
  rows?: number
  /** At `error`: what the statement threw. */
  error?: unknown
  /** At `end`: `true` when the statement answered a promise, whose `asyncStart` and `asyncEnd` follow. */
  pending?: boolean
}

/**
 * The context of one event on the `fastify-viewsets:handler` channel: one per run of a viewset route's handler.
 *
 * @example
 * ```ts
 * handlerChannel.subscribe({ ..., asyncEnd (context: HandlerContext) { console.log(context.method, context.route) } })
 * ```
 */
export interface HandlerContext {
  /** The viewset's table. */
  readonly viewset: string
  /** The viewset method: `'LIST'`, `'GET'`, `'POST'`, `'BULK'`, `'PUT'`, `'PATCH'` or `'DELETE'`. */
  readonly method: string
  /** The route's URL pattern, such as `/items/:id`. */
  readonly route: string
  /** Fastify's request and reply, for subscribers that annotate them (the request log, Server-Timing). */
  readonly request: object
  readonly reply: object
  /** How many statements it ran, and their milliseconds summed, while statements are counted (viewsetLogs, the
   * metrics, Server-Timing): complete at `end` of a synchronous run, else at `asyncEnd`. */
  statements?: number
  statementTime?: number
  /** At `error`: the error the handler threw. */
  error?: unknown
  /** At `error`: the problem `code` it answers (`FST_VIEWSET_CONFLICT`, ...), its status, and the database fault's
   * kind when the database raised it (`unique`, `foreign-key`, `unavailable`, ...): never SQL or values. */
  problem?: AnsweredProblem
  /** At `end`: `true` when the handler answered a promise, whose `asyncStart` and `asyncEnd` follow. */
  pending?: boolean
}

/**
 * The channel of each SQL statement a viewset runs (`fastify-viewsets:statement`).
 *
 * @example
 * ```ts
 * statementChannel.start.subscribe((context) => { console.log(context.operation, context.table) })
 * ```
 */
export const statementChannel: TracingChannel<unknown, StatementContext> =
  diagnosticsChannel.tracingChannel<unknown, StatementContext>('fastify-viewsets:statement')

/**
 * The channel of each viewset handler run (`fastify-viewsets:handler`).
 *
 * @example
 * ```ts
 * handlerChannel.error.subscribe((context) => { console.log(context.problem?.code) })
 * ```
 */
export const handlerChannel: TracingChannel<unknown, HandlerContext> =
  diagnosticsChannel.tracingChannel<unknown, HandlerContext>('fastify-viewsets:handler')

/**
 * What a named cache did: a lookup that found its entry, one that did not, or an entry pushed out by a newer one.
 *
 * @example
 * ```ts
 * const kind: CacheEventKind = 'eviction'
 * ```
 */
export type CacheEventKind = 'hit' | 'miss' | 'eviction'

/**
 * A message on the `fastify-viewsets:cache` channel: one per lookup and eviction of the library's statement caches,
 * published only while someone subscribes. `cache` is one of `compiled` (the statements viewsets compile once per
 * shape), `sqlite-prepared` (better-sqlite3 statements), `postgres-prepared` (named statements on pooled clients).
 *
 * @example
 * ```ts
 * diagnosticsChannel.subscribe('fastify-viewsets:cache', (message) => { console.log(message) }) // { cache, event }
 * ```
 */
export interface CacheEvent {
  readonly cache: string
  readonly event: CacheEventKind
}

/**
 * A message on the `fastify-viewsets:bulkhead` channel, published by the heavy-statement queues
 * (execution/bulkhead.ts): a heavy statement `queued` for a slot, `admitted` to one from the queue, `rejected` (503)
 * past the queue's bound, `timeout` after waiting `connectionTimeout`, or `abandoned` when its client hung up. The
 * metrics plugin turns `depth` and
 * `rejected` into `fastify_viewsets_heavy_queue_depth` and `fastify_viewsets_heavy_rejections_total`.
 *
 * @example
 * ```ts
 * bulkheadChannel.subscribe((message) => { if ((message as BulkheadEvent).event === 'rejected') refused.inc() })
 * // { bulkhead: 'postgres', dialect: 'postgres', event: 'rejected', depth: 50, running: 9, queued: 50, ... }
 * ```
 */
export interface BulkheadEvent {
  /** The database's kind (`sqlite` for its readers) and the queue's length after the event: what the metrics read. */
  readonly dialect: string
  readonly depth: number
  /** Which bulkhead: `'postgres'`, `'mysql'`, or `'sqlite-readers'` (the worker threads of SQLite's heavy reads). */
  readonly bulkhead: string
  readonly event: 'queued' | 'admitted' | 'rejected' | 'timeout' | 'abandoned'
  /** Heavy statements running (holding a slot) and waiting, after the event. */
  readonly running: number
  readonly queued: number
  readonly capacity: number
  readonly queueBound: number
}

/**
 * The channel of the statement caches' hits, misses and evictions ({@link CacheEvent}).
 *
 * @example
 * ```ts
 * cacheChannel.subscribe((message) => { const { cache, event } = message as CacheEvent })
 * ```
 */
export const cacheChannel: Channel = diagnosticsChannel.channel('fastify-viewsets:cache')

/**
 * The channel of the heavy-request queue ({@link BulkheadEvent}): published by the bulkhead, read by the metrics.
 *
 * @example
 * ```ts
 * bulkheadChannel.subscribe((message) => { const { dialect, event, depth } = message as BulkheadEvent })
 * ```
 */
export const bulkheadChannel: Channel = diagnosticsChannel.channel('fastify-viewsets:bulkhead')

/**
 * Publishes `work`'s run on `channel`: `start`, then `end` (and `error` when it throws); for a promise, `asyncStart`
 * and `asyncEnd` when it settles (after `error` when it rejects). Answers at once where `work` did (eventually.ts),
 * which TracingChannel's traceSync/tracePromise cannot both do. `settled` is called with the value before the end.
 */
export function traceEventually<C extends object, T> (
  channel: TracingChannel<unknown, C>,
  context: C & { error?: unknown, pending?: boolean },
  work: () => Eventually<T>,
  settled?: (value: T) => void,
  failed?: (error: unknown) => void
): Eventually<T> {
  // runStores publishes `start`, and runs `work` in the stores subscribers bound to it (a parent span).
  return channel.start.runStores(context, () => {
    let result: Eventually<T>
    try {
      result = work()
    } catch (error) {
      context.error = error
      failed?.(error)
      channel.error.publish(context)
      channel.end.publish(context)
      throw error
    }
    if (!(result instanceof Promise)) {
      settled?.(result)
      channel.end.publish(context)
      return result
    }
    context.pending = true
    channel.end.publish(context)
    return result.then((value) => {
      settled?.(value)
      channel.asyncStart.publish(context)
      channel.asyncEnd.publish(context)
      return value
    }, (error: unknown) => {
      context.error = error
      failed?.(error)
      channel.error.publish(context)
      channel.asyncStart.publish(context)
      channel.asyncEnd.publish(context)
      throw error
    })
  })
}
