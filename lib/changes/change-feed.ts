import { readHistoryAfter } from '../data/history-reader.js'
import type { HistoryTextEntry } from '../data/history-reader.js'
import { matchChanges } from '../data/version-match.js'
import type { MatchedChange, VersionTable } from '../data/version-match.js'
import type { Condition } from '../query/condition.js'
import type { AnyDatabase } from '../sql.js'

// One viewset's feed in one process: it reads the history table by position (on a timer, or woken by PostgreSQL's
// listener) while it has subscribers, and hands each batch of entries to them, evaluated once per group of
// subscribers with the same statement (filters, values and rule parameters). A subscriber behind the feed (a resumed
// stream) catches up on its own first, then joins.

/** Most entries read and evaluated at once. */
const batchSize = 500

/** What the feed asks of one open stream. */
export interface FeedSubscriber {
  /** The subscribers that share one statement per batch have the same key (data/version-match.ts groupKey). */
  readonly group: string
  /** The LIST statement's filters and the caller's row rule. */
  readonly conditions: readonly Condition[]
  /** Adds what its events carry beyond the row (relation fields) to a batch's rows: run once per group. */
  readonly load?: ((changes: readonly MatchedChange[]) => Promise<void>) | undefined
  /** The position of the last entry the stream has been given (its events after it are still to send). */
  position: number
  /** Sends the changes after its position, then moves its position to `upTo`. */
  deliver(changes: readonly MatchedChange[], upTo: number): void
  /** Ends the stream (the feed failed to read for it). */
  end(reason: string): void
}

/** Where a feed reads, and how often. */
export interface FeedSource {
  readonly db: AnyDatabase
  readonly historyTable: string
  readonly versions: VersionTable
  /** Milliseconds between reads. */
  readonly pollInterval: number
  /** Subscribes to the wake-ups of writes (PostgreSQL's listener); returns the unsubscribe. */
  readonly listen?: ((wake: () => void) => () => Promise<void>) | undefined
}

/**
 * A viewset's change feed in this process: see the file's comment. Statements run only while a stream is open.
 *
 * @example
 * ```ts
 * const feed = new ChangeFeed(source)
 * feed.join(subscriber)  // after the stream's headers are sent
 * await feed.close()      // in onClose
 * ```
 */
export class ChangeFeed {
  readonly #source: FeedSource
  readonly #live = new Set<FeedSubscriber>()
  readonly #catching = new Set<FeedSubscriber>()
  /** The position of the last entry read; `undefined` while no stream is open. */
  #position: number | undefined
  #running: Promise<void> | undefined
  #again = false
  #timer: NodeJS.Timeout | undefined
  #unlisten: (() => Promise<void>) | undefined

  constructor (source: FeedSource) {
    this.#source = source
  }

  /** The streams open on this feed. */
  get size (): number {
    return this.#live.size + this.#catching.size
  }

  /** Adds a stream whose events after `subscriber.position` are to be sent. */
  join (subscriber: FeedSubscriber): void {
    if (this.size === 0) this.#start(subscriber.position)
    if (this.#position !== undefined && subscriber.position >= this.#position && this.#running === undefined) {
      this.#live.add(subscriber)
      return
    }
    this.#catching.add(subscriber)
    this.#catchUp(subscriber).catch((error: unknown) => { this.#fail([subscriber], error) })
  }

  /** Removes a stream (it ended). */
  leave (subscriber: FeedSubscriber): void {
    this.#live.delete(subscriber)
    this.#catching.delete(subscriber)
    if (this.size === 0) this.#stop()
  }

  /** Reads now (a write was notified). */
  wake (): void {
    if (this.size === 0) return
    if (this.#running !== undefined) {
      this.#again = true
      return
    }
    this.#running = this.#cycle().finally(() => {
      this.#running = undefined
      if (this.#again) {
        this.#again = false
        this.wake()
      }
    })
  }

  /** Ends every stream and stops reading: the app closes. */
  async close (): Promise<void> {
    for (const subscriber of [...this.#live, ...this.#catching]) subscriber.end('closing')
    this.#stop()
    await this.#running
  }

  #start (position: number): void {
    this.#position = position
    this.#timer = setInterval(() => { this.wake() }, this.#source.pollInterval)
    this.#timer.unref()
    this.#unlisten = this.#source.listen?.(() => { this.wake() })
  }

  #stop (): void {
    clearInterval(this.#timer)
    this.#timer = undefined
    this.#position = undefined
    const unlisten = this.#unlisten
    this.#unlisten = undefined
    unlisten?.().catch(() => {})
  }

  /** One batch of the table's entries after a position (the history's one reader, versions kept as JSON text). */
  #read (after: number, until?: number): Promise<HistoryTextEntry[]> {
    const { db, historyTable, versions } = this.#source
    const source = { historyTable, table: versions.table }
    return readHistoryAfter(db, source, String(after), batchSize, until === undefined ? undefined : String(until))
  }

  /** Reads the entries after the feed's position, batch by batch, and hands them to the live streams. */
  async #cycle (): Promise<void> {
    for (;;) {
      const from = this.#position
      if (from === undefined) return
      let entries: HistoryTextEntry[]
      try {
        entries = await this.#read(from)
      } catch {
        return // the database is away: the next poll reads again
      }
      const last = entries.at(-1)
      if (last === undefined || this.#position !== from) return
      const upTo = Number(last.position)
      await this.#deliver([...this.#live], entries, upTo)
      if (this.#position === from) this.#position = upTo
      if (entries.length < batchSize) return
    }
  }

  /** One statement per group of subscribers for the entries, then each subscriber's events. */
  async #deliver (subscribers: readonly FeedSubscriber[], entries: HistoryTextEntry[], upTo: number): Promise<void> {
    const groups = new Map<string, FeedSubscriber[]>()
    for (const subscriber of subscribers) {
      const members = groups.get(subscriber.group)
      if (members === undefined) groups.set(subscriber.group, [subscriber])
      else members.push(subscriber)
    }
    const { db, versions } = this.#source
    for (const members of groups.values()) {
      const first = members[0]
      if (first === undefined) continue
      try {
        const changes = await matchChanges(db, versions, first.conditions, entries)
        await first.load?.(changes)
        for (const subscriber of members) subscriber.deliver(changes, upTo)
      } catch (error) {
        this.#fail(members, error)
      }
    }
  }

  /** Sends a resumed stream the entries between its position and the feed's, then makes it live. */
  async #catchUp (subscriber: FeedSubscriber): Promise<void> {
    for (;;) {
      if (!this.#catching.has(subscriber)) return
      const target = this.#position
      if (target === undefined) return
      if (this.#running !== undefined) {
        await this.#running
        continue
      }
      if (subscriber.position >= target) {
        this.#catching.delete(subscriber)
        this.#live.add(subscriber)
        return
      }
      const entries = await this.#read(subscriber.position, target)
      const last = entries.length < batchSize ? target : Number(entries.at(-1)?.position ?? target)
      await this.#deliver([subscriber], entries, last)
    }
  }

  #fail (subscribers: readonly FeedSubscriber[], _error: unknown): void {
    for (const subscriber of subscribers) subscriber.end('error')
  }
}
