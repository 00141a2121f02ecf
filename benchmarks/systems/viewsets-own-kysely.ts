import Fastify from 'fastify'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { usersKysely } from './connections.js'
import { registerViewsets } from './viewsets.js'

// This library over a Kysely instance the user built (`new Kysely({ dialect: new SqliteDialect(...) })`,
// `new PostgresDialect({ pool })`), as most teams already have one: the same viewsets as `viewsets`.

export async function build (target: DatabaseTarget): Promise<SystemServer> {
  // TODO(issue 18): when lib exports its documented one-line wrapper of a user's Kysely (the prepared-
  // statement path), apply it here and only here: `const db = wrap(usersKysely(target))`.
  const db = usersKysely(target)
  const app = Fastify({ logger: false })
  app.addHook('onClose', async () => { await db.destroy() })
  const unsupported = await registerViewsets(app, db)
  return { app, unsupported }
}
