// Who a request comes from: the claims of its verified token, typed by the app's @fastify/jwt user type when it
// declares one.
import type { FastifyRequest } from 'fastify'
import { invalidOption as fail } from './errors.js'
import { isRecord } from './schema/object-schema.js'

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

/** `rowLevelSecurity`: role names, and no `readDb` (every statement of a request runs in its one transaction). */
export function checkRowLevelSecurity (
  options: Record<string, unknown>,
  checkKeys: (given: object) => void
): RowLevelSecurityOptions | undefined {
  const given = options.rowLevelSecurity
  if (given === undefined) return undefined
  if (!isRecord(given)) return fail('rowLevelSecurity', "expected { roles: ['app_user'], defaultRole: 'app_anon' }")
  checkKeys(given)
  const { roles, defaultRole } = given
  const named = (value: unknown) => typeof value === 'string' && value !== ''
  if (!Array.isArray(roles) || !roles.every(named)) fail('rowLevelSecurity.roles', 'expected an array of role names')
  if (typeof defaultRole !== 'string' || defaultRole === '') {
    fail('rowLevelSecurity.defaultRole', 'expected a role name')
  }
  if (options.readDb !== undefined && options.readDb !== options.db) {
    fail('rowLevelSecurity', 'every statement of a request runs in one transaction on db: leave readDb out')
  }
  return Object.freeze({ roles: Object.freeze(roles.map(String)), defaultRole })
}
