import fastifyFormbody from '@fastify/formbody'
import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { addressKey } from './address-key.js'
import type { UserStore } from './users.js'

/** How many token requests a key (a client address, or a username) may make per window. */
export interface LoginLimit {
  readonly max: number
  /** The window, in milliseconds. */
  readonly timeWindow: number
}

/** Options of {@link passwordGrant}. */
export interface PasswordGrantOptions {
  users: UserStore
  /** Lifetime of an access token in seconds; @fastify/jwt's `sign.expiresIn` must match it. */
  expiresIn: number
  /** Token requests per client address (`request.ip`: set Fastify's `trustProxy` behind a proxy), an IPv6 address
   * counted with its /64 (see {@link addressKey}). Default 20 per minute. */
  perAddress?: LoginLimit
  /** Token requests per username, whoever sends them. Default 5 per minute. */
  perUsername?: LoginLimit
  /** Where the counters live when several processes serve the app (REDIS_URL); in the process by default. */
  redis?: Redis | undefined
  /** Claims signed beside `sub` (examples/tenants adds the user's `org` and `role`); none by default. */
  claims?: (subject: string) => Record<string, unknown>
}

/** The defaults of {@link PasswordGrantOptions.perAddress} and {@link PasswordGrantOptions.perUsername}. */
export const loginLimits = Object.freeze({
  perAddress: Object.freeze({ max: 20, timeWindow: 60_000 }),
  perUsername: Object.freeze({ max: 5, timeWindow: 60_000 }),
})

type OAuthError =
  'invalid_request' | 'invalid_grant' | 'unsupported_grant_type' | 'temporarily_unavailable' | 'server_error'

/** An error response of the token endpoint (RFC 6749 §5.2): JSON, never cached. */
function oauthError (reply: FastifyReply, status: number, error: OAuthError, description: string) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .send({ error, error_description: description })
}

const TokenRequest = {
  type: 'object',
  properties: {
    // Any other value is a 400 `unsupported_grant_type` (the error handler tells it from other invalid requests).
    grant_type: { type: 'string', enum: ['password'], description: 'Always `password`' },
    // Bounded: a username is a rate-limit key, and every password costs one scrypt run.
    username: { type: 'string', minLength: 1, maxLength: 256 },
    password: { type: 'string', format: 'password', minLength: 1, maxLength: 1024 },
    scope: { type: 'string', description: 'Ignored: the demo has no scopes' },
  },
  required: ['grant_type', 'username', 'password'],
  // The document's example body (Dredd and other tools that call every operation send it).
  examples: [{ grant_type: 'password', username: 'demo', password: 'the demo password' }],
} as const

/** The body of an error answer (RFC 6749 §5.2) with the `error` codes one status can carry. */
function tokenError (codes: readonly OAuthError[]) {
  return {
    type: 'object',
    properties: { error: { type: 'string', enum: codes }, error_description: { type: 'string' } },
    required: ['error', 'error_description'],
  } as const
}

interface TokenBody {
  grant_type: 'password'
  username: string
  password: string
}

/** Whether Fastify refused the body for its `grant_type` alone (any value but `password`). */
function isUnsupportedGrant (error: FastifyError): boolean {
  const first = error.validation?.[0]
  return first !== undefined && first.instancePath === '/grant_type' && first.keyword === 'enum'
}

/** The username of a parsed token request, or '' (its own key) when there is none. */
function usernameOf (request: FastifyRequest): string {
  const body: unknown = request.body
  return typeof body === 'object' && body !== null && 'username' in body && typeof body.username === 'string'
    ? body.username
    : ''
}

/**
 * `POST /token`: the OAuth2 resource owner password grant (RFC 6749 §4.3). It reads
 * `application/x-www-form-urlencoded` `grant_type=password&username=…&password=…` and answers
 * `{ access_token, token_type: 'bearer', expires_in }`. Swagger UI's Authorize button calls it.
 *
 * Register it without `fastify-plugin`: its form parser and error format stay inside its scope,
 * so the viewsets keep accepting JSON only.
 */
