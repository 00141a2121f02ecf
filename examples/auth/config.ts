/** What the auth example reads from the environment (or `.env`), with its defaults applied and checked. */
export interface AuthConfig {
  /** HS256 key of the access tokens (`JWT_SECRET`). */
  readonly jwtSecret: string
  /** The demo user's name (`DEMO_USERNAME`, default `demo`). */
  readonly demoUsername: string
  /** The demo user's password (`DEMO_PASSWORD`, default `demo-password`); it is hashed at startup. */
  readonly demoPassword: string
}

/** The documented defaults. None of them may be relied on in production. */
export const authDefaults = Object.freeze({
  DEMO_USERNAME: 'demo',
  DEMO_PASSWORD: 'demo-password',
  JWT_SECRET: 'development-only-secret-do-not-use-in-production',
})

/** The shortest `JWT_SECRET` production accepts: 256 bits of key for HS256 (RFC 7518 §3.2). */
const minimumSecretLength = 32

/**
 * Reads the example's settings. With `NODE_ENV=production`, `JWT_SECRET` (32 characters or more) and
 * `DEMO_PASSWORD` must be set: a default secret would let anyone who read this file sign tokens.
 */
export function authConfig (env: Record<string, string | undefined> = process.env): AuthConfig {
  const production = env.NODE_ENV === 'production'
  const given = (name: keyof typeof authDefaults): string | undefined => env[name] === '' ? undefined : env[name]
  const jwtSecret = given('JWT_SECRET')
  if (production && jwtSecret === undefined) {
    throw new Error('JWT_SECRET is required when NODE_ENV=production: set it to a random string of 32 characters or more (openssl rand -base64 48)')
  }
  if (production && jwtSecret !== undefined && jwtSecret.length < minimumSecretLength) {
    throw new Error(`JWT_SECRET is too short for production: use ${minimumSecretLength} characters or more (openssl rand -base64 48)`)
  }
  const demoPassword = given('DEMO_PASSWORD')
  if (production && demoPassword === undefined) {
    throw new Error('DEMO_PASSWORD is required when NODE_ENV=production: the default demo password is public')
  }
  return Object.freeze({
    jwtSecret: jwtSecret ?? authDefaults.JWT_SECRET,
    demoUsername: given('DEMO_USERNAME') ?? authDefaults.DEMO_USERNAME,
    demoPassword: demoPassword ?? authDefaults.DEMO_PASSWORD,
  })
}
