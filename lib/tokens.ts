// Who a request comes from: the claims of its verified token, typed by the app's @fastify/jwt user type when it
// declares one.
import type { FastifyRequest } from 'fastify'

/**
 * The claims of a token when the app declares no user type: whatever claims it carries, `sub` a string when present.
 *
 * @example
 * ```ts
 * const claims: TokenClaims = { sub: 'alice', role: 'admin' }
 * const owner = claims.sub ?? null
 * ```
 */
export interface TokenClaims {
  /** The subject: who the token was issued to. */
  sub?: string
  [claim: string]: unknown
}

/**
 * What @fastify/jwt puts on `request.user`: the app's `FastifyJWT['user']` when it declares one, else a
 * payload type that is not only objects. Read through Fastify's request type, which @fastify/jwt augments,
 * so that nothing here imports @fastify/jwt (an optional peer).
 */
type JwtUser = FastifyRequest extends { user: infer User } ? User : undefined

/**
 * The decoded claims of a verified token, as handed to handlers: the app's @fastify/jwt user type where
 * the app declares one (`declare module '@fastify/jwt' { interface FastifyJWT { user: ... } }`), else
 * {@link TokenClaims}. Either way `token.sub` is a string when present.
 *
 * @example
 * ```ts
 * override async createElement (
 *   request: CreateRequest<typeof Item>, _reply: FastifyReply, token: ViewsetToken | null,
 * ) {
 *   return await this.insert({ ...this.writable(request.body), owner: token?.sub ?? null })
 * }
 * ```
 */
export type ViewsetToken = [JwtUser] extends [object] ? JwtUser & { sub?: string } : TokenClaims

/**
 * The `rowLevelSecurity` option: which roles a request may run as, by its token's `role` claim.
 *
 * @example
 * ```ts
 * const rowLevelSecurity: RowLevelSecurityOptions = { roles: ['app_user', 'app_admin'], defaultRole: 'app_anon' }
 * ```
 */
export interface RowLevelSecurityOptions {
  /** The roles a token's `role` claim may name. */
  readonly roles: readonly string[]
  /** The role of a request without a token, or whose token has no `role` claim. */
  readonly defaultRole: string
}
