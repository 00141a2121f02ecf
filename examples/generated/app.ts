// The relations example's database, served by the code `npx fastify-viewsets generate` wrote into db/:
// npx fastify-viewsets generate --url sqlite:base.db --out examples/generated/db --tables
// authors,book_tags,books,publishers,tags
// Compare with examples/relations/app.ts, where the same API is written by hand.
import type { FastifyInstance } from 'fastify'
import { viewsetDocs } from 'fastify-viewsets'
import { migrate } from '../relations/migrations.js'
import { exampleApp } from '../shared.js'
import type { BuildOptions } from '../shared.js'
import type { DB } from './db/db.js'
import { registerAll } from './db/viewsets.js'

/** Builds the example app without listening, so tests can inject requests into it. */
export async function build (options: BuildOptions<DB> = {}): Promise<FastifyInstance> {
  const { app, db } = await exampleApp(options, migrate)
  await app.register(viewsetDocs, { title: 'Library API (generated)', version: '1.0.0' })
  await registerAll(app, db)
  return app
}
