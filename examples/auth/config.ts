import { randomBytes } from 'node:crypto'
import { deflateRawSync } from 'node:zlib'

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

/**
 * Secrets that libraries, tutorials and tools use as defaults or examples (jwt.io's, jsonwebtoken's, express-session's,
 * the usual placeholders): attackers try them first. Compared trimmed and in lower case.
 */
export const commonSecrets: ReadonlySet<string> = new Set([
  'secret',
  'secretkey',
  'secret_key',
  'secret-key',
  'mysecret',
  'my-secret',
  'supersecret',
  'super-secret',
  'topsecret',
  'changeme',
  'change-me',
  'changeit',
  'your-256-bit-secret',
  'your-secret-key',
  'your_jwt_secret',
  'jwt_secret',
  'jwt-secret',
  'jwtsecret',
  'jwt_secret_key',
  'shhhhh',
  'keyboard cat',
  'password',
  'default',
])

/**
 * Words that default and example secrets are made of. A secret that is little more than these, repeated or
 * joined (`supersecret-jwt-secret-changeme-…`), is guessable however long it is, so the entropy estimate is also
 * taken of what is left once they are removed.
 */
export const commonSecretWords: readonly string[] = [
  'secret', 'password', 'passwd', 'changeme', 'change', 'default', 'example', 'sample', 'test', 'jwt', 'token',
  'signing', 'sign', 'key', 'super', 'top', 'my', 'your', 'our', 'the', 'bit', 'bits', 'hs256', 'hmac', 'sha256',
  'admin', 'private', 'please', 'development', 'dev', 'production', 'prod', 'local', 'qwerty', 'letmein',
  'keyboard', 'cat', 'api', 'app', 'auth', 'session', 'random', 'long', 'string', 'replace', 'this', 'with', 'here',
]

/** The shortest `JWT_SECRET` accepted, in bytes: 256 bits of key for HS256 (RFC 7518 §3.2). */
export const minimumSecretBytes = 32
/**
 * The least entropy a `JWT_SECRET` must show, in bits, by {@link estimatedSecretBits}. A random key passes
 * easily (`openssl rand -base64 48`: about 330 bits; `openssl rand -hex 32`: about 250); whitespace, a
 * repeated character, word or pattern, a sequence, or common words do not.
 */
export const minimumSecretBits = 128
/** The shortest `DEMO_PASSWORD` accepted outside the demo (NIST SP 800-63B-4 §3.1.1.2, single-factor). */
export const minimumPasswordLength = 15

const howToMakeOne = 'generate one with `openssl rand -base64 48`'

/** Shannon entropy of the values' frequencies times their number. */
function frequencyBits (values: readonly unknown[]): number {
  const counts = new Map<unknown, number>()
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1)
  let perValue = 0
  for (const count of counts.values()) {
    const p = count / values.length
    perValue -= p * Math.log2(p)
  }
  return perValue * values.length
}

/** Shannon entropy of the string's characters times its length: an upper bound on the entropy it can hold. */
export function estimatedBits (value: string): number {
  return frequencyBits([...value])
}

/** Characters times log2 of the size of the character classes used (lower, upper, digits, ASCII symbols, other). */
function characterClassBits (characters: readonly string[]): number {
  const classes = [
    [/[a-z]/, 26],
    [/[A-Z]/, 26],
    [/[0-9]/, 10],
    [/[\x20-\x7e]/, 33],
    // Any other character: an alphabet this large only counts when the other measures agree.
    [/[^\x20-\x7e]/, 1000],
  ] as const
  let alphabet = 0
  for (const [pattern, size] of classes) if (characters.some((character) => pattern.test(character))) alphabet += size
  return alphabet === 0 ? 0 : characters.length * Math.log2(alphabet)
}

/**
 * An estimate of the entropy of a secret, in bits: the least of four measures, each an upper bound that a
 * different kind of guessable secret keeps low:
 * - the character classes used (lower, upper, digits, symbols) times the length: short or one-class secrets;
 * - the Shannon entropy of the characters' frequencies: few distinct characters;
 * - the Shannon entropy of the differences between neighbouring characters: sequences (`abcdef…`, `0123…`);
 * - the size of the secret compressed with deflate (zlib, level 9), in bits: repeated words and patterns.
 *
 * @example
 * estimatedSecretBits(randomBytes(48).toString('base64'))   // about 330
 * estimatedSecretBits('correct-horse-battery-staple-'.repeat(2))  // about 240: refused as periodic, see secretProblem
 */