export const passwordGrant: FastifyPluginAsync<PasswordGrantOptions> = async function passwordGrant (fastify, options) {
  const { users, expiresIn, redis, claims } = options
  const { perAddress = loginLimits.perAddress, perUsername = loginLimits.perUsername } = options
  fastify.removeAllContentTypeParsers()
  await fastify.register(fastifyFormbody)

  // Two counters, so that neither many addresses against one user nor one address against many users
  // gets more guesses. @fastify/rate-limit's own hook would stop at the first counter (it marks the
  // request as counted), so both are read through createRateLimit and answered here.
  // With Redis every process counts in one place; a store that cannot answer fails the request (500), never
  // lets it through uncounted.
  const store = redis === undefined ? {} : { redis, nameSpace: 'auth-token-limit:', skipOnError: false }
  await fastify.register(fastifyRateLimit, { global: false, ...store })
  // The two counters share one store: a kind prefix keeps a username such as "1.2.3.4" off an address's count.
  const byAddress = fastify.createRateLimit({
    ...perAddress,
    keyGenerator: (request) => `address:${addressKey(request.ip)}`,
  })
  const byUsername = fastify.createRateLimit({
    ...perUsername,
    keyGenerator: (request) => `username:${usernameOf(request)}`,
  })
  async function limited (
    request: FastifyRequest,
    reply: FastifyReply,
    counter: typeof byAddress,
    key: 'address' | 'username'
  ): Promise<boolean> {
    const result = await counter(request)
    if (result.isAllowed || !result.isExceeded) return false
    request.log.warn(
      { ip: request.ip, ...(key === 'username' ? { username: usernameOf(request) } : { key: addressKey(request.ip) }) },
      `token requests over the limit per ${key}`
    )
    reply.header('retry-after', String(result.ttlInSeconds))
    oauthError(
      reply,
      429,
      'temporarily_unavailable',
      `Too many token requests: retry after ${result.ttlInSeconds} seconds`
    )
    return true
  }

  // Errors before the handler (wrong content type, invalid form, a body too large) answer in OAuth's format, not
  // problem+json, and always with a status the operation documents: 400 for every refused request, 500 for the rest.
  fastify.setErrorHandler<FastifyError>((error, request, reply) => {
    if (isUnsupportedGrant(error)) {
      return oauthError(reply, 400, 'unsupported_grant_type', 'Only grant_type=password is supported')
    }
    if (error.validation !== undefined || (error.statusCode !== undefined && error.statusCode < 500)) {
      const description =
        error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
          ? 'The body must be application/x-www-form-urlencoded'
          : 'The request needs grant_type, username and password, each once'
      return oauthError(reply, 400, 'invalid_request', description)
    }
    request.log.error({ err: error }, 'token request failed')
    return oauthError(reply, 500, 'server_error', 'An unexpected error occurred')
  })

  fastify.post<{ Body: TokenBody }>(
    '/token',
    {
      // Per address before the body is read; per username in the handler, once the request is well formed.
      onRequest: async (request, reply) => {
        if (await limited(request, reply, byAddress, 'address')) return reply
      },
      schema: {
        operationId: 'token',
        summary: 'Get an access token (OAuth2 password grant)',
        tags: ['auth'],
        consumes: ['application/x-www-form-urlencoded'],
        body: TokenRequest,
        response: {
          200: {
            description: 'An access token; send it as `Authorization: Bearer <access_token>`',
            type: 'object',
            properties: {
              access_token: { type: 'string' },
              token_type: { type: 'string', enum: ['bearer'] },
              expires_in: { type: 'integer', description: 'Seconds until the token expires' },
            },
            required: ['access_token', 'token_type', 'expires_in'],
          },
          400: {
            description:
              '`invalid_grant` (wrong username or password), `unsupported_grant_type` (any `grant_type` but ' +
              '`password`) or `invalid_request` (a missing, empty or repeated parameter, a body that is not ' +
              '`application/x-www-form-urlencoded` or is over the body limit)',
            ...tokenError(['invalid_request', 'invalid_grant', 'unsupported_grant_type']),
          },
          429: {
            description:
              '`temporarily_unavailable`: too many token requests from this address (an IPv6 address counts with its ' +
              '/64) or for this username; see `Retry-After`',
            headers: { 'retry-after': { description: 'Seconds until a new request is counted', type: 'integer' } },
            ...tokenError(['temporarily_unavailable']),
          },
          500: {
            description: '`server_error`: the request could not be answered (the log says why)',
            ...tokenError(['server_error']),
          },
        },
      },
    },
    async (request, reply) => {
      // The schema has checked them: grant_type is `password`, username and password are non-empty strings.
      const { username, password } = request.body
      // Counted before the password is checked: past the limit even the right password is refused.
      if (await limited(request, reply, byUsername, 'username')) return reply
      const subject = await users.check(username, password)
      // The same answer for an unknown user and a wrong password: it does not tell which names exist.
      // 400, as RFC 6749 §5.2 says: a 401 would need a WWW-Authenticate challenge for a client credential.
      if (subject === undefined) {
        // Who tried and from where, never the password.
        request.log.warn({ ip: request.ip, username }, 'failed login')
        return oauthError(reply, 400, 'invalid_grant', 'The username or password is wrong')
      }
      const accessToken = await reply.jwtSign({ ...claims?.(subject), sub: subject })
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
      return { access_token: accessToken, token_type: 'bearer', expires_in: expiresIn }
    }
  )
}
