import Fastify from 'fastify'
import type { FastifyInstance, FastifyReply, FastifyServerOptions } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Generated, Kysely } from 'kysely'
import { createDatabase, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { CreateRequest, ViewsetMethod, ViewsetToken } from 'fastify-viewsets'
import { authConfig } from './config.js'
import { migrate } from './migrations.js'
import { passwordGrant } from './token.js'
import { demoUsers } from './users.js'

export const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
  price: Type.Optional(Type.Number({ minimum: 0 })),
  owner: Type.Optional(Type.Union([Type.String(), Type.Null()], { readOnly: true, description: 'Who created the item (the token\'s subject)' })),
}, { description: 'An item for sale' })
export type Item = Static<typeof Item>

export interface DB {
  items: { id: Generated<number>, name: string, description: string | null, price: Generated<number>, owner: string | null }
}

/** Reading is open; every write needs a token from POST /token. */
export const protectedMethods: readonly ViewsetMethod[] = ['POST', 'PUT', 'PATCH', 'DELETE']

/** Lifetime of an access token, in seconds. */
export const tokenLifetime = 3600

/** Items whose creator is recorded from the token: what a handler can do with `token`. */
class ItemViewset extends Viewset<DB, 'items', typeof Item> {
  override async createElement (request: CreateRequest<typeof Item>, _reply: FastifyReply, token: ViewsetToken | null) {
    const owner = typeof token?.sub === 'string' ? token.sub : null
    return await this.insert({ ...this.writable(request.body), owner })
  }
}

export interface BuildOptions {
  /** A database to use; by default one is created from DATABASE_URL (or ./auth.db) and closed with the app. */
  db?: Kysely<DB>
  /** Where JWT_SECRET, DEMO_USERNAME, DEMO_PASSWORD, DATABASE_URL and NODE_ENV are read (default `process.env`). */
  env?: Record<string, string | undefined>
  fastify?: FastifyServerOptions
}

/**
 * Builds the example app without listening, so tests can inject requests into it. It rejects,
 * before touching the database, when the settings are not safe (see `authConfig`).
 */
export async function build ({ db: given, env = process.env, fastify = {} }: BuildOptions = {}): Promise<FastifyInstance> {
  const config = authConfig(env)
  const users = await demoUsers(config.demoUsername, config.demoPassword)
  // Its own SQLite file by default: examples/basic keeps a different `items` table in ./base.db.
  const db = given ?? createDatabase<DB>(env.DATABASE_URL === undefined || env.DATABASE_URL === '' ? 'sqlite:auth.db' : env.DATABASE_URL)
  const app = Fastify(fastify)
  // Whoever creates a database closes it; a database passed in belongs to the caller.
  if (given === undefined) app.addHook('onClose', async () => { await db.destroy() })
  await migrate(db)

  // HS256 only: a token naming another algorithm (`none` included) is rejected.
  await app.register(fastifyJwt, {
    secret: config.jwtSecret,
    sign: { algorithm: 'HS256', expiresIn: tokenLifetime },
    verify: { algorithms: ['HS256'] },
  })
  // Before any route: @fastify/swagger collects routes as they are added.
  await app.register(viewsetDocs, { title: 'Shop API', version: '1.0.0', tokenUrl: '/token' })
  await app.register(passwordGrant, { users, expiresIn: tokenLifetime })
  const items = new ItemViewset({ db, table: 'items', schema: Item, tags: ['items'], protectedMethods })
  await app.register(items.register(), { prefix: '/items' })
  return app
}
