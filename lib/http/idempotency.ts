import { createHash } from 'node:crypto'
import type {
  FastifyInstance, FastifyReply, FastifyRequest, onSendAsyncHookHandler, RouteHandlerMethod, RouteOptions,
} from 'fastify'
import type { IdempotencyStore, StoredAnswer } from '../data/idempotency-store.js'
import { ViewsetErrors } from '../errors.js'
import { RequestTransaction } from '../execution/request-transaction.js'
import type { RequestTransactionDatabase } from '../execution/request-transaction.js'
import { isRecord } from '../schema/object-schema.js'
import { documentedHeaders, problemResponses } from '../schema/openapi.js'
import type { Row } from '../sql.js'

// `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header) on a route: a request that carries one reserves
// its key (data/idempotency-store.ts), runs in one transaction of its own, and stores its answer in that same
// transaction just before it is sent (onSend), so that the write and its stored answer commit together. A retry
// of the same request then answers the stored answer (`Idempotent-Replayed: true`) and writes nothing. An error
// answer (4xx, 5xx) rolls back and frees the key: it is not stored, and the client may retry with the same key.

/** What a route needs to honour `Idempotency-Key`: the store of keys, and the viewset's database to write through. */
export interface RouteIdempotency {
  readonly store: IdempotencyStore
  /** The viewset's database: statements of a request run in the request's transaction on `db.base`. */
  readonly db: RequestTransactionDatabase<Record<string, Row>>
  /** Who a request's key belongs to, when the route knows better than its token (http/batch-idempotency.ts). */
  readonly caller?: ((request: FastifyRequest) => string) | undefined
}

/** The header that marks a replayed answer (as Stripe's API names it). */
export const replayedHeader = 'idempotent-replayed'

/** The answer headers stored with the body: those a client reads of a write's answer. */
const storedHeaders = ['content-type', 'location', 'content-location', 'etag', 'last-modified', 'preference-applied']

/** Most characters of a key, its quotes left out. */
export const maxKeyLength = 255

/** The `Idempotency-Key` request header as documented and validated: a string of printable ASCII, maybe quoted. */
export const idempotencyKeyHeader = {
  type: 'string',
  minLength: 1,
  maxLength: maxKeyLength + 2,
  pattern: '^[\\x21-\\x7E]([\\x20-\\x7E]*[\\x21-\\x7E])?$',
  description: 'A unique key (at most 255 printable ASCII characters; draft-ietf-httpapi-idempotency-key-header): a ' +
    'retry of the same request with the same key answers the first answer again (with `Idempotent-Replayed: true`) ' +
    'and writes nothing; the same key with another request is a 422, and while the first is in flight a 409.',
} as const

/** The requests in flight with a reserved key, until their answer is sent. */
const inFlight = new WeakMap<FastifyRequest, { trx: RequestTransaction; id: string; owner: string }>()

/** The key of a request: the header's value, its structured-field quotes removed; 400 past the bound. */
function keyOf (header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined
  const value = Array.isArray(header) ? header.join(', ') : header
  const key = /^".*"$/.test(value) ? value.slice(1, -1) : value
  if (key === '' || key.length > maxKeyLength || !/^[\x20-\x7E]+$/.test(key)) {
    throw new ViewsetErrors.Validation(undefined, [
      { in: 'headers', field: 'idempotency-key', message: `must be 1 to ${maxKeyLength} printable ASCII characters` },
    ])
  }
  return key
}

/** JSON with every object's keys sorted: equal parsed values give equal text, whatever order they were sent in. */
function canonical (value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (!isRecord(item) || Array.isArray(item)) return item
    return Object.fromEntries(Object.keys(item).sort().map((name) => [name, item[name]]))
  }) ?? 'null'
}

function sha256 (text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

/**
 * Who a key belongs to: the token's subject; a token without one by its claims; no token, the client's address.
 *
 * @example
 * ```ts
 * callerOf(request, claims) // 'sub:alice'
 * ```
 */
export function callerOf (request: FastifyRequest, token: unknown = request.viewsetToken): string {
  if (!isRecord(token)) return `address:${request.ip}`
  if (typeof token.sub === 'string') return `sub:${token.sub}`
  // The claims that change with each token a caller is issued do not make another caller.
  const { iat: _iat, exp: _exp, nbf: _nbf, jti: _jti, ...claims } = token
  return `claims:${sha256(canonical(claims))}`
}

/** The row id of a request's key (key, caller, method, path), and the fingerprint of the request it is used for. */
function identify (request: FastifyRequest, key: string, idempotency: RouteIdempotency) {
  const path = request.url.split('?', 1)[0] ?? ''
  const caller = idempotency.caller?.(request) ?? callerOf(request)
  return {
    id: sha256(canonical([caller, request.method, path, key])),
    fingerprint: sha256(canonical([request.method, path, request.query ?? {}, request.body ?? null])),
  }
}

/** Answers a stored answer again, marked as a replay. */
function replay (reply: FastifyReply, answer: StoredAnswer): FastifyReply {
  reply.code(answer.status).headers(answer.headers).header(replayedHeader, 'true')
  return reply.send(answer.body === '' ? undefined : Buffer.from(answer.body))
}

/** The answer to store: its status, the headers that matter, its body as sent. */
function answerOf (reply: FastifyReply, payload: unknown): StoredAnswer {
  const headers: Record<string, string> = {}
  for (const name of storedHeaders) {
    const value = reply.getHeader(name)
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value)
  }
  const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : ''
  return { status: reply.statusCode, headers, body }
}

