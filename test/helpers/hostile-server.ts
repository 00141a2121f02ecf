/**
 * A server process for the stress tests: the items viewset over `HOSTILE_DATABASE_URL`, listening on
 * 127.0.0.1 on a free port that it reports to its parent over IPC. Several of them may share one
 * database (SQLite file or PostgreSQL schema), as the processes of a cluster do.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { TestContext } from 'node:test'
import Fastify from 'fastify'
import { createDatabase, createViewset } from 'fastify-viewsets'
import { Item } from './items.js'
import type { ItemsDB } from './items.js'

/** The items viewset with the query features the load exercises. */
export async function itemsServer (url: string) {
  const db = createDatabase<ItemsDB>(url)
  const app = Fastify({ logger: false })
  app.addHook('onClose', async () => { await db.destroy() })
  await app.register(createViewset({
    db,
    table: 'items',
    schema: Item,
    searchFields: ['name', 'description'],
    orderingFields: ['name', 'price'],
    filterFields: { price: ['gte', 'lte'], in_stock: ['eq'] },
  }), { prefix: '/items' })
  return app
}

/** A running server process and its port. */
export interface ServerProcess {
  child: ChildProcess
  port: number
  pid: number
}

/** Starts a server process on `url`; the test stops it when it ends. */
export async function startServerProcess (t: TestContext, url: string): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--expose-gc', '--conditions=source', '--import', 'tsx', fileURLToPath(import.meta.url)], {
    env: { ...process.env, HOSTILE_DATABASE_URL: url },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  t.after(async () => { await stopServerProcess(child) })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { port: number }) => { resolve(message.port) })
    child.once('exit', (code) => reject(new Error(`server process exited with ${String(code)} before listening`)))
  })
  return { child, port, pid: child.pid as number }
}

/** The heap of a server process in bytes, right after a full garbage collection. */
export async function heapAfterGc (server: ServerProcess): Promise<number> {
  const answer = new Promise<number>((resolve) => server.child.once('message', (message: { heapUsed: number }) => { resolve(message.heapUsed) }))
  server.child.send('gc')
  return await answer
}

/** Asks a server process to close (it finishes in-flight requests and destroys its pool) and waits for it to exit. */
export async function stopServerProcess (child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000)
  const code = await exited
  clearTimeout(timer)
  return code
}

const url = process.env.HOSTILE_DATABASE_URL
if (process.send !== undefined && url !== undefined && process.argv[1] === fileURLToPath(import.meta.url)) {
  const app = await itemsServer(url)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  process.send({ port: typeof address === 'object' && address !== null ? address.port : 0 })
  const stop = () => { void app.close().then(() => process.exit(0), () => process.exit(1)) }
  process.on('message', (message) => {
    if (message !== 'gc') return
    globalThis.gc?.()
    process.send?.({ heapUsed: process.memoryUsage().heapUsed })
  })
  process.once('SIGTERM', stop)
  process.once('disconnect', stop)
}
