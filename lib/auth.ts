import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { ViewsetErrors } from './errors.js'
import type { ViewsetMethod, ViewsetOptions, ViewsetToken } from './options.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The claims of the verified bearer token on a protected viewset route, else `null`. */
    viewsetToken: ViewsetToken | null
  }
}

/** Name of the OAuth2 security scheme that protected operations reference in OpenAPI. */
export const securitySchemeName = 'OAuth2'

type AuthOptions = Pick<ViewsetOptions<unknown, never, never>, 'authenticate' | 'authorize'>

/** A 401 whose `WWW-Authenticate` challenge carries RFC 6750's error attributes. */
function unauthorized (reply: FastifyReply, detail: string, error?: 'invalid_token' | 'invalid_request'): FastifyError {
  const attributes = error === undefined ? '' : `, error="${error}", error_description="${detail.replaceAll('"', "'")}"`
  reply.header('www-authenticate', `Bearer realm="api"${attributes}`)
  return new ViewsetErrors.Unauthorized(detail)
}

// @fastify/jwt's codes, mapped to a description that names the problem without echoing the token.
const jwtReasons: Record<string, string> = {
  FST_JWT_AUTHORIZATION_TOKEN_EXPIRED: 'The token has expired',
  FST_JWT_AUTHORIZATION_TOKEN_UNTRUSTED: 'The token is not trusted',
  FST_JWT_AUTHORIZATION_TOKEN_INVALID: 'The token signature or claims are not valid',
  FST_JWT_BAD_REQUEST: 'The token is malformed',
}

function jwtVerifier (request: FastifyRequest): Promise<ViewsetToken> {
  return (request as unknown as { jwtVerify: () => Promise<ViewsetToken> }).jwtVerify()
}

/** Fails at startup when protection is asked for but nothing can verify a token. */
export function checkAuth (fastify: FastifyInstance, protectedMethods: readonly ViewsetMethod[], registered: readonly ViewsetMethod[], options: AuthOptions): void {
  const unregistered = protectedMethods.filter((method) => !registered.includes(method))
  if (unregistered.length > 0) {
    throw new ViewsetErrors.InvalidOption('protectedMethods', `${unregistered.join(', ')} ${unregistered.length === 1 ? 'is' : 'are'} not registered (registered: ${registered.join(', ')})`)
  }
  if (protectedMethods.length > 0 && options.authenticate === undefined && !fastify.hasRequestDecorator('jwtVerify')) {
    throw new ViewsetErrors.InvalidOption('protectedMethods', 'register @fastify/jwt before the viewset, or pass an authenticate(request) function')
  }
}

/**
 * The onRequest hook of a protected method: it runs before the body is read, verifies the bearer
 * token (with `request.jwtVerify()` unless `authenticate` is given) and applies `authorize`.
 */
export function authHook (method: ViewsetMethod, options: AuthOptions): onRequestAsyncHookHandler {
  const authenticate = options.authenticate ?? jwtVerifier
  const authorize = options.authorize
  return async function verifyBearer (request, reply) {
    const header = request.headers.authorization
    if (header === undefined || header === '') throw unauthorized(reply, 'This operation needs a bearer token')
    const match = /^Bearer(?:\s+(.*))?$/i.exec(header)
    if (match === null) throw unauthorized(reply, 'Use the Bearer authorization scheme')
    if ((match[1] ?? '').trim() === '') throw unauthorized(reply, 'The bearer token is empty', 'invalid_request')
    let token: ViewsetToken
    try {
      token = await authenticate(request)
    } catch (error) {
      const code = (error as FastifyError).code ?? ''
      if (code.startsWith('FST_VIEWSET_')) throw error
      throw unauthorized(reply, jwtReasons[code] ?? 'The token is not valid', 'invalid_token')
    }
    if (typeof token !== 'object' || token === null) throw unauthorized(reply, 'The token is not valid', 'invalid_token')
    if (authorize !== undefined && !(await authorize(token, method, request))) {
      reply.header('www-authenticate', 'Bearer realm="api", error="insufficient_scope"')
      throw new ViewsetErrors.Forbidden(method)
    }
    request.viewsetToken = token
  }
}