/** Ends a request's transaction (committing only when `commit`) and frees its key unless the answer was stored. */
async function settle (request: FastifyRequest, idempotency: RouteIdempotency, store?: StoredAnswer): Promise<void> {
  const flight = inFlight.get(request)
  if (flight === undefined) return
  inFlight.delete(request)
  const { trx, id, owner } = flight
  let committed = false
  try {
    if (store !== undefined) {
      const kept = await trx.run(async () => await idempotency.store.complete(idempotency.db, id, owner, store))
      // The lease ran out and another request holds the key now: this one's write must not count too.
      if (!kept) throw new ViewsetErrors.IdempotencyKeyInUse()
      committed = true
      await trx.end(true)
    }
  } finally {
    if (!committed) {
      await trx.end(false)
      await idempotency.store.release(id, owner)
    }
  }
}

/** The route's handler, honouring `Idempotency-Key` when the request carries one. */
function idempotentHandler (handler: RouteHandlerMethod, idempotency: RouteIdempotency): RouteHandlerMethod {
  return async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
    const key = keyOf(request.headers['idempotency-key'])
    if (key === undefined) return await handler.call(this, request, reply)
    const { id, fingerprint } = identify(request, key, idempotency)
    const reservation = await idempotency.store.reserve(id, fingerprint)
    if (reservation.kind === 'stored') return replay(reply, reservation.answer)
    if (reservation.kind === 'reused') throw new ViewsetErrors.IdempotencyKeyReused()
    if (reservation.kind === 'busy') {
      reply.header('retry-after', String(reservation.retryAfter))
      throw new ViewsetErrors.IdempotencyKeyInUse()
    }
    let trx: RequestTransaction
    try {
      trx = await RequestTransaction.open(idempotency.db.base)
    } catch (error) {
      await idempotency.store.release(id, reservation.owner)
      throw error
    }
    inFlight.set(request, { trx, id, owner: reservation.owner })
    try {
      return await trx.run(async () => await handler.call(this, request, reply))
    } catch (error) {
      await settle(request, idempotency)
      throw error
    } finally {
      // The client went away before an answer: nothing is stored, and the key is free for its retry.
      if (reply.raw.destroyed && !reply.sent) await settle(request, idempotency)
    }
  }
}

/** Stores a success's answer in its request's transaction, then commits; an error answer rolls back. */
function storeAnswer (idempotency: RouteIdempotency): onSendAsyncHookHandler {
  return async (request, reply, payload) => {
    if (!inFlight.has(request)) return payload
    try {
      await settle(request, idempotency, reply.statusCode < 400 ? answerOf(reply, payload) : undefined)
    } catch (error) {
      // Its key is another request's now, whose answer will soon be stored: a retry then replays it.
      if (error instanceof ViewsetErrors.IdempotencyKeyInUse) reply.header('retry-after', '1')
      throw error
    }
    return payload
  }
}

/** The success answers, each saying it may be a replay (`Idempotent-Replayed`). */
function replayable (response: Record<string, unknown>): Record<string, unknown> {
  const header = {
    type: 'string',
    enum: ['true'],
    description: 'Sent on an answer replayed for a retry with the same Idempotency-Key: nothing was written again.',
  }
  return Object.fromEntries(Object.entries(response).map(([status, answer]) => {
    if (!status.startsWith('2') || !isRecord(answer)) return [status, answer]
    const headers = isRecord(answer.headers) ? answer.headers : {}
    return [status, { ...answer, headers: { ...headers, 'Idempotent-Replayed': header } }]
  }))
}

/** Documents `Idempotency-Key` and its 409 and 422 on a route's schema. */
function documented (schema: NonNullable<RouteOptions['schema']>): NonNullable<RouteOptions['schema']> {
  const headers = isRecord(schema.headers) ? schema.headers : { type: 'object', properties: {} }
  const properties = isRecord(headers.properties) ? headers.properties : {}
  const response = isRecord(schema.response) ? schema.response : {}
  const conflict = isRecord(response[409]) ? response[409] : {}
  const conflictHeaders = isRecord(conflict.headers) ? conflict.headers : {}
  const problems = problemResponses([409, 422])
  return {
    ...schema,
    headers: { ...headers, properties: { ...properties, 'idempotency-key': idempotencyKeyHeader } },
    response: {
      ...replayable(response),
      409: {
        ...problems[409],
        ...conflict,
        description: `${typeof conflict.description === 'string' ? `${conflict.description}, or a` : 'A'} request ` +
          'with the same Idempotency-Key in flight (FST_VIEWSET_IDEMPOTENCY_KEY_IN_USE, with Retry-After)',
        headers: { ...conflictHeaders, 'Retry-After': documentedHeaders.retryAfter },
      },
      422: problems[422],
    },
  }
}

/**
 * `route`, honouring `Idempotency-Key` (the seam every write route that takes it uses: POST, BULK, PATCH and the
 * bulk updates): the header documented, a retry answered from the store, the answer stored in the write's own
 * transaction. Without `idempotency` (the option is off), the route as it is.
 *
 * @example
 * ```ts
 * fastify.route(withIdempotency(patchManyRoute(handlers, context), context.idempotency))
 * ```
 */
export function withIdempotency (route: RouteOptions, idempotency: RouteIdempotency | undefined): RouteOptions {
  if (idempotency === undefined) return route
  const { onSend } = route
  const given = onSend === undefined ? [] : Array.isArray(onSend) ? onSend : [onSend]
  const { onResponse } = route
  const after = onResponse === undefined ? [] : Array.isArray(onResponse) ? onResponse : [onResponse]
  return {
    ...route,
    ...(route.schema === undefined ? {} : { schema: documented(route.schema) }),
    handler: idempotentHandler(route.handler, idempotency),
    onSend: [...given, storeAnswer(idempotency)],
    // An answer sent without onSend (reply.hijack()): nothing the request did is kept.
    onResponse: [...after, async (request: FastifyRequest) => { await settle(request, idempotency) }],
  }
}
