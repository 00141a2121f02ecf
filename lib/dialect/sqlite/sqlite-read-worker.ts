import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import type { WorkerReply } from '../../execution/worker-pool.js'
import { cachedStatements, isBetterSqliteDatabase } from './sqlite-prepared.js'
import type { ReaderData, ReadJob } from './sqlite-readers.js'

// One reader of a SQLite file, on a worker thread (sqlite-readers.ts starts it): its own read-only connection,
// which WAL lets read beside the writer, and its own prepared statements. It answers each job with the rows of
// one SELECT, as the main thread's connection would (sqlite-prepared.ts: the same statement cache, the same
// exact 64-bit integers).

function isReaderData (value: unknown): value is ReaderData {
  return typeof value === 'object' && value !== null && 'file' in value && typeof value.file === 'string' &&
    'busyTimeout' in value && typeof value.busyTimeout === 'number'
}

function isReadJob (value: unknown): value is ReadJob {
  return typeof value === 'object' && value !== null && 'sql' in value && typeof value.sql === 'string' &&
    'parameters' in value && Array.isArray(value.parameters) &&
    'oneRow' in value && typeof value.oneRow === 'boolean' &&
    (!('timed' in value) || value.timed === undefined || typeof value.timed === 'boolean')
}

const port = parentPort
if (port === null || !isReaderData(workerData)) throw new Error('fastify-viewsets: a SQLite reader runs as a worker')
const database = new Database(workerData.file, { readonly: true, fileMustExist: true })
database.pragma(`busy_timeout = ${workerData.busyTimeout}`)
if (!isBetterSqliteDatabase(database)) throw new Error('fastify-viewsets: better-sqlite3 has changed its API')
const { prepare } = cachedStatements(database, 256)

/** A property of a thrown value, as text (better-sqlite3's errors carry `code`). */
function property (error: unknown, key: string): string | undefined {
  const value: unknown = typeof error === 'object' && error !== null ? Reflect.get(error, key) : undefined
  return typeof value === 'string' ? value : undefined
}

function answer (job: unknown): WorkerReply {
  if (!isReadJob(job)) return { ok: false, message: 'not a read job', code: undefined }
  try {
    const statement = prepare(job.sql)
    if (!statement.reader) return { ok: false, message: 'a reader runs SELECTs only', code: undefined }
    if (job.timed === true) {
      // A re-check (sqlite-readers.ts): how long the statement takes on this thread, not its rows.
      const start = performance.now()
      statement.all(job.parameters)
      return { ok: true, value: performance.now() - start }
    }
    if (!job.oneRow) return { ok: true, value: statement.all(job.parameters) }
    const row = statement.get(job.parameters)
    return { ok: true, value: row === undefined ? [] : [row] }
  } catch (error) {
    return { ok: false, message: property(error, 'message') ?? String(error), code: property(error, 'code') }
  }
}

port.on('message', (job: unknown) => { port.postMessage(answer(job)) })
