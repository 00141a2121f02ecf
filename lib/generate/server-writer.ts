import { literal } from './naming.js'

/**
 * server.ts: a runnable server (`npx tsx server.ts`) with the docs at /docs and every table served.
 * `url` is the database it was generated from, kept only when it carries no password; otherwise
 * the server reads DATABASE_URL (or .env) like createDatabase does.
 */
export function writeServer (url: string | undefined): string {
  const database = url === undefined
    ? '// DATABASE_URL (from the environment or .env), as createDatabase reads it.\nconst db = createDatabase<DB>()'
    : `const db = createDatabase<DB>(process.env.DATABASE_URL ?? ${literal(url)})`
  return `import Fastify from 'fastify'
import { createDatabase, viewsetDocs } from 'fastify-viewsets'
import type { DB } from './db.js'
import { registerAll } from './viewsets.js'

async function main (): Promise<void> {
  ${database.replaceAll('\n', '\n  ')}
  const app = Fastify({ logger: true })
  app.addHook('onClose', async () => { await db.destroy() })
  // The docs first: they collect the routes registered after them.
  await app.register(viewsetDocs, { title: 'API', version: '1.0.0' })
  await registerAll(app, db)
  await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { void app.close() })
}

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
`
}
