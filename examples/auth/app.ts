import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Expression, ExpressionBuilder, Generated, Kysely, SqlBool, Updateable } from 'kysely'
import { createDatabase, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { RowContext, ScopedMethod, ViewsetMethod, WriteMethod } from 'fastify-viewsets'
import { exampleServer } from '../shared.js'
import { authConfig } from './config.js'
import { jwtOptions } from './jwt.js'
import { migrate } from './migrations.js'
import { passwordGrant } from './token.js'
import type { LoginLimit } from './token.js'
import { demoUsers } from './users.js'

export const Item = Type.Object(
  {
    id: Type.Optional(Type.Integer({ readOnly: true })),
    name: Type.String({ minLength: 1, maxLength: 255 }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
    price: Type.Optional(Type.Number({ minimum: 0 })),
    owner: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        readOnly: true,
        description: "Who created the item (the token's subject)",
      })
    ),
  },
  { description: 'An item for sale' }
)
export type Item = Static<typeof Item>

export interface DB {
  items: {
    id: Generated<number>
    name: string
    description: string | null
    price: Generated<number>
    owner: string | null
  }
}

/** Reading is open; every write needs a token from POST /token. */
export const protectedMethods: readonly ViewsetMethod[] = ['POST', 'PUT', 'PATCH', 'DELETE']

/** Lifetime of an access token, in seconds. */
export const tokenLifetime = 3600

/** LIST's own parameter: `?mine=true` narrows the list to the caller's items, with search, filters and paging kept. */
export const ItemQuery = Type.Object({
  mine: Type.Optional(
    Type.Boolean({ description: 'Only the items the caller owns (send a bearer token; without one, none)' })
  ),
})

/**
 * Everyone may read; an item belongs to whoever created it, and only its owner may change or delete it.
 * Two hooks say so, and every generated behaviour (validation, search, count, Link, OpenAPI) stays:
 * `beforeWrite` sets `owner` from the token, and `scope` restricts the rows a request can reach.
 */
class ItemViewset extends Viewset<DB, 'items', typeof Item> {
  static override listQuery = ItemQuery

  // `owner` is read-only in the schema, so a body never sets it: only this does.
  override beforeWrite (values: Updateable<DB['items']>, { token }: RowContext<WriteMethod>): Updateable<DB['items']> {
    return { ...values, owner: token?.sub ?? null }
  }

  // Someone else's item is 404 for PUT, PATCH and DELETE, and the check is part of the UPDATE or DELETE.
  override scope (
    eb: ExpressionBuilder<DB, 'items'>,
    { request, token, method }: RowContext<ScopedMethod>
  ): Expression<SqlBool> | undefined {
    if (method === 'GET') return undefined
    if (method === 'LIST') {
      const { mine } = request.query as Static<typeof ItemQuery> // LIST's query string, validated against listQuery
      return mine === true ? eb('owner', '=', token?.sub ?? null) : undefined
    }
    return eb('owner', '=', token?.sub ?? null)
  }
}

export interface BuildOptions {
  /** A database to use; by default one is created from DATABASE_URL (or ./auth.db) and closed with the app. */
  db?: Kysely<DB>
  /** Where DEMO, JWT_SECRET, DEMO_USERNAME, DEMO_PASSWORD, DATABASE_URL and NODE_ENV are read (default `process.env`).
   * */
  env?: Record<string, string | undefined>
  fastify?: FastifyServerOptions
  /** The limits of POST /token (default 20 per minute per client address, 5 per minute per username). */
  loginLimits?: { perAddress?: LoginLimit; perUsername?: LoginLimit }
}

/**
 * The shared store of the login limits when `REDIS_URL` is set, closed with the app: with several processes,
 * counters in each process would multiply the guesses an attacker gets by the number of processes.
 */
async function loginStore (app: FastifyInstance, env: Record<string, string | undefined>) {
  const url = env.REDIS_URL
  if (url === undefined || url === '') return undefined
  const { Redis } = await import('ioredis')
  // Fail fast while Redis is away: a token request then answers 500 rather than waiting.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: true })
  await redis.connect()
  app.addHook('onClose', async () => {
    await redis.quit()
  })
  return redis
}

/**
 * Builds the example app without listening, so tests can inject requests into it. It rejects,
 * before touching the database, when the settings are not safe (see `authConfig`).
 */
export async function build ({
  db: given,
  env = process.env,
  fastify = {},
  loginLimits = {},
}: BuildOptions = {}): Promise<FastifyInstance> {
  const config = authConfig(env)
  const users = await demoUsers(config.demoUsername, config.demoPassword)
  // Its own SQLite file by default: examples/basic keeps a different `items` table in ./base.db.
  const db =
    given ??
    createDatabase<DB>(env.DATABASE_URL === undefined || env.DATABASE_URL === '' ? 'sqlite:auth.db' : env.DATABASE_URL)
  const app = exampleServer(fastify)
  if (config.demo) {
    app.log.warn(
      `DEMO MODE (DEMO=1): anyone can log in as ${config.demoUsername} with the published password and write. ` +
        'Never expose this server; set JWT_SECRET and DEMO_PASSWORD and drop DEMO=1 for anything real.'
    )
  }
  // Whoever creates a database closes it; a database passed in belongs to the caller.
  if (given === undefined) {
    app.addHook('onClose', async () => {
      await db.destroy()
    })
  }
  await migrate(db)

  // HS256 only, exp/iat/iss/aud required, no token older than its lifetime, no crit header (see jwt.ts).
  await app.register(fastifyJwt, jwtOptions(config.jwtSecret, tokenLifetime))
  // Before any route: @fastify/swagger collects routes as they are added.
  await app.register(viewsetDocs, { title: 'Shop API', version: '1.0.0', tokenUrl: '/token' })
  const redis = await loginStore(app, env)
  await app.register(passwordGrant, { users, expiresIn: tokenLifetime, ...loginLimits, redis })
  const items = new ItemViewset({ db, table: 'items', schema: Item, tags: ['items'], protectedMethods })
  await app.register(items.register(), { prefix: '/items' })
  return app
}
