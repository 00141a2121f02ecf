import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
  RouteOptions,
} from 'fastify'
import { ViewsetErrors } from '../errors.js'
import type { AuthorizedMethod, ViewsetMethod, ViewsetOptions, ViewsetToken } from '../options.js'
import { baseMethods } from '../options.js'
import { problemResponses } from '../schema/openapi.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The claims of the verified bearer token on a viewset route, else `null` (no valid token was sent). */
    viewsetToken: ViewsetToken | null
  }
  interface FastifyContextConfig {
    /** On a route added in `customRoutes`: authenticate it like the protected methods (401/403, `authorize` with
     * `'CUSTOM'`). */
    protected?: boolean
  }
}

/**
 * Name of the OAuth2 security scheme that protected operations reference in OpenAPI
 * (`security: [{ OAuth2: [] }]`). Declare it under this name when you register @fastify/swagger yourself.
 *
 * @example
 * ```ts
 * const components = { securitySchemes: { [securitySchemeName]: { type: 'http', scheme: 'bearer' } } }
 * ```
 */
export const securitySchemeName = 'OAuth2'

export type AuthOptions = Pick<ViewsetOptions<unknown, never, never>, 'authenticate' | 'authorize'>
type BearerError = 'invalid_request' | 'invalid_token'

const realm = 'Bearer realm="api"'

/**
 * A 401 whose `WWW-Authenticate` challenge carries RFC 6750's error attributes. Without an `error`
 * (no credentials, or another scheme) the challenge is bare, as RFC 6750 §3.1 asks.
 */
function unauthorized (reply: FastifyReply, detail: string, error?: BearerError): FastifyError {
  challenge(reply, detail, error)
  return new ViewsetErrors.Unauthorized(detail)
}

function challenge (reply: FastifyReply, detail: string, error?: BearerError): void {
  // error_description may not hold `"` or `\` (RFC 6750 §3); our descriptions are fixed strings, user ones are not.
  const attributes =
    error === undefined
      ? ''
      : `, error="${error}", error_description="${detail.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "'")}"`
  reply.header('www-authenticate', `${realm}${attributes}`)
}

// @fastify/jwt's codes, mapped to a description that names the problem without echoing the token.
const jwtReasons: Record<string, string> = {
  FST_JWT_AUTHORIZATION_TOKEN_EXPIRED: 'The token has expired',
  FST_JWT_AUTHORIZATION_TOKEN_UNTRUSTED: 'The token is not trusted',
  FST_JWT_AUTHORIZATION_TOKEN_INVALID: 'The token signature or claims are not valid',
  FST_JWT_BAD_REQUEST: 'The token is malformed',
  FAST_JWT_MISSING_SIGNATURE: 'The token is not signed',
}

/**
 * What a failed `authenticate` answers. Errors of the library pass through (a thrown 401 or 403 gets
 * its challenge header), server faults (status 500 and above) stay server faults, and anything else,
 * @fastify/jwt's own 400s and 401s included, is a 401 `invalid_token`.
 */
function authenticationFailure (reply: FastifyReply, error: unknown): unknown {
  const read = (key: string): unknown =>
    typeof error === 'object' && error !== null ? Reflect.get(error, key) : undefined
  const code = typeof read('code') === 'string' ? String(read('code')) : undefined
  const message = typeof read('message') === 'string' ? String(read('message')) : undefined
  const statusCode = read('statusCode')
  if (code === 'FST_VIEWSET_UNAUTHORIZED') {
    challenge(reply, message ?? 'The token is not valid', 'invalid_token')
    return error
  }
  if (code === 'FST_VIEWSET_FORBIDDEN') {
    reply.header('www-authenticate', `${realm}, error="insufficient_scope"`)
    return error
  }
  if (code?.startsWith('FST_VIEWSET_') === true || (typeof statusCode === 'number' && statusCode >= 500)) return error
  return unauthorized(reply, jwtReasons[code ?? ''] ?? 'The token is not valid', 'invalid_token')
}

