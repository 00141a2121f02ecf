import { replaceMethod } from '../shared/replace-method.js'
import type { DriverMethod } from '../shared/replace-method.js'
import { failureTranslator } from './postgres-client-guard.js'
import type { EndableClient } from './postgres-client-guard.js'
import { noCancellation, queryCancellation } from './postgres-cancel.js'
import type { CancellableClient, QueryCancellation } from './postgres-cancel.js'
import type { RequestCancellation } from '../../execution/cancellation.js'

// The one wrapper of `query` that each client of a pool opened by createDatabase gets when it connects, installed
// before the named statements' (postgres-statements.ts), so that it sees pg's own forms. Two concerns, each in its
// file: what a failure means to a request (postgres-client-guard.ts), and which request's query the client runs,
// so that a client that hung up has it cancelled (postgres-cancel.ts).

/** The part of a pg `Client` its query wrapper uses. */
export interface WrappedClient extends EndableClient, CancellableClient {
  query: (...args: never[]) => unknown
}

/**
 * Wraps `client.query` for its whole life: its failures translated ({@link failureTranslator}), and, with
 * `cancelOnDisconnect`, each query recorded against the request it serves ({@link queryCancellation}).
 *
 * @example
 * ```ts
 * pool.on('connect', (client) => { wrapClientQuery(client, true) })
 * ```
 */
export function wrapClientQuery (client: WrappedClient, cancelOnDisconnect: boolean): void {
  const translate = failureTranslator(client)
  const cancellation = cancelOnDisconnect ? queryCancellation(client) : noCancellation
  replaceMethod(client, 'query', (query) => {
    const run = runner(query, translate, cancellation)
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

/** One query through pg: the answer translated, and its request told when it settles. */
function runner (query: DriverMethod, translate: (error: unknown) => unknown, cancellation: QueryCancellation) {
  const settle = (context: RequestCancellation | undefined) => {
    if (context !== undefined) cancellation.settle(context)
  }
  const failure = (error: unknown) => (error === null || error === undefined ? error : translate(error))
  return (config: unknown, values: unknown, callback: unknown): unknown => {
    const context = cancellation.start()
    let result: unknown
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
    // A request gone before its query started: cancel it as soon as it runs.
    if (context !== undefined) cancellation.cancelIfGone(context)
    return result
  }
}
