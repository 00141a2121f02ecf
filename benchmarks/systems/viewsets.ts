import Fastify from 'fastify'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'
import { Book, BookWithRelations, VersionedBook } from '../data.js'
import type { BenchDB } from '../data.js'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { naiveOnce } from './hand-written.js'

// This library over `createDatabase`: the plain books viewset, one that eager-loads relations, and
// one over versioned_books whose ETag is its version column (the GET without a hash).

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

/** The viewsets of the benchmark over a Kysely instance, however it was made; returns the scenarios it cannot serve. */
export async function registerViewsets (app: FastifyInstance, db: Kysely<BenchDB>): Promise<SystemServer['unsupported']> {
  const unsupported: SystemServer['unsupported'] = {
    'eager-n1': naiveOnce,
    'get-untagged': 'a viewset always sends an ETag on GET: its cost is GET by id against the versionField row',
  }
  await app.register(createViewset({
    db,
    table: 'books',
    schema: Book,
    methods: ['LIST', 'GET', 'POST', 'PATCH', 'DELETE'],
    filterFields: { author_id: ['eq'] },
    orderingFields: ['id', 'title', 'year', 'price'],
  }), { prefix: '/books' })

  await app.register(createViewset({
    db,
    table: 'versioned_books',
    schema: VersionedBook,
    methods: ['GET'],
    versionField: 'version',
  }), { prefix: '/versioned-books' })

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
  return unsupported
}

export async function build (target: DatabaseTarget): Promise<SystemServer> {
  const db = createDatabase<BenchDB>(databaseUrl(target))
  const app = Fastify({ logger: false })
  app.addHook('onClose', async () => { await db.destroy() })
  const unsupported = await registerViewsets(app, db)
  return { app, unsupported }
}
