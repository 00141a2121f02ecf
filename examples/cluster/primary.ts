import cluster from 'node:cluster'
import type { Worker } from 'node:cluster'
import { availableParallelism } from 'node:os'
import { MysqlAdapter, PostgresAdapter, sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase } from 'fastify-viewsets'
import { migrate } from '../basic/migrations.js'
import type { WorkerMessage } from './worker.js'

/** Connections the server accepts in all (`max_connections`), or undefined for SQLite. */
async function maxConnections (db: Kysely<any>): Promise<number | undefined> {
  const adapter = db.getExecutor().adapter
  if (adapter instanceof PostgresAdapter) {
    const { rows } = await sql<{ max: string }>`select current_setting('max_connections') as max`.execute(db)
    return Number(rows[0]?.max)
  }
  if (adapter instanceof MysqlAdapter) {
    const { rows } = await sql<{ max: number }>`select @@max_connections as max`.execute(db)
    return Number(rows[0]?.max)
  }
  return undefined
}

/**
 * The pool size of each worker: POOL_SIZE if set, else 10, lowered so that every worker's pool
 * together stays under 80% of max_connections (the rest is for migrations, admin and other clients).
 */
export function poolSizeFor (workers: number, max: number | undefined, requested?: number): number {
  if (requested !== undefined) return requested
  if (max === undefined) return 10
  return Math.max(1, Math.min(10, Math.floor((max * 0.8) / workers)))
}

/** Migrates once, then forks the workers and replaces any that dies, until SIGINT or SIGTERM. */
export async function runPrimary (): Promise<void> {
  const workers = Number(process.env.WORKERS ?? availableParallelism())
  // Migrations run here once, so that workers start on an up-to-date schema without racing each other.
  const db = createDatabase<any>()
  await migrate(db)
  const max = await maxConnections(db)
  await db.destroy()
  const poolSize = poolSizeFor(
    workers,
    max,
    process.env.POOL_SIZE === undefined ? undefined : Number(process.env.POOL_SIZE)
  )
  const budget = max === undefined ? '' : ` of max_connections ${max}`
  console.log(`primary ${process.pid}: ${workers} workers × ${poolSize} connections = ${workers * poolSize}${budget}`)
  if (max !== undefined && workers * poolSize > max) {
    console.warn('warning: the pools can ask for more connections than the server accepts; lower WORKERS or POOL_SIZE')
  }

  let stopping = false
  const fork = (): Worker => {
    const worker = cluster.fork({ POOL_SIZE: String(poolSize) })
    worker.on('message', (message: WorkerMessage) => {
      console.log(`worker ${worker.process.pid} listening on ${message.address}`)
      // When a supervisor (such as the cluster test) started this primary, tell it where the workers are.
      process.send?.({ ...message, pid: worker.process.pid })
    })
    return worker
  }
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return
    console.error(`worker ${worker.process.pid} died (${signal ?? code}); starting another`)
    fork()
  })
  for (let i = 0; i < workers; i++) fork()

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      stopping = true
      const running = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined)
      let left = running.length
      if (left === 0) process.exit(0)
      for (const worker of running) {
        worker.once('exit', () => {
          if (--left === 0) process.exit(0)
        })
        worker.process.kill('SIGTERM')
      }
    })
  }
}
