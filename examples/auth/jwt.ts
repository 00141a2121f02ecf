import type { FastifyJWTOptions } from '@fastify/jwt'

/** Who issues the example's tokens and whom they are for: a token naming anything else is refused. */
export const tokenIssuer = 'fastify-viewsets-example-auth'
export const tokenAudience = 'fastify-viewsets-example-auth'

/** How far a server clock may run behind the issuer's, in milliseconds (fast-jwt's unit). */
export const clockTolerance = 5_000

/** The parts of a verified token that `complete: true` hands to `trusted` and `formatUser`. */
interface CompleteToken {
  header: { crit?: unknown }
  payload: { iat?: unknown }
  /** The signature segment as sent. */
  signature?: unknown
}

function isCompleteToken (value: unknown): value is CompleteToken {
  return typeof value === 'object' && value !== null && 'header' in value && 'payload' in value
}

/**
 * Whether a signature segment is canonical base64url (RFC 7515 §2): no padding, no `+` or `/`, no other
 * character, unused trailing bits zero. fast-jwt decodes it leniently (Node's base64 decoder), so `sig==`,
 * `sig` with `-` written as `+`, or a last character with other trailing bits would verify as `sig` does: one
 * token, many spellings, which defeats any list of revoked or already-seen tokens. Only the spelling that
 * decodes and encodes back to itself is accepted.
 */
export function isCanonicalBase64url (segment: string): boolean {
  return /^[A-Za-z0-9_-]*$/.test(segment) && Buffer.from(segment, 'base64url').toString('base64url') === segment
}

/**
 * The @fastify/jwt options the README recommends, which refuse what fast-jwt alone accepts:
 *
 * - HS256 only (`alg: none` and other algorithms are refused);
 * - `exp`, `iat`, `iss` and `aud` required, `iss` and `aud` ours;
 * - `maxAge`: a token older than its lifetime is refused even when its `exp` is further away;
 * - `iat` in the future (past the clock tolerance) is refused: fast-jwt does not check it, and without
 *   that check an `iat` 100 years ahead would make `maxAge` useless;
 * - any `crit` header is refused: we understand no extension, and RFC 7515 §4.1.11 says a token naming
 *   one we do not understand must be rejected. fast-jwt ignores `crit`;
 * - a signature that is not canonical base64url is refused (see {@link isCanonicalBase64url}).
 *
 * `complete: true` lets `trusted` see the header; `formatUser` hands the claims alone to handlers.
 *
 * @example
 * await app.register(fastifyJwt, jwtOptions(process.env.JWT_SECRET, 3600))
 */
export function jwtOptions (secret: string, lifetime: number): FastifyJWTOptions {
  return {
    secret,
    // @fastify/jwt takes expiresIn and maxAge in seconds; clockTolerance goes to fast-jwt as is (milliseconds).
    sign: { algorithm: 'HS256', expiresIn: lifetime, iss: tokenIssuer, aud: tokenAudience },
    verify: {
      algorithms: ['HS256'],
      requiredClaims: ['exp', 'iat', 'iss', 'aud'],
      maxAge: lifetime,
      allowedIss: tokenIssuer,
      allowedAud: tokenAudience,
      clockTolerance,
      complete: true,
    },
    trusted: (_request, token) => isCompleteToken(token) && token.header.crit === undefined &&
      typeof token.signature === 'string' && isCanonicalBase64url(token.signature) &&
      typeof token.payload.iat === 'number' && token.payload.iat * 1000 <= Date.now() + clockTolerance,
    formatUser: (token) => isCompleteToken(token) ? token.payload : token,
  }
}
