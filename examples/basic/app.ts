import Fastify from 'fastify'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Generated, Kysely } from 'kysely'
import { createDatabase, createViewset, viewsetDocs } from 'fastify-viewsets'
import { migrate } from './migrations.js'

export const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
  price: Type.Optional(Type.Number({ minimum: 0 })),
  created_at: Type.Optional(Type.String({ readOnly: true, format: 'date-time' })),
}, { description: 'An item for sale' })
export type Item = Static<typeof Item>

export interface DB {
  items: { id: Generated<number>, name: string, description: string | null, price: Generated<number>, created_at: Generated<string> }
}

export interface BuildOptions {
  /** A database to use; by default one is created from DATABASE_URL (or ./base.db) and closed with the app. */
  db?: Kysely<DB>
  fastify?: FastifyServerOptions
}

/** Builds the example app without listening, so tests can inject requests into it. */
export async function build ({ db: given, fastify = {} }: BuildOptions = {}): Promise<FastifyInstance> {
  const db = given ?? createDatabase<DB>()
  const app = Fastify(fastify)
  // Whoever creates a database closes it; a database passed in belongs to the caller.
  if (given === undefined) app.addHook('onClose', async () => { await db.destroy() })
  await migrate(db)
  await app.register(viewsetDocs, { title: 'Shop API', version: '1.0.0' })
  await app.register(createViewset({ db, table: 'items', schema: Item, tags: ['items'] }), { prefix: '/items' })
  return app
}
