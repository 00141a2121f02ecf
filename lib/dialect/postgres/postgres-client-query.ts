import { replaceMethod } from '../shared/replace-method.js'
import type { DriverMethod } from '../shared/replace-method.js'
import { failureTranslator } from './postgres-client-guard.js'
import type { EndableClient } from './postgres-client-guard.js'
import { noCancellation, queryCancellation } from './postgres-cancel.js'
import type { CancellableClient, QueryCancellation } from './postgres-cancel.js'
import type { RequestCancellation } from '../../execution/cancellation.js'
import { readWatch } from '../shared/read-watch.js'
import type { ReadWatch } from '../shared/read-watch.js'

// The one wrapper of `query` that each client of a pool opened by createDatabase gets when it connects, installed
// before the named statements' (postgres-statements.ts), so that it sees pg's own forms. Three concerns, each in its
// file: what a failure means to a request (postgres-client-guard.ts), which request's query the client runs, so that
// a client that hung up has it cancelled (postgres-cancel.ts), and how long the client waits for an answer
// (shared/read-watch.ts).

/** The part of a pg `Client` its query wrapper uses. */
export interface WrappedClient extends EndableClient, CancellableClient {
  query: (...args: never[]) => unknown
}

/** Closes a pg client's socket at once: pg then fails its queries ("Connection terminated unexpectedly"). */
function destroySocket (client: object): void {
  const connection: unknown = Reflect.get(client, 'connection') // pg's Connection, untyped here
  const stream: unknown =
    typeof connection === 'object' && connection !== null ? Reflect.get(connection, 'stream') : undefined
  if (typeof stream === 'object' && stream !== null && 'destroy' in stream && typeof stream.destroy === 'function') {
    stream.destroy()
  }
}

/** A watch that never expires: no read timeout (`statementTimeout` 0). */
const unwatched: ReadWatch = { start: () => {}, settle: () => {}, expired: false }

/**
 * Wraps `client.query` for its whole life: its failures translated ({@link failureTranslator}), a query without an
 * answer for `readTimeout` milliseconds ending the client ({@link readWatch}; 0: none), and, with
 * `cancelOnDisconnect`, each query recorded against the request it serves ({@link queryCancellation}).
 *
 * @example
 * ```ts
 * pool.on('connect', (client) => { wrapClientQuery(client, true, 31_000) })
 * ```
 */
export function wrapClientQuery (client: WrappedClient, cancelOnDisconnect: boolean, readTimeout: number): void {
  const watch = readTimeout > 0 ? readWatch(readTimeout, () => { destroySocket(client) }) : unwatched
  const translate = failureTranslator(client, watch)
  const cancellation = cancelOnDisconnect ? queryCancellation(client) : noCancellation
  replaceMethod(client, 'query', (query) => {
    const run = runner(query, translate, cancellation, watch)
    return (config, values, callback) => {
      // A submittable (a pg Query or Cursor) is returned as it is, never wrapped: pass it through.
      const submittable = typeof config === 'object' && config !== null && 'submit' in config
      const pending = cancellation.pending()
      if (pending === undefined || submittable) return run(config, values, callback)
      const waited = pending.then(() => run(config, values, callback))
      return typeof callback === 'function' || typeof values === 'function' ? undefined : waited
    }
  })
}

/** One query through pg: the answer translated, and its request and the client's watch told when it settles. */
function runner (
  query: DriverMethod,
  translate: (error: unknown) => unknown,
  cancellation: QueryCancellation,
  watch: ReadWatch
) {
  const settle = (context: RequestCancellation | undefined) => {
    watch.settle()
    if (context !== undefined) cancellation.settle(context)
  }
  const failure = (error: unknown) => (error === null || error === undefined ? error : translate(error))
  return (config: unknown, values: unknown, callback: unknown): unknown => {
    const context = cancellation.start()
    watch.start()
    let result: unknown
    try {
      // pg's overloads: (text or config or submittable, values?, callback?), or (text or config, callback); its
      // callback takes (error, result).
      if (typeof callback === 'function') {
        result = query(config, values, (error: unknown, answer: unknown) => {
          settle(context)
          callback(failure(error), answer)
        })
      } else if (typeof values === 'function') {
        result = query(config, (error: unknown, answer: unknown) => {
          settle(context)
          values(failure(error), answer)
        })
      } else {
        result = query(config, values)
        if (result instanceof Promise) {
          result = result.then((answer: unknown) => {
            settle(context)
            return answer
          }, (error: unknown) => {
            settle(context)
            throw translate(error)
          })
        } else settle(context)
      }
    } catch (error) {
      // pg throws at once only for a call it cannot take (no query text): nothing was sent, nothing will answer.
      settle(context)
      throw error
    }
    // A request gone before its query started: cancel it as soon as it runs.
    if (context !== undefined) cancellation.cancelIfGone(context)
    return result
  }
}
