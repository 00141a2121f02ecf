import { ViewsetErrors } from '../../errors.js'

// What a pooled pg client's failures mean to a request, decided where pg reports them: a query with no answer
// past the read timeout (a half-open connection, found by shared/read-watch.ts) and the prepared-statement mix-ups
// of a pooler.

/** The part of a pg `Client` the translation uses: ended once its connection is lost. */
export interface EndableClient {
  end: () => Promise<void>
}

/** SQLSTATE 42P05 / 26000: "prepared statement ... already exists" and "... does not exist", with a name of ours. */
const lostStatement = /^prepared statement "fastify_viewsets_\d+" (already exists|does not exist)$/
/** SQLSTATE 08P01 when a Bind reaches a statement of the same name but other SQL, on another connection. */
const mismatchedStatement = /prepared statement "fastify_viewsets_\d+" requires/

function failureOf (error: unknown): { code: unknown, message: unknown } {
  return typeof error === 'object' && error !== null
    ? { code: Reflect.get(error, 'code'), message: Reflect.get(error, 'message') }
    : { code: undefined, message: undefined }
}

/**
 * How a pg client's query failures reach a request (the query wrapper of postgres-client-query.ts calls it for
 * each failure). Once its `watch` expired (a query without an answer past the read timeout: its socket was closed),
 * the client is ended, so the pool drops it at release and opens a new one, and the request answers 503
 * FST_VIEWSET_TIMEOUT. A named statement of ours that the server lost or already had (a pooler handing the client
 * another server connection) answers FST_VIEWSET_POOLER_STATEMENTS.
 *
 * @example
 * ```ts
 * const translate = failureTranslator(client, watch)
 * client.query(text, values, (error, result) => callback(error == null ? error : translate(error), result))
 * ```
 */
export function failureTranslator (
  client: EndableClient,
  watch: { readonly expired: boolean }
): (error: unknown) => unknown {
  let ended = false
  return (error) => {
    const { code, message } = failureOf(error)
    if (watch.expired && !ended) {
      ended = true
      client.end().catch(() => {})
    }
    // Whatever this client answers once ended (a ROLLBACK after the timeout, say) is the same timeout.
    if (ended) return new ViewsetErrors.Timeout()
    if (typeof message !== 'string') return error
    if ((code === '42P05' || code === '26000') && lostStatement.test(message)) {
      return new ViewsetErrors.PoolerStatements()
    }
    if (code === '08P01' && mismatchedStatement.test(message)) return new ViewsetErrors.PoolerStatements()
    return error
  }
}
