import { literal } from './naming.js'

/** How server.ts is written: the database it was generated from, and whether `--writable` was given. */
export interface ServerSettings {
  /** The database URL, kept only when it carries no password; otherwise DATABASE_URL (or .env) is read. */
  readonly url: string | undefined
  /** Writes open to anyone when JWT_SECRET is not set (refused with NODE_ENV=production). */
  readonly writable: boolean
}

// The README's Production section, as examples/shared.ts sets it: each bound caps what one request can cost.
const fastifyOptions =
  '    // Receiving a whole request, headers and body, in ms: a body trickled a byte at a time is cut with 408.' + `
    requestTimeout,
    // A socket with no traffic either way is closed after this, in ms: longer than createDatabase's
    // statementTimeout (30 s) plus its connectionTimeout (5 s), so that a slow but allowed answer is still sent.
    connectionTimeout: 60_000,
    // The largest request body (413), and the longest path parameter (414).
    bodyLimit: 1_048_576,
    maxParamLength: 100,
    // Malformed percent-encoding and over-long parameters answer problem+json, like every other error.
    frameworkErrors: viewsetFrameworkErrors,
    ...fastify,
    // Fastify sets requestTimeout after Node's server exists; given here, Node's headersTimeout no longer than
    // it makes Node enforce it, and checks for overrunning requests every 2 s instead of every 30 s.
    http: { headersTimeout: Math.min(60_000, requestTimeout), connectionsCheckingInterval: 2_000 },`

// The file, with __WRITABLE__, __DATABASE__ and __FASTIFY_OPTIONS__ filled in by writeServer.
const template = `import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import Fastify from 'fastify'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type { Kysely } from 'kysely'
import { createDatabase, viewsetDocs, viewsetFrameworkErrors } from 'fastify-viewsets'
import type { ViewsetMethod } from 'fastify-viewsets'
import type { DB } from './db.js'
import { registerAll } from './viewsets.js'

/** Generated with --writable: without JWT_SECRET, anyone may write (refused with NODE_ENV=production). */
const writable = __WRITABLE__

/** The methods that change rows: they need a token when JWT_SECRET is set. */
const writeMethods: readonly ViewsetMethod[] = ['POST', 'BULK', 'PUT', 'PATCH', 'DELETE']

/** Options of {@link build}. */
export interface BuildOptions {
  /** A database to use; by default one is created from DATABASE_URL and closed with the app. */
  db?: Kysely<DB>
  /** Where JWT_SECRET, NODE_ENV and DATABASE_URL are read (default: process.env). */
  env?: Record<string, string | undefined>
  fastify?: FastifyServerOptions
}

/** Who may write: anyone with a valid token, anyone, or no one; throws when the settings are unsafe. */
function accessOf (env: Record<string, string | undefined>): { secret?: string, open: boolean } {
  const secret = env.JWT_SECRET
  if (secret !== undefined && secret !== '') {
    // RFC 7518 §3.2: an HS256 key has at least 256 bits.
    if (Buffer.byteLength(secret) < 32) {
      throw new Error('JWT_SECRET must be 32 bytes or more: make one with openssl rand -base64 48')
    }
    return { secret, open: false }
  }
  if (writable && env.NODE_ENV === 'production') {
    throw new Error('writes are open to anyone (generated with --writable) and JWT_SECRET is not set: ' +
      'refusing to start with NODE_ENV=production; set JWT_SECRET')
  }
  return { open: writable }
}

/**
 * The app: every table served, the docs at /docs, the README's Production bounds. With JWT_SECRET, writes
 * (POST, BULK, PUT, PATCH, DELETE) need \`Authorization: Bearer <jwt>\`, an HS256 token with \`exp\`; without it,
 * only LIST and GET are served, unless the code was generated with --writable.
 *
 * @example
 * \`\`\`ts
 * const app = await build({ env: { JWT_SECRET: process.env.JWT_SECRET } })
 * \`\`\`
 */
export async function build (
  { db: given, env = process.env, fastify = {} }: BuildOptions = {}
): Promise<FastifyInstance> {
  const { secret, open } = accessOf(env)
  const requestTimeout = 10_000
  const app = Fastify({
__FASTIFY_OPTIONS__
  })
__DATABASE__
  // Whoever creates a database closes it; a database passed in belongs to the caller.
  if (given === undefined) app.addHook('onClose', async () => await db.destroy())
  let methods: readonly ViewsetMethod[] | undefined
  let protectedMethods: readonly ViewsetMethod[] = []
  if (secret !== undefined) {
    // Imported only here: @fastify/jwt is needed only to verify tokens (npm install @fastify/jwt).
    const { default: fastifyJwt } = await import('@fastify/jwt')
    await app.register(fastifyJwt, { secret, verify: { algorithms: ['HS256'], requiredClaims: ['exp'] } })
    protectedMethods = writeMethods
    app.log.info('JWT_SECRET is set: writes need a bearer token (HS256, with exp)')
  } else if (open) {
    app.log.warn('JWT_SECRET is not set and the code was generated with --writable: anyone may write')
  } else {
    methods = ['LIST', 'GET']
    app.log.info('JWT_SECRET is not set: serving reads only (LIST, GET); set it to serve writes to token holders')
  }
  // The docs first: they collect the routes registered after them.
  await app.register(viewsetDocs, { title: 'API', version: '1.0.0' })
  await registerAll(app, db, { ...(methods === undefined ? {} : { methods }), protectedMethods })
  return app
}

/** Listens on HOST:PORT (default 127.0.0.1:3000) and closes cleanly on SIGINT and SIGTERM. */
async function main (): Promise<void> {
  const app = await build({ fastify: { logger: true } })
  await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void app.close()
    })
  }
}

// Run as a script (npx tsx server.ts), not when imported for build().
const script = process.argv[1]
if (script !== undefined && import.meta.url === pathToFileURL(realpathSync(script)).href) {
  main().catch((error: unknown) => {
    console.error(\`cannot start: \${error instanceof Error ? error.message : String(error)}\`)
    process.exit(1)
  })
}
`

/**
 * server.ts: `build()`, a production-shaped app (the README's Production bounds; writes need a JWT when
 * JWT_SECRET is set, and are not served without it unless generated with `--writable`), and, run as a
 * script (`npx tsx server.ts`), a server with the docs at /docs and every table served.
 */
export function writeServer ({ url, writable }: ServerSettings): string {
  const database = url === undefined
    ? '  // DATABASE_URL (from the environment or .env), as createDatabase reads it.\n' +
      '  const db = given ?? createDatabase<DB>(env.DATABASE_URL)'
    : `  const db = given ?? createDatabase<DB>(env.DATABASE_URL ?? ${literal(url)})`
  // Functions as replacements: a URL's `$&` or `$'` must stay text.
  return template
    .replace('__WRITABLE__', () => String(writable))
    .replace('__FASTIFY_OPTIONS__', () => fastifyOptions)
    .replace('__DATABASE__', () => database)
}
