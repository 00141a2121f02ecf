import type { AddressInfo } from 'node:net'
import { createDatabase } from 'fastify-viewsets'
import { build } from '../basic/app.js'
import type { DB } from '../basic/app.js'

/** What a worker tells the primary once it listens. */
export interface WorkerMessage {
  type: 'listening'
  address: string
  port: number
}

/** One stateless process: its own pool over the shared DATABASE_URL, the basic example's app. */
export async function runWorker (): Promise<void> {
  const db = createDatabase<DB>(undefined, { poolSize: Number(process.env.POOL_SIZE ?? 10) })
  const app = await build({ db, fastify: { logger: { level: process.env.LOG_LEVEL ?? 'info' } } })
  // The app does not own a database it was given: close it after the app.
  app.addHook('onClose', async () => { await db.destroy() })
  const port = Number(process.env.PORT ?? 3000)
  // Port 0 in a cluster would hand every worker the same random port; exclusive gives each its own.
  await app.listen({ port, host: process.env.HOST ?? '127.0.0.1', exclusive: port === 0 })
  const { address, port: actual } = app.server.address() as AddressInfo
  const message: WorkerMessage = { type: 'listening', address: `http://${address}:${actual}`, port: actual }
  process.send?.(message)

  // Ctrl-C reaches every process of the group; the primary decides, and stops workers with SIGTERM.
  process.on('SIGINT', () => {})
  process.once('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
}
