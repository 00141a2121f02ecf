import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Generated } from 'kysely'
import { createViewset, viewsetDocs } from 'fastify-viewsets'
import { exampleApp } from '../shared.js'
import type { BuildOptions } from '../shared.js'
import { migrate } from './migrations.js'

export const Item = Type.Object(
  {
    id: Type.Optional(Type.Integer({ readOnly: true })),
    name: Type.String({ minLength: 1, maxLength: 255 }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
    price: Type.Optional(Type.Number({ minimum: 0 })),
    created_at: Type.Optional(Type.String({ readOnly: true, format: 'date-time' })),
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
    created_at: Generated<string>
  }
}

/** Builds the example app without listening, so tests can inject requests into it. */
export async function build (options: BuildOptions<DB> = {}): Promise<FastifyInstance> {
  const { app, db } = await exampleApp(options, migrate)
  await app.register(viewsetDocs, { title: 'Shop API', version: '1.0.0' })
  // Items are upserted by name: POST with Prefer: resolution=merge-duplicates updates the item of that name.
  await app.register(createViewset({ db, table: 'items', schema: Item, tags: ['items'], conflictFields: ['name'] }), {
    prefix: '/items',
  })
  return app
}
