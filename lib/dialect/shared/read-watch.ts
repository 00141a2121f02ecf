// A connection that gets no answer past its read timeout is half-open (a failover, a partition: no reset, no data),
// and must be given up so the pool opens a new one. pg's own `query_timeout` finds it with a timer per query, and
// each armed timer keeps its query, with every row read so far, out of the young generation: on PostgreSQL's LIST 100
// the rows then made 1.4 MB of every scavenge's survivors and the collector's time tripled (benchmarks/analysis.md,
// "Read timeouts and the young generation"). One timer per connection instead, re-armed only while the connection is
// busy, and nothing allocated per query.

/** What a connection's query wrapper tells its watch. */
export interface ReadWatch {
  /** A query was sent on the connection. */
  start: () => void
  /** A query of the connection has its answer (or its failure). */
  settle: () => void
  /** Whether the connection was given up: a query had no answer for the read timeout. */
  readonly expired: boolean
}

/** Milliseconds between two looks at a busy connection: a quarter of the timeout (100 ms or more). */
function period (timeout: number): number {
  return Math.max(100, Math.ceil(timeout / 4))
}

class ConnectionReadWatch implements ReadWatch {
  readonly #timeout: number
  readonly #expire: () => void
  #busy = 0
  /** When the query now running was sent (or the one before it answered: the connection runs one at a time). */
  #since = 0
  #armed = false
  #expired = false
  #timer: ReturnType<typeof setTimeout> | undefined

  constructor (timeout: number, expire: () => void) {
    this.#timeout = timeout
    this.#expire = expire
  }

  get expired (): boolean {
    return this.#expired
  }

  start (): void {
    if (this.#busy++ === 0) this.#since = performance.now()
    if (!this.#armed) this.#arm()
  }

  settle (): void {
    if (this.#busy > 0) this.#busy--
    this.#since = performance.now()
  }

  #arm (): void {
    this.#armed = true
    if (this.#timer === undefined) {
      // Unreferenced: a watch never keeps the process alive.
      this.#timer = setTimeout(() => { this.#look() }, period(this.#timeout)).unref()
    } else this.#timer.refresh()
  }

  #look (): void {
    this.#armed = false
    if (this.#busy === 0 || this.#expired) return
    if (performance.now() - this.#since < this.#timeout) {
      this.#arm()
      return
    }
    this.#expired = true
    this.#expire()
  }
}

/**
 * Watches one connection's queries: `expire` is called once when a query has had no answer for `timeout`
 * milliseconds, at the next look (a quarter of `timeout`, 100 ms or more, later at most); it should close the
 * connection, which fails the query.
 *
 * @example
 * ```ts
 * const watch = readWatch(31_000, () => { client.connection.stream.destroy() })
 * watch.start(); client.query(text, values, (error, result) => { watch.settle(); callback(error, result) })
 * ```
 */
export function readWatch (timeout: number, expire: () => void): ReadWatch {
  return new ConnectionReadWatch(timeout, expire)
}
