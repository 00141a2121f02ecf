import { AsyncLocalStorage } from 'node:async_hooks'
import type { FastifyInstance } from 'fastify'
import { handlerChannel, statementChannel } from './channels.js'
import type { HandlerContext, StatementContext } from './channels.js'

// The statements of each handler run: counted, and their time summed, on the handler's context (`statements`,
// `statementTime`), for the request log, the metrics and Server-Timing. A statement finds its handler through a store
// bound to the handler channel, so this costs nothing until a consumer asks for it.

const running = new AsyncLocalStorage<HandlerContext>()
let consumers = 0

function finished (context: StatementContext): void {
  const handler = running.getStore()
  if (handler === undefined) return
  handler.statementTime = (handler.statementTime ?? 0) + performance.now() - context.startTime
}

const counting = {
  start (): void {
    const handler = running.getStore()
    if (handler !== undefined) handler.statements = (handler.statements ?? 0) + 1
  },
  end (context: StatementContext): void {
    if (context.pending !== true) finished(context)
  },
  asyncStart (): void {},
  asyncEnd: finished,
  error (): void {},
}

/**
 * Counts the statements of each handler run on its context from now on, until the returned function is called (by
 * each caller: the counting stops after the last one).
 *
 * @example
 * ```ts
 * const stop = countStatements()
 * fastify.addHook('onClose', async () => { stop() })
 * ```
 */
export function countStatements (): () => void {
  if (consumers++ === 0) {
    handlerChannel.start.bindStore(running)
    statementChannel.subscribe(counting)
  }
  let stopped = false
  return () => {
    if (stopped) return
    stopped = true
    if (--consumers === 0) {
      handlerChannel.start.unbindStore(running)
      statementChannel.unsubscribe(counting)
    }
  }
}

/** The handler-channel subscriber that calls `done` once per handler run, when it has finished (sync or async). */
type HandlerSubscriber = Parameters<typeof handlerChannel.subscribe>[0]
const subscribers = new Map<(context: HandlerContext) => void, { subscriber: HandlerSubscriber; apps: number }>()

/**
 * Calls `done` with each handler run's context once it has finished, its statements counted (see above), while an
 * application that registered it is open: the plugins of the request log and Server-Timing share this. Subscribed
 * once per `done` however many applications register it; unsubscribed when the last one closes.
 *
 * @example
 * ```ts
 * whileOpen(fastify, (context) => { console.log(context.method, context.statements) })
 * ```
 */
export function whileOpen (fastify: FastifyInstance, done: (context: HandlerContext) => void): void {
  const stopCounting = countStatements()
  let entry = subscribers.get(done)
  if (entry === undefined) {
    const subscriber = {
      start (): void {},
      end (context: HandlerContext): void {
        if (context.pending !== true) done(context)
      },
      asyncStart (): void {},
      asyncEnd: done,
      error (): void {},
    }
    entry = { subscriber, apps: 0 }
    subscribers.set(done, entry)
    handlerChannel.subscribe(subscriber)
  }
  entry.apps++
  const subscribed = entry
  fastify.addHook('onClose', async () => {
    stopCounting()
    if (--subscribed.apps === 0) {
      handlerChannel.unsubscribe(subscribed.subscriber)
      subscribers.delete(done)
    }
  })
}
