import { build } from './app.js'

const app = await build({ fastify: { logger: { level: process.env.LOG_LEVEL ?? 'info' } } })
const port = Number(process.env.PORT ?? 3000)
const host = process.env.HOST ?? '127.0.0.1'
await app.listen({ port, host })
app.log.info(`Swagger UI: http://${host === '0.0.0.0' ? 'localhost' : host}:${port}/docs`)
app.log.info(`Try: curl 'http://${host === '0.0.0.0' ? 'localhost' : host}:${port}/authors?limit=2'`)

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => { void app.close().then(() => process.exit(0)) })
}
