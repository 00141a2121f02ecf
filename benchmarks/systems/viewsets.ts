import Fastify from 'fastify'
import type { FastifyPluginAsync } from 'fastify'
import { createDatabase, createViewset } from 'fastify-viewsets'
import { Book, BookWithRelations } from '../data.js'
import type { BenchDB } from '../data.js'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'

// This library: two viewsets over the same table, the plain one and one that eager-loads relations.

function databaseUrl (target: DatabaseTarget): string {
  return target.kind === 'sqlite' ? `sqlite:${target.file}` : target.url
}

/** Registers a plugin on a scratch app first, so that a feature that has not landed yet marks its scenario n/a. */
async function tryPlugin (plugin: FastifyPluginAsync): Promise<string | undefined> {
  const scratch = Fastify({ logger: false })
  try {
    await scratch.register(plugin, { prefix: '/probe' })
    await scratch.ready()
    return undefined
  } catch (error) {
    return (error as Error).message
  } finally {
    await scratch.close().catch(() => {})
  }
}

export async function build (target: DatabaseTarget): Promise<SystemServer> {
  const db = createDatabase<BenchDB>(databaseUrl(target))
  const app = Fastify({ logger: false })
  app.addHook('onClose', async () => { await db.destroy() })
  const unsupported: SystemServer['unsupported'] = {}

  await app.register(createViewset({
    db,
    table: 'books',
    schema: Book,
    methods: ['LIST', 'GET', 'POST', 'PATCH'],
    filterFields: { author_id: ['eq'] },
    orderingFields: ['id', 'title', 'year', 'price'],
  }), { prefix: '/books' })

  const eager = () => createViewset({
    db,
    table: 'books',
    schema: BookWithRelations,
    methods: ['LIST'],
    relatedConfig: {
      selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } },
      prefetchRelated: { tags: { table: 'tags', through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' } } },
    },
  })
  const failure = await tryPlugin(eager())
  if (failure === undefined) await app.register(eager(), { prefix: '/books-full' })
  else unsupported.eager = `relatedConfig: ${failure}`

  unsupported['eager-n1'] = 'the naive N+1 version is written once, with Kysely'
  return { app, unsupported }
}