/** `request.jwtVerify()` of @fastify/jwt (checked at registration: `checkAuth`), read without importing it. */
async function jwtVerifier (request: FastifyRequest): Promise<unknown> {
  const verify: unknown = Reflect.get(request, 'jwtVerify')
  if (typeof verify !== 'function') throw new ViewsetErrors.Unauthorized('The token cannot be verified')
  const claims: unknown = await verify.call(request)
  return claims
}

/** Whether tokens can be verified here: an `authenticate` function, or @fastify/jwt registered before the viewset. */
export function canVerifyTokens (fastify: FastifyInstance, options: AuthOptions): boolean {
  return options.authenticate !== undefined || fastify.hasRequestDecorator('jwtVerify')
}

/**
 * The protected methods of a mounted viewset: those named, and every registered derived method whose base is
 * named (`protectedMethods: ['POST']` protects BULK: a bulk write is a POST of many).
 */
export function withDerivedMethods (
  protectedMethods: readonly ViewsetMethod[],
  registered: readonly ViewsetMethod[]
): readonly ViewsetMethod[] {
  const derived = registered.filter((method) => {
    const base = baseMethods[method]
    return !protectedMethods.includes(method) && base !== undefined && protectedMethods.includes(base)
  })
  return Object.freeze([...protectedMethods, ...derived])
}

/**
 * Fails at mounting when the viewset has row rules (`scope`, `beforeWrite`, `rowLevelSecurity`) and nothing can
 * verify a token, unless
 * `withoutTokens` states that they read none: every token would be ignored, and the rules would see `null`.
 */
export function checkRuleVerifier (
  fastify: FastifyInstance,
  rules: ReadonlySet<string>,
  options: AuthOptions & { readonly withoutTokens?: boolean | undefined }
): void {
  const named = ['scope', 'beforeWrite', 'fieldAccess', 'rowLevelSecurity'].filter((rule) => rules.has(rule))
  if (named.length === 0 || options.withoutTokens === true || canVerifyTokens(fastify, options)) return
  throw new ViewsetErrors.InvalidOption(
    named.join(', '),
    'nothing can verify a token here: register @fastify/jwt before the viewset, or pass an authenticate(request) ' +
      'function; or set withoutTokens: true if the rules read no token'
  )
}

/** Fails at mounting when `protectedMethods` names a method the viewset does not serve. */
export function checkProtectedMethods (
  protectedMethods: readonly ViewsetMethod[],
  registered: readonly ViewsetMethod[]
): void {
  const unregistered = protectedMethods.filter((method) => !registered.includes(method))
  if (unregistered.length > 0) {
    throw new ViewsetErrors.InvalidOption(
      'protectedMethods',
      `${unregistered.join(', ')} ${unregistered.length === 1 ? 'is' : 'are'} not registered ` +
        `(registered: ${registered.join(', ')})`
    )
  }
}

/**
 * Fails at mounting when protection is asked for but nothing can verify a token (no @fastify/jwt registered
 * before the viewset, and no `authenticate`). `authenticate` with no protected method is fine: open methods
 * verify a token when one is sent.
 */
export function checkVerifier (
  fastify: FastifyInstance,
  protectedMethods: readonly ViewsetMethod[],
  options: AuthOptions
): void {
  if (protectedMethods.length > 0 && !canVerifyTokens(fastify, options)) {
    throw new ViewsetErrors.InvalidOption(
      'protectedMethods',
      'register @fastify/jwt before the viewset, or pass an authenticate(request) function'
    )
  }
}

/**
 * The checks that count protected custom routes too, once the custom routes are added: `authorize` with
 * nothing protected means the user believes some route is protected, and it is not; a protected custom
 * route needs a verifier like a protected method.
 */
export function checkProtectedRoutes (
  fastify: FastifyInstance,
  protectedMethods: readonly ViewsetMethod[],
  protectedRoutes: number,
  options: AuthOptions
): void {
  if (protectedMethods.length === 0 && protectedRoutes === 0 && options.authorize !== undefined) {
    throw new ViewsetErrors.InvalidOption(
      'authorize',
      'no method is protected: list them in protectedMethods, ' +
        'or protect a custom route with config: { protected: true }'
    )
  }
  if (protectedRoutes > 0 && !canVerifyTokens(fastify, options)) {
    throw new ViewsetErrors.InvalidOption(
      'customRoutes',
      'a route has config: { protected: true }: register @fastify/jwt before the viewset, ' +
        'or pass an authenticate(request) function'
    )
  }
}

