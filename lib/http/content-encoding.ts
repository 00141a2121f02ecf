import type { FastifyReply, FastifyRequest } from 'fastify'
import { ViewsetErrors } from '../errors.js'

/**
 * An `onRequest` hook of a viewset's scope: a request body with a `Content-Encoding` other than `identity` is a 415
 * `FST_VIEWSET_UNSUPPORTED_MEDIA_TYPE` with `Accept-Encoding: identity` (RFC 9110 §15.5.16, RFC 7694), before any of
 * it is read. A callback hook, not an async one: an async hook costs every request a promise and a microtask (see
 * benchmarks/analysis.md#patch-instructions). The body is refused rather than decoded: decompressing costs work
 * unbounded by `bodyLimit` (a small gzip body inflates a thousandfold), and a body labelled gzip that is really plain
 * JSON must not be stored.
 *
 * @example
 * ```ts
 * fastify.addHook('onRequest', identityBodies)
 * ```
 */
export function identityBodies (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
  const encoding = request.headers['content-encoding']
  const { 'content-length': length, 'transfer-encoding': transfer } = request.headers
  if (encoding === undefined || (transfer === undefined && (length === undefined || length === '0'))) {
    done()
    return
  }
  const codings = encoding.split(',').map((coding) => coding.trim().toLowerCase())
  if (codings.every((coding) => coding === '' || coding === 'identity')) {
    done()
    return
  }
  reply.header('accept-encoding', 'identity')
  done(new ViewsetErrors.UnsupportedContentEncoding())
}
