// What every example shares: migrations kept in code, the database an app owns, and how a server starts.
import Fastify from 'fastify'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import * as kysely from 'kysely'
import { PostgresAdapter, sql } from 'kysely'
import type { Kysely, Migration, Migrator } from 'kysely'
import { createDatabase, viewsetFrameworkErrors } from 'fastify-viewsets'

export interface MigrateOptions {
  /** Kysely's migration table (default `kysely_migration`), so that examples can share one database. */
  tableName?: string
}

/** Kysely's Migrator: at the root of 'kysely' up to 0.28, in 'kysely/migration' from 0.29 (CI runs both). */
async function migratorClass (): Promise<typeof Migrator> {
  if ('Migrator' in kysely) return kysely.Migrator
  const specifier = 'kysely/migration' // a variable: Kysely 0.28, which type-checks this file, has no such entry
  return ((await import(specifier)) as { Migrator: typeof Migrator }).Migrator // 0.29's own export of the same class
}

/** Brings a database up to date with migrations kept in code; throws with the failing migration's error. */
export async function migrate (
  db: Kysely<any>,
  migrations: Record<string, Migration>,
  { tableName }: MigrateOptions = {}
): Promise<void> {
  // Kysely looks for its migration table in every schema; on PostgreSQL, pin it to the current
  // one, or a kysely_migration table in another schema would be taken for ours.
  const schema =
    db.getExecutor().adapter instanceof PostgresAdapter
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
      : undefined
  const migrator = new (await migratorClass())({
    db,
    provider: { getMigrations: async () => migrations },
    ...(tableName === undefined ? {} : { migrationTableName: tableName, migrationLockTableName: `${tableName}_lock` }),
    ...(schema === undefined ? {} : { migrationTableSchema: schema }),
  })
  const { error } = await migrator.migrateToLatest()
  if (error !== undefined) throw error
}

/** Options of every example's `build()`. */
export interface BuildOptions<DB> {
  /** A database to use; by default one is created from DATABASE_URL (or ./base.db) and closed with the app. */
  db?: Kysely<DB>
  fastify?: FastifyServerOptions
}

/**
 * The time bounds every example's server sets; Fastify's defaults are 0 (no bound), so that a client
 * trickling a body a byte at a time would hold a connection for as long as it likes.
 */
export const serverTimeouts = Object.freeze({
  /** Receiving a whole request, headers and body (1 MiB at most by Fastify's `bodyLimit`), in ms. */
  requestTimeout: 10_000,
  /**
   * A socket with no traffic either way is closed after this, in ms. Longer than the longest answer
   * can take: createDatabase's statementTimeout (30 s) plus its connectionTimeout (5 s).
   */
  connectionTimeout: 60_000,
  /** How often Node looks for requests past requestTimeout, in ms (Node's default, 30 s, would let one overrun it by
   * that much). */
  connectionsCheckingInterval: 2_000,
})

/** A Fastify instance with the examples' time bounds and problem+json URL errors; `options` may override any of them.
 * */
export function exampleServer (options: FastifyServerOptions = {}): FastifyInstance {
  const requestTimeout = options.requestTimeout ?? serverTimeouts.requestTimeout
  return Fastify({
    requestTimeout,
    connectionTimeout: serverTimeouts.connectionTimeout,
    // Fastify answers malformed percent-encoding and over-long path parameters before routing, with
    // its own JSON body; this answers them as the documented problem+json 400 and 414 instead.
    frameworkErrors: viewsetFrameworkErrors,
    ...options,
    // Fastify sets requestTimeout after Node's server exists, leaving its headersTimeout at 60 s; Node
    // then did not cut a request at requestTimeout (measured: a trickled body went on 20 s past 0.5 s).
    // Given at creation, headersTimeout no longer than requestTimeout makes Node enforce it.
    http: {
      connectionsCheckingInterval: serverTimeouts.connectionsCheckingInterval,
      headersTimeout: Math.min(60_000, requestTimeout),
    },
  })
}

/** A Fastify app and its database, migrated; a database the app creates is closed with it. */
export async function exampleApp<DB> (
  { db: given, fastify = {} }: BuildOptions<DB>,
  up: (db: Kysely<DB>) => Promise<void>
): Promise<{ app: FastifyInstance; db: Kysely<DB> }> {
  const db = given ?? createDatabase<DB>()
  const app = exampleServer(fastify)
  // Whoever creates a database closes it; a database passed in belongs to the caller.
  if (given === undefined) {
    app.addHook('onClose', async () => {
      await db.destroy()
    })
  }
  await up(db)
  return { app, db }
}

/** Listens on HOST:PORT (default 127.0.0.1:3000), logs where /docs is, and closes cleanly on SIGINT/SIGTERM. */
export async function serve (
  build: (options: { fastify: FastifyServerOptions }) => Promise<FastifyInstance>,
  hint?: (origin: string) => string
): Promise<void> {
  let app: FastifyInstance
  try {
    app = await build({ fastify: { logger: { level: process.env.LOG_LEVEL ?? 'info' } } })
  } catch (error) {
    // A misconfiguration (a missing or published JWT_SECRET, an unreachable database) is a message, not a stack trace.
    console.error(`cannot start: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }
  const port = Number(process.env.PORT ?? 3000)
  const host = process.env.HOST ?? '127.0.0.1'
  await app.listen({ port, host })
  const origin = `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`
  app.log.info(`Swagger UI: ${origin}/docs`)
  if (hint !== undefined) app.log.info(hint(origin))
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void app.close().then(() => process.exit(0))
    })
  }
}