export function estimatedSecretBits (secret: string): number {
  const characters = [...secret]
  const codes = characters.map((character) => character.codePointAt(0) ?? 0)
  const steps = codes.slice(1).map((code, index) => code - (codes[index] ?? 0))
  return Math.min(
    characterClassBits(characters),
    estimatedBits(secret),
    // The first character, then the steps: log2 of the classes for the one, the steps' frequencies for the rest.
    (characters.length > 0 ? characterClassBits(characters.slice(0, 1)) : 0) + frequencyBits(steps),
    deflateRawSync(secret, { level: 9 }).length * 8
  )
}

/** The length of the shortest unit the secret repeats (at least twice, the last copy possibly cut), or undefined. */
export function repeatedUnit (secret: string): number | undefined {
  const characters = [...secret]
  for (let unit = 1; unit <= characters.length / 2; unit++) {
    if (characters.every((character, index) => index < unit || character === characters[index - unit])) return unit
  }
  return undefined
}

const commonWordPattern = new RegExp(
  [...commonSecretWords].sort((a, b) => b.length - a.length).join('|'),
  'giu'
)

/** Why a `JWT_SECRET` is not random enough (the message's end), or undefined when it is. */
function lowEntropy (secret: string): string | undefined {
  const needed = `, ${minimumSecretBits} or more are needed`
  const unit = repeatedUnit(secret)
  if (unit !== undefined) {
    // What a repeated secret holds is its unit: the copies add nothing an attacker must guess.
    const bits = Math.floor(estimatedSecretBits([...secret].slice(0, unit).join('')))
    const what = unit === 1 ? 'one character' : `a pattern of ${unit} characters`
    return `about ${bits} bits of entropy (it repeats ${what})${needed}`
  }
  const bits = estimatedSecretBits(secret)
  if (bits < minimumSecretBits) return `about ${Math.floor(bits)} bits of entropy${needed}`
  const rest = secret.replace(commonWordPattern, '')
  const restBits = estimatedSecretBits(rest)
  if (restBits < minimumSecretBits) {
    return `about ${Math.floor(restBits)} bits of entropy once common words ("secret", "changeme", "jwt", …) are ` +
      `taken out${needed}`
  }
  return undefined
}

/**
 * Why a `JWT_SECRET` is refused, or undefined when it is acceptable. In this order: a value published in this
 * repository, a common default (`secret`, `changeme`, `your-256-bit-secret`, …), fewer than 32 bytes, then not
 * random enough: a repeated character, word or pattern, or an estimate below 128 bits (see
 * {@link estimatedSecretBits}), of the whole secret or of what is left without common words.
 */
export function secretProblem (secret: string): string | undefined {
  if (publishedSecrets.has(secret) || publishedSecrets.has(secret.trim())) {
    return 'JWT_SECRET is a published value (from this repository): anyone can sign tokens with it'
  }
  if (commonSecrets.has(secret.trim().toLowerCase())) {
    return 'JWT_SECRET is a well-known default secret (libraries and tutorials use it): attackers try it first'
  }
  const bytes = Buffer.byteLength(secret)
  if (bytes < minimumSecretBytes) {
    return `JWT_SECRET is too short: ${bytes} bytes, ${minimumSecretBytes} or more are needed`
  }
  const weakness = lowEntropy(secret)
  return weakness === undefined ? undefined : `JWT_SECRET is not random enough: ${weakness}`
}

/**
 * Reads the example's settings, and throws (before anything starts) when they are not safe.
 *
 * - `DEMO=1` runs the public demo: the `demo`/`demo-password` user, and, unless `JWT_SECRET` is set, a random
 *   key made at startup (tokens do not survive a restart). It is refused with `NODE_ENV=production`.
 * - Otherwise `JWT_SECRET` must be set: 32 bytes or more, random-looking (see {@link secretProblem}), never a
 *   value published in this repository or a common default. `DEMO_PASSWORD` must be set too, 15 characters or
 *   more and not a published one.
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
