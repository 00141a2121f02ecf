import type { Worker } from 'node:worker_threads'
import { ViewsetErrors } from '../errors.js'
import { Bulkhead } from './bulkhead.js'

// A small bounded pool of worker threads that run jobs off the event loop (SQLite's heavy reads:
// dialect/sqlite/sqlite-readers.ts). A job has a deadline counted from when it was asked for, waiting for a
// worker and starting one included. Past it the job answers 503 FST_VIEWSET_TIMEOUT, and the worker running it
// is terminated and replaced, never reused mid-job: Worker.terminate() stops its JavaScript at once, but a
// native call already running (one better-sqlite3 step) runs to its end before the thread exits (see
// benchmarks/analysis.md#worker-terminate); its slot is free again only then.

/** A worker's answer to one job: its value, or the error it threw, as plain data. */
export type WorkerReply =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly message: string; readonly code: string | undefined }

/** A pool's bounds and how it starts a worker. */
export interface WorkerPoolConfig {
  /** Its name on the `fastify-viewsets:bulkhead` channel. */
  readonly name: string
  /** At most this many workers (at least 1), started on demand. */
  readonly size: number
  /** At most this many jobs wait for a worker; past it, 503 FST_VIEWSET_UNAVAILABLE. */
  readonly queueBound: number
  /** Milliseconds a job may take from when it was asked for (0: no limit). */
  readonly timeout: number
  /** Starts a worker that answers each message with one {@link WorkerReply}. */
  readonly start: () => Worker
}

/** A worker and the job it runs, if any. */
interface Slot {
  readonly worker: Worker
  job: ((reply: WorkerReply | Error) => void) | undefined
}

/** The error a worker sent, with its `code` (SQLite's result code), so the dialect classifies it as its own. */
function replyError (reply: WorkerReply & { ok: false }): Error {
  return Object.assign(new Error(reply.message), reply.code === undefined ? {} : { code: reply.code })
}

/** Whether a message is a {@link WorkerReply}. */
function isReply (message: unknown): message is WorkerReply {
  return typeof message === 'object' && message !== null && 'ok' in message && typeof message.ok === 'boolean'
}

/**
 * Runs jobs on at most `size` worker threads, each job on one worker at a time.
 *
 * @example
 * ```ts
 * const pool = new WorkerPool({ name: 'sqlite-readers', size: 2, queueBound: 50, timeout: 30_000, start })
 * const rows = await pool.run({ sql: 'select count(*) from books', parameters: [] })
 * await pool.close()
 * ```
 */
export class WorkerPool {
  readonly #config: WorkerPoolConfig
  readonly #bulkhead: Bulkhead
  readonly #idle: Slot[] = []
  readonly #all = new Set<Slot>()
  #closed = false

  constructor (config: WorkerPoolConfig) {
    this.#config = config
    this.#bulkhead = new Bulkhead({
      name: config.name,
      capacity: config.size,
      queueBound: config.queueBound,
      wait: config.timeout,
      waitError: () => new ViewsetErrors.Timeout(),
    })
  }

  /** Runs one job on a worker and answers its value; rejects with the worker's error, or a 503 past the bounds. */
  async run (message: unknown): Promise<unknown> {
    if (this.#closed) throw new ViewsetErrors.Unavailable()
    const asked = performance.now()
    const release = await this.#bulkhead.acquire()
    let released = release
    try {
      const { timeout } = this.#config
      const left = timeout === 0 ? Infinity : timeout - (performance.now() - asked)
      if (left <= 0) throw new ViewsetErrors.Timeout()
      const slot = this.#idle.pop() ?? this.#spawn()
      const reply = await new Promise<WorkerReply | Error>((resolve) => {
        const timer = left === Infinity
          ? undefined
          : setTimeout(() => {
            // Abandoned, never reused: its slot is given back only when its thread has exited, once the native
            // step it runs has ended, so that abandoned threads never outnumber the pool.
            released = () => {}
            slot.worker.once('exit', release)
            this.#discard(slot)
            resolve(new ViewsetErrors.Timeout())
          }, left)
        slot.job = (answer) => {
          clearTimeout(timer)
          resolve(answer)
        }
        slot.worker.postMessage(message)
      })
      if (reply instanceof Error) throw reply
      slot.job = undefined
      if (this.#closed) this.#discard(slot)
      else this.#idle.push(slot)
      if (!reply.ok) throw replyError(reply)
      return reply.value
    } finally {
      released()
    }
  }

  #spawn (): Slot {
    const worker = this.#config.start()
    // A pool of idle readers does not keep the process alive.
    worker.unref()
    const slot: Slot = { worker, job: undefined }
    this.#all.add(slot)
    worker.on('message', (message: unknown) => {
      slot.job?.(isReply(message) ? message : new Error('fastify-viewsets: a worker answered an unknown message'))
    })
    const fail = (error: Error): void => {
      this.#discard(slot)
      slot.job?.(error)
      slot.job = undefined
    }
    worker.on('error', fail)
    worker.on('exit', () => { fail(new ViewsetErrors.Unavailable()) })
    return slot
  }

  /** Drops a worker for good: out of the pool, and terminated. */
  #discard (slot: Slot): void {
    if (!this.#all.delete(slot)) return
    const at = this.#idle.indexOf(slot)
    if (at !== -1) this.#idle.splice(at, 1)
    void slot.worker.terminate().catch(() => {})
  }

  /** Terminates every worker; a job still running answers 503. */
  async close (): Promise<void> {
    this.#closed = true
    const workers = [...this.#all].map((slot) => slot.worker)
    for (const slot of [...this.#all]) this.#discard(slot)
    await Promise.all(workers.map(async (worker) => await worker.terminate().catch(() => 0)))
  }
}
