import { ViewsetErrors } from '../errors.js'
import { currentCancellation, withCancellation } from './cancellation.js'
import type { CancellationContext } from './cancellation.js'
import { bulkheadChannel } from '../observability/channels.js'
import type { BulkheadEvent } from '../observability/channels.js'
import type { PoolLending } from '../dialect/shared/connection.js'

// A bulkhead: heavy statements (cost-class.ts) may hold at most `capacity` of a pool's connections, so that
// however many clients send the most expensive request a key lookup still finds a connection. The rest wait
// in a bounded queue, each at most `wait` milliseconds; past either bound the statement answers 503 at once
// rather than queueing forever. A waiter whose client hangs up leaves the queue at once. Given the pool's figures
// (lendFrom), a heavy statement also waits here until the pool has a connection nobody waits for: queued in the
// pool's own first-come queue, it would take the next free connection ahead of the key lookups behind it, and each
// heavy statement that got it held it for seconds (benchmarks/analysis.md, the PostgreSQL attack).

/** A bulkhead's bounds. */
export interface BulkheadLimits {
  /** Its name on the channel. */
  readonly name: string
  /** How many heavy statements may run at once (at least 1). */
  readonly capacity: number
  /** How many may wait for a slot; past it, 503 `FST_VIEWSET_UNAVAILABLE`. */
  readonly queueBound: number
  /** Milliseconds one may wait for a slot before 503 (0: no limit but the queue's). */
  readonly wait: number
  /** The error of a wait past `wait` (default: FST_VIEWSET_UNAVAILABLE). */
  readonly waitError?: () => Error
}

interface Waiter {
  readonly admit: () => void
}

/**
 * Admits at most `capacity` heavy statements at a time, queues at most `queueBound` more.
 *
 * @example
 * ```ts
 * const bulkhead = new Bulkhead({ name: 'postgres', capacity: 9, queueBound: 50, wait: 5000 })
 * const rows = await bulkhead.run(async () => await db.executeQuery(count))
 * ```
 */
export class Bulkhead {
  readonly #limits: BulkheadLimits
  readonly #queue: Waiter[] = []
  #running = 0
  /** The pool's connections free of waiters (lendFrom); without it, every slot may go to the pool's queue. */
  #free: () => number = () => Infinity

  constructor (limits: BulkheadLimits) {
    this.#limits = { ...limits, capacity: Math.max(1, Math.floor(limits.capacity)) }
  }

  /** Heavy statements holding a slot, and waiting for one. */
  get load (): { readonly running: number; readonly queued: number } {
    return { running: this.#running, queued: this.#queue.length }
  }

  /**
   * Reads the pool's free connections from now on: a slot is taken only with one free, and the queue is looked at
   * again each time a connection goes back (once the pool has handed it to its own waiters).
   */
  lendFrom ({ free, onRelease }: PoolLending): void {
    this.#free = free
    // Every statement of the pool releases a connection: only one with heavy statements waiting costs a turn.
    onRelease(() => {
      if (this.#queue.length > 0) setImmediate(() => { this.#drain() })
    })
  }

  /** Runs `work` once a slot is free, and frees the slot when it settles. Rejects with a 503 past the bounds. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    // The request's context, which an await loses: its statement must still be cancellable once admitted.
    const context = currentCancellation()
    const release = await this.acquire()
    try {
      return await withCancellation(context, work)
    } finally {
      release()
    }
  }

  /**
   * Takes a slot, once one is free, and answers the function that gives it back (once; later calls do nothing):
   * for work whose slot outlives its answer (a reader thread that runs on after its request timed out).
   */
  async acquire (): Promise<() => void> {
    if (this.#running < this.#limits.capacity && this.#queue.length === 0 && this.#free() > 0) this.#running++
    else await this.#wait(currentCancellation())
    let held = true
    return () => {
      if (!held) return
      held = false
      this.#release()
    }
  }

  /** Waits for a slot, which the releasing statement hands over (the count of running ones stays the same). */
  async #wait (context: CancellationContext): Promise<void> {
    const { queueBound, wait } = this.#limits
    if (this.#queue.length >= queueBound) {
      this.#publish('rejected')
      throw new ViewsetErrors.Unavailable()
    }
    if (context?.gone === true) throw new ViewsetErrors.Unavailable()
    await new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined
      const leave = (event: 'timeout' | 'abandoned', error: Error): void => {
        const at = this.#queue.indexOf(waiter)
        if (at === -1) return
        this.#queue.splice(at, 1)
        context?.running.delete(gone)
        this.#publish(event)
        reject(error)
      }
      const gone = (): void => { leave('abandoned', new ViewsetErrors.Unavailable()) }
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(timer)
          context?.running.delete(gone)
          resolve()
        },
      }
      this.#queue.push(waiter)
      context?.running.add(gone)
      if (wait > 0) {
        const error = this.#limits.waitError ?? (() => new ViewsetErrors.Unavailable())
        timer = setTimeout(() => { leave('timeout', error()) }, wait)
      }
      this.#publish('queued')
    })
  }

  #release (): void {
    this.#running--
    this.#drain()
  }

  /** Admits waiters while a slot and a pool connection are free (each admitted one takes its connection at once). */
  #drain (): void {
    let free = this.#free()
    while (this.#queue.length > 0 && this.#running < this.#limits.capacity && free > 0) {
      const next = this.#queue.shift()
      if (next === undefined) return
      this.#running++
      free--
      next.admit()
      this.#publish('admitted')
    }
  }

  #publish (event: BulkheadEvent['event']): void {
    if (!bulkheadChannel.hasSubscribers) return
    const { name, capacity, queueBound } = this.#limits
    const dialect = name === 'sqlite-readers' ? 'sqlite' : name
    const queued = this.#queue.length
    const message = {
      bulkhead: name, dialect, event, depth: queued, running: this.#running, queued, capacity, queueBound,
    } satisfies BulkheadEvent
    bulkheadChannel.publish(message)
  }
}
