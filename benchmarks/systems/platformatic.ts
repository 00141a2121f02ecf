import Fastify from 'fastify'
import type { FastifyPluginAsync } from 'fastify'
import sqlMapper from '@platformatic/sql-mapper'
import sqlOpenapi from '@platformatic/sql-openapi'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { etagCostOnRaw, naiveOnce, ruledOnRaw, rulesOnOurs } from './hand-written.js'

// The closest peer: Platformatic DB's mapper and its generated REST routes, over the same tables.
// Its URLs are its own (`where.authorId.eq=`, `orderby.year=desc`, PUT as partial update). It sends no
// ETag, so its GET does less work than the others'.

export async function build (target: DatabaseTarget): Promise<SystemServer> {
  const app = Fastify({ logger: false })
  await app.register(sqlMapper as unknown as FastifyPluginAsync<Record<string, unknown>>, {
    connectionString: target.kind === 'sqlite' ? `sqlite://${target.file}` : target.url,
    autoTimestamp: false,
    poolSize: 10,
  })
  await app.register(sqlOpenapi as unknown as FastifyPluginAsync, {})
  return {
    app,
    unsupported: {
      eager: 'sql-openapi has no embedding of relations in REST (only nested routes)',
      'or-filter': 'sql-openapi has no OR of two conditions on a field in REST (only `in`)',
      aggregate: 'sql-openapi has no grouped sums in REST (a count only)',
      'patch-many': 'not wired here: the scenario compares the library with the same UPDATE written by hand',
      'eager-n1': naiveOnce,
      ...etagCostOnRaw,
      ...rulesOnOurs,
      ...ruledOnRaw,
      'nested-post': 'sql-openapi has no nested writes in REST',
    },
  }
}
