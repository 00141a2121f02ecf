import { randomBytes } from 'node:crypto'

/** What the auth example reads from the environment (or `.env`), with its defaults applied and checked. */
export interface AuthConfig {
  /** HS256 key of the access tokens (`JWT_SECRET`; with `DEMO=1` and none set, a random key made at startup). */
  readonly jwtSecret: string
  /** The demo user's name (`DEMO_USERNAME`, default `demo`). */
  readonly demoUsername: string
  /** The demo user's password (`DEMO_PASSWORD`; only `DEMO=1` has a default); it is hashed at startup. */
  readonly demoPassword: string
  /** Whether the example runs as a public demo (`DEMO=1`): known credentials, to be said loudly in the log. */
  readonly demo: boolean
}

/** The demo's credentials, used only with `DEMO=1`: they are published, so anyone can log in with them. */
export const authDefaults = Object.freeze({
  DEMO_USERNAME: 'demo',
  DEMO_PASSWORD: 'demo-password',
})

/**
 * Secrets and passwords that have appeared in this repository (the former built-in secret, the
 * `.env.example` placeholder, the README's and the tests' values). Whoever read them can sign tokens or
 * log in, so they are refused even when they are long enough.
 */
export const publishedSecrets: ReadonlySet<string> = new Set([
  'development-only-secret-do-not-use-in-production',
  'change-me-to-a-long-random-secret-of-32-chars',
  'example-test-secret-of-at-least-32-chars',
  'a-different-secret-of-at-least-32-chars',
  authDefaults.DEMO_PASSWORD,
  'a-real-password',
  'through the looking glass',
])

/** The shortest `JWT_SECRET` accepted, in bytes: 256 bits of key for HS256 (RFC 7518 §3.2). */
export const minimumSecretBytes = 32
/**
 * The least entropy a `JWT_SECRET` must show, in bits, estimated from its characters' frequencies. A random
 * key passes easily (`openssl rand -base64 48`: about 340 bits; `openssl rand -hex 32`: about 240); a
 * repeated character, whitespace or a repeated word does not.
 */
export const minimumSecretBits = 128
/** The shortest `DEMO_PASSWORD` accepted outside the demo (NIST SP 800-63B-4 §3.1.1.2, single-factor). */
export const minimumPasswordLength = 15

const howToMakeOne = 'generate one with `openssl rand -base64 48`'

/** Shannon entropy of the string's characters times its length: an upper bound on the entropy it can hold. */
export function estimatedBits (value: string): number {
  const characters = [...value]
  const counts = new Map<string, number>()
  for (const character of characters) counts.set(character, (counts.get(character) ?? 0) + 1)
  let perCharacter = 0
  for (const count of counts.values()) {
    const p = count / characters.length
    perCharacter -= p * Math.log2(p)
  }
  return perCharacter * characters.length
}

/** Why a `JWT_SECRET` is refused, or undefined when it is acceptable. */
export function secretProblem (secret: string): string | undefined {
  if (publishedSecrets.has(secret) || publishedSecrets.has(secret.trim())) return 'JWT_SECRET is a published value (from this repository): anyone can sign tokens with it'
  const bytes = Buffer.byteLength(secret)
  if (bytes < minimumSecretBytes) return `JWT_SECRET is too short: ${bytes} bytes, ${minimumSecretBytes} or more are needed`
  const bits = estimatedBits(secret)
  if (bits < minimumSecretBits) return `JWT_SECRET is not random enough: about ${Math.floor(bits)} bits of entropy, ${minimumSecretBits} or more are needed`
  return undefined
}

/**
 * Reads the example's settings, and throws (before anything starts) when they are not safe.
 *
 * - `DEMO=1` runs the public demo: the `demo`/`demo-password` user, and, unless `JWT_SECRET` is set, a random
 *   key made at startup (tokens do not survive a restart). It is refused with `NODE_ENV=production`.
 * - Otherwise `JWT_SECRET` must be set: 32 bytes or more, random-looking, never a value published in this
 *   repository. `DEMO_PASSWORD` must be set too, 15 characters or more and not a published one.
 *
 * @example
 * authConfig({ DEMO: '1' })                                                 // the demo, with a warning in the log
 * authConfig({ JWT_SECRET: process.env.JWT_SECRET, DEMO_PASSWORD: '…' })   // a real deployment
 */
export function authConfig (env: Record<string, string | undefined> = process.env): AuthConfig {
  const given = (name: string): string | undefined => env[name] === '' ? undefined : env[name]
  const demo = given('DEMO') === '1'
  if (demo && env.NODE_ENV === 'production') throw new Error('DEMO=1 is refused when NODE_ENV=production: the demo user and password are public')
  const jwtSecret = given('JWT_SECRET')
  if (jwtSecret === undefined && !demo) {
    throw new Error(`JWT_SECRET is required: ${howToMakeOne}, or run the public demo with DEMO=1`)
  }
  if (jwtSecret !== undefined) {
    const problem = secretProblem(jwtSecret)
    if (problem !== undefined) throw new Error(`${problem}; ${howToMakeOne}`)
  }
  const demoPassword = given('DEMO_PASSWORD')
  if (!demo) {
    if (demoPassword === undefined) throw new Error('DEMO_PASSWORD is required: the default demo password is public (or run the public demo with DEMO=1)')
    if (publishedSecrets.has(demoPassword)) throw new Error('DEMO_PASSWORD is a published value (from this repository): choose another')
    if ([...demoPassword.trim()].length < minimumPasswordLength) throw new Error(`DEMO_PASSWORD is too short: use ${minimumPasswordLength} characters or more`)
  }
  return Object.freeze({
    // The demo's key is random per start: no published key ever signs a token this example accepts.
    jwtSecret: jwtSecret ?? randomBytes(48).toString('base64'),
    demoUsername: given('DEMO_USERNAME') ?? authDefaults.DEMO_USERNAME,
    demoPassword: demoPassword ?? authDefaults.DEMO_PASSWORD,
    demo,
  })
}
