import type { FastifyReply, FastifyRequest } from 'fastify'
import { sql } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { Eventually } from '../execution/eventually.js'
import { currentCancellation, withCancellation } from '../execution/cancellation.js'
import type { AnyDatabase } from '../sql.js'
import type { ReplicaPlan } from './replica-options.js'

// Which database a read goes to: `readDb`, the replica, unless the client wrote within its read-after-write window
// (a cookie the write's response sets, so any process honours it), or the replica lags past `maxLag`, or it failed
// to answer within `retryAfter`. Then `db`, the primary, which always holds the latest rows.

/** The cookie a write's response sets: the time (ms since the epoch) until which its client reads from `db`. */
export const readAfterWriteCookie = 'viewset-read-after-write'

const cookiePattern = new RegExp(`(?:^|;\\s*)${readAfterWriteCookie}=(\\d{1,16})(?:;|$)`)

/** A replica's state in this process, shared by the viewsets reading it: its lag, measured once per interval. */
class ReplicaHealth {
  lag = 0
  /** Until when the replica is not asked (it failed to answer); 0 while it answers. */
  downUntil = 0
  down = false
  #checkedAt = -Infinity
  #checking = false
  readonly #primary: AnyDatabase
  readonly #replica: AnyDatabase
  readonly #dialect: ViewsetDialect
  readonly #plan: ReplicaPlan

  constructor (primary: AnyDatabase, replica: AnyDatabase, dialect: ViewsetDialect, plan: ReplicaPlan) {
    this.#primary = primary
    this.#replica = replica
    this.#dialect = dialect
    this.#plan = plan
  }

  /** Whether reads may go to the replica now; starts a measure (not awaited) when the last one is old enough. */
  usable (maxLag: number, now: number): boolean {
    if (!this.#checking && now - this.#checkedAt >= this.#plan.checkInterval && now >= this.downUntil) {
      this.#checking = true
      // Outside the request that happened to start it: its client hanging up must not cancel the check.
      void withCancellation(undefined, async () => { await this.#measure() })
    }
    return !this.down && this.lag <= maxLag
  }

  /** The replica failed to answer: reads go to the primary until a measure after `retryAfter` succeeds. */
  failed (now: number): void {
    this.down = true
    this.downUntil = now + this.#plan.retryAfter
  }

  async #measure (): Promise<void> {
    const { replication } = this.#dialect
    try {
      if (replication === undefined) await sql`select 1`.execute(this.#replica)
      this.lag = replication === undefined ? 0 : await replication.lag(this.#primary, this.#replica)
      this.down = false
    } catch (error) {
      // A replica that answers but cannot say its lag (no privilege to read its status) is served as it is.
      const fault = this.#dialect.classify(error)?.kind
      if (fault === 'unavailable' || fault === 'timeout') this.failed(Date.now())
      else this.down = false
    } finally {
      this.#checkedAt = Date.now()
      this.#checking = false
    }
  }
}

const healthOf = new WeakMap<AnyDatabase, ReplicaHealth>()

/**
 * Chooses the database of each read of one viewset: `readerOf(request)`, decided once per request so that its
 * rows and their relations come from one database; `wrote(reply)` opens a read-after-write window.
 *
 * @example
 * ```ts
 * const rows = await resource.list(routing.readerOf(request), query, scope)
 * ```
 */
export class ReadRouting {
  readonly #primary: AnyDatabase
  readonly #replica: AnyDatabase
  readonly #plan: ReplicaPlan | undefined
  readonly #health: ReplicaHealth | undefined
  readonly #chosen = new WeakMap<FastifyRequest, AnyDatabase>()

  constructor (primary: AnyDatabase, replica: AnyDatabase, dialect: ViewsetDialect, plan: ReplicaPlan | undefined) {
    this.#primary = primary
    this.#replica = replica
    this.#plan = replica === primary ? undefined : plan
    if (this.#plan === undefined) return
    const shared = healthOf.get(replica) ?? new ReplicaHealth(primary, replica, dialect, this.#plan)
    healthOf.set(replica, shared)
    this.#health = shared
  }

  /** Whether reads are routed at all: a `readDb` other than `db`. */
  get routed (): boolean {
    return this.#health !== undefined
  }

  /** The database this request reads from (a bound function: contexts hand it on). */
  readonly readerOf = (request: FastifyRequest): AnyDatabase => {
    if (this.#health === undefined || this.#plan === undefined) return this.#replica
    const chosen = this.#chosen.get(request)
    if (chosen !== undefined) return chosen
    const now = Date.now()
    const usable = this.#health.usable(this.#plan.maxLag, now) && !this.#wroteRecently(request, now)
    const reader = usable ? this.#replica : this.#primary
    this.#chosen.set(request, reader)
    return reader
  }

  /** Whether the request's client wrote within its window: a forged cookie only costs it reads on the primary. */
  #wroteRecently (request: FastifyRequest, now: number): boolean {
    const cookie = request.headers.cookie
    if (cookie === undefined || this.#plan?.readAfterWrite === 0) return false
    const until = cookiePattern.exec(cookie)?.[1]
    return until !== undefined && Number(until) > now
  }

  /** Opens the read-after-write window of the client that a write answered: a cookie for the whole site. */
  wrote (reply: FastifyReply): void {
    const window = this.#plan?.readAfterWrite ?? 0
    if (window === 0 || reply.statusCode >= 400) return
    const seconds = Math.ceil(window / 1000)
    const until = Date.now() + window
    reply.header('set-cookie', `${readAfterWriteCookie}=${until}; Max-Age=${seconds}; Path=/; HttpOnly; SameSite=Lax`)
  }

  /**
   * Runs a read (`run` calls `readerOf(request)`); when it read the replica and the replica failed to answer, marks it
   * down and runs it again on the primary, so that a replica down never answers 503 on its own.
   */
  withFallback<T> (
    request: FastifyRequest,
    isUnavailable: (error: unknown) => boolean,
    run: () => Eventually<T>
  ): Eventually<T> {
    if (this.#health === undefined) return run()
    const context = currentCancellation()
    const again = (error: unknown): Eventually<T> => {
      if (this.#chosen.get(request) !== this.#replica || !isUnavailable(error)) throw error
      this.#health?.failed(Date.now())
      this.#chosen.set(request, this.#primary)
      return withCancellation(context, run)
    }
    try {
      const result = run()
      return result instanceof Promise ? result.catch(again) : result
    } catch (error) {
      return again(error)
    }
  }
}
