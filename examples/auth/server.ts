import { config as loadDotenv } from 'dotenv'
import { build } from './app.js'

loadDotenv({ quiet: true })

let app
try {
  app = await build({ fastify: { logger: { level: process.env.LOG_LEVEL ?? 'info' } } })
} catch (error) {
  // A missing JWT_SECRET in production is a message for the operator, not a stack trace.
  console.error(`examples/auth cannot start: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
}
const port = Number(process.env.PORT ?? 3000)
const host = process.env.HOST ?? '127.0.0.1'
await app.listen({ port, host })
const origin = `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`
app.log.info(`Swagger UI: ${origin}/docs (Authorize with ${process.env.DEMO_USERNAME ?? 'demo'} / the DEMO_PASSWORD)`)

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => { void app.close().then(() => process.exit(0)) })
}
