import fastifyFormbody from '@fastify/formbody'
import type { FastifyError, FastifyPluginAsync, FastifyReply } from 'fastify'
import type { UserStore } from './users.js'

/** Options of {@link passwordGrant}. */
export interface PasswordGrantOptions {
  users: UserStore
  /** Lifetime of an access token in seconds; @fastify/jwt's `sign.expiresIn` must match it. */
  expiresIn: number
}

type OAuthError = 'invalid_request' | 'invalid_grant' | 'unsupported_grant_type' | 'server_error'

/** An error response of the token endpoint (RFC 6749 §5.2): JSON, never cached. */
function oauthError (reply: FastifyReply, status: number, error: OAuthError, description: string) {
  return reply.code(status).header('cache-control', 'no-store').header('pragma', 'no-cache')
    .send({ error, error_description: description })
}

const TokenRequest = {
  type: 'object',
  properties: {
    grant_type: { type: 'string', description: 'Always `password`' },
    username: { type: 'string' },
    password: { type: 'string', format: 'password' },
    scope: { type: 'string', description: 'Ignored: the demo has no scopes' },
  },
  required: ['grant_type'],
} as const

const TokenError = {
  type: 'object',
  properties: { error: { type: 'string' }, error_description: { type: 'string' } },
  required: ['error'],
} as const

interface TokenBody { grant_type: string, username?: string, password?: string }

/**
 * `POST /token`: the OAuth2 resource owner password grant (RFC 6749 §4.3). It reads
 * `application/x-www-form-urlencoded` `grant_type=password&username=…&password=…` and answers
 * `{ access_token, token_type: 'bearer', expires_in }`. Swagger UI's Authorize button calls it.
 *
 * Register it without `fastify-plugin`: its form parser and error format stay inside its scope,
 * so the viewsets keep accepting JSON only.
 */
export const passwordGrant: FastifyPluginAsync<PasswordGrantOptions> = async function passwordGrant (fastify, { users, expiresIn }) {
  fastify.removeAllContentTypeParsers()
  await fastify.register(fastifyFormbody)

  // Errors before the handler (wrong content type, invalid form) answer in OAuth's format, not problem+json.
  fastify.setErrorHandler<FastifyError>((error, request, reply) => {
    if (error.validation !== undefined || (error.statusCode !== undefined && error.statusCode < 500)) {
      const description = error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? 'The body must be application/x-www-form-urlencoded'
        : 'The request needs grant_type, username and password, each once'
      return oauthError(reply, 400, 'invalid_request', description)
    }
    request.log.error({ err: error }, 'token request failed')
    return oauthError(reply, 500, 'server_error', 'An unexpected error occurred')
  })

  fastify.post<{ Body: TokenBody }>('/token', {
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
        400: { description: '`invalid_request` or `unsupported_grant_type`', ...TokenError },
        401: { description: '`invalid_grant`: wrong username or password', ...TokenError },
      },
    },
  }, async (request, reply) => {
    const { grant_type: grantType, username, password } = request.body
    if (grantType !== 'password') return oauthError(reply, 400, 'unsupported_grant_type', 'Only grant_type=password is supported')
    if (username === undefined || username === '' || password === undefined || password === '') {
      return oauthError(reply, 400, 'invalid_request', 'username and password are required')
    }
    const subject = await users.check(username, password)
    // The same answer for an unknown user and a wrong password: it does not tell which names exist.
    if (subject === undefined) return oauthError(reply, 401, 'invalid_grant', 'The username or password is wrong')
    const accessToken = await reply.jwtSign({ sub: subject })
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
    return { access_token: accessToken, token_type: 'bearer', expires_in: expiresIn }
  })
}