// RFC 7235: the scheme is case-insensitive; the token is whatever follows the whitespace.
const bearerHeader = /^Bearer(?:[ \t]+(.*))?$/i

/** Verifies the bearer token of a request whose header is a Bearer credential; throws the 401 otherwise. */
async function verifiedToken (
  request: FastifyRequest,
  reply: FastifyReply,
  token: string | undefined,
  authenticate: (request: FastifyRequest) => unknown
): Promise<ViewsetToken> {
  if ((token ?? '').trim() === '') throw unauthorized(reply, 'The bearer token is empty', 'invalid_request')
  let claims: unknown
  try {
    claims = await authenticate(request)
  } catch (error) {
    throw authenticationFailure(reply, error)
  }
  if (typeof claims !== 'object' || claims === null) {
    throw unauthorized(reply, 'The token is not valid', 'invalid_token')
  }
  return claims as ViewsetToken // an object from the verifier: @fastify/jwt's user type, or authenticate's
}

/**
 * The onRequest hook of a protected method (or custom route: `method` `'CUSTOM'`). It runs before the body
 * is read: it verifies the bearer token (with `request.jwtVerify()` unless `authenticate` is given), applies
 * `authorize`, and leaves the claims in `request.viewsetToken` for the handler's `token` argument.
 */
export function authHook (method: AuthorizedMethod, options: AuthOptions): onRequestAsyncHookHandler {
  const authenticate = options.authenticate ?? jwtVerifier
  const authorize = options.authorize
  return async function verifyBearer (request, reply) {
    const header = request.headers.authorization
    if (header === undefined || header === '') throw unauthorized(reply, 'This operation needs a bearer token')
    const match = bearerHeader.exec(header)
    if (match === null) throw unauthorized(reply, 'Use the Bearer authorization scheme')
    const claims = await verifiedToken(request, reply, match[1], authenticate)
    if (authorize !== undefined && !(await authorize(claims, method, request))) {
      reply.header('www-authenticate', `${realm}, error="insufficient_scope"`)
      throw new ViewsetErrors.Forbidden(`The token does not allow ${method}`)
    }
    request.viewsetToken = claims
  }
}

/**
 * The onRequest hook of an open method when tokens can be verified: a bearer token, when one is sent, is
 * verified as on protected methods and its claims go to `request.viewsetToken`; an invalid one is a 401
 * (an expired token must not silently turn a "my rows" list into an anonymous one). No bearer token, or
 * another scheme, leaves the token `null`. `authorize` is not called.
 */
export function openTokenHook (options: AuthOptions): onRequestAsyncHookHandler {
  const authenticate = options.authenticate ?? jwtVerifier
  return async function verifyBearerIfSent (request, reply) {
    const header = request.headers.authorization
    const match = header === undefined ? null : bearerHeader.exec(header)
    if (match !== null) request.viewsetToken = await verifiedToken(request, reply, match[1], authenticate)
  }
}

/**
 * Protects a route added in `customRoutes` when it asks for it (`config: { protected: true }`) or already
 * runs `protect` itself (`onRequest: this.protect`): the hook first, and in OpenAPI its `security` and the
 * 401 and 403 answers. True when the route is protected, for the startup checks.
 */
export function protectCustomRoute (route: RouteOptions, protect: onRequestAsyncHookHandler): boolean {
  const hooks =
    route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]
  const asked = route.config?.protected === true
  if (!asked && !hooks.includes(protect)) return false
  if (asked && !hooks.includes(protect)) route.onRequest = [protect, ...hooks]
  const schema = route.schema ?? {}
  const response = typeof schema.response === 'object' && schema.response !== null ? schema.response : {}
  route.schema = {
    ...schema,
    security: [{ [securitySchemeName]: [] }],
    response: { ...problemResponses([401, 403]), ...response },
  }
  return true
}
