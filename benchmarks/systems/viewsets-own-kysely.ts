import Fastify from 'fastify'
import { createViewset, withPreparedStatements } from 'fastify-viewsets'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { usersKysely } from './connections.js'
import { registerViewsets } from './viewsets-app.js'

// This library over a Kysely instance the user built (`new Kysely({ dialect: new SqliteDialect(...) })`,
// `new PostgresDialect({ pool })`), as most teams already have one: the same viewsets as `viewsets`, after
// the README's one line, `withPreparedStatements(db, handle)`, which gives it createDatabase's prepared path.

export async function build (target: DatabaseTarget): Promise<SystemServer> {
  const users = usersKysely(target)
  const db = withPreparedStatements(users.db, users.handle)
  const app = Fastify({ logger: false })
  app.addHook('onClose', async () => { await db.destroy() })
  return { app, ...await registerViewsets(app, db, { createViewset }) }
}
