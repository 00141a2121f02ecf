import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ResolvedChanges } from '../data/changes-options.js'
import { storedKey } from '../data/change-key.js'
import type { ChangeKey } from '../data/change-key.js'
import { latestHistoryPosition, oldestHistoryPosition } from '../data/history-reader.js'
import { groupKey } from '../data/version-match.js'
import type { MatchedChange } from '../data/version-match.js'
import { ViewsetErrors } from '../errors.js'
import { hideFields } from '../http/field-hiding.js'
import type { ListQueryPlan } from '../query/list-query.js'
import { parseListQuery } from '../query/list-query.js'
import { queryParameterError } from '../query/condition.js'
import type { ScopeCondition } from '../query/scope.js'
import type { ViewsetToken } from '../options.js'
import { isRecord } from '../schema/object-schema.js'
import type { Serializer } from '../schema/serializer.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { ChangeFeed, FeedSubscriber } from './change-feed.js'
import { admitStream } from './stream-limits.js'
import { eventRelations } from './event-relations.js'
import type { RelationSource } from './event-relations.js'

// One change stream: `GET {prefix}?<filters>` with `Accept: text/event-stream`. Everything that can fail does so
// before the headers are sent, as a problem: the limits, the query string (LIST's own parsing, so a filter means the
// same), the caller's rule, `Last-Event-ID`, and the start position, read once. Then Server-Sent Events: `insert`,
// `update` and `delete`, each with the entry's position as `id:`, until the client leaves or a bound ends it.

/** What a viewset's streams are opened with. */
export interface StreamPlan {
  readonly feed: ChangeFeed
  readonly options: ResolvedChanges
  /** Where the history table is read (the primary database, never a replica). */
  readonly db: AnyDatabase
  readonly table: string
  readonly list: ListQueryPlan
  listPlanOf(request: FastifyRequest): ListQueryPlan | undefined
  scopeOf(request: FastifyRequest, token: ViewsetToken | null, method: 'LIST'): ScopeCondition | undefined
  readerOf(request: FastifyRequest): AnyDatabase
  /** A whole row, as GET serializes it. */
  readonly serializeRow: Serializer
  /** Whether field rules may hide fields of a row. */
  readonly hiding: boolean
  /** The key, one column or several, as a `delete` event's data sends it (data/change-key.ts). */
  readonly key: ChangeKey
  /** Where the events' relation fields are loaded from, and those loaded when `?fields=` names none. */
  readonly relations: RelationSource
  readonly defaultRelations: ReadonlySet<string> | undefined
  /** Whether `q` can be evaluated on stored versions (DialectFullText.matchIsolated): else a 400. */
  readonly searchesVersions: boolean
}

/** Whether a request asks for the stream rather than a page. */
export function wantsStream (request: FastifyRequest): boolean {
  const accept = request.headers.accept
  return accept !== undefined && accept.toLowerCase().includes('text/event-stream')
}

/** Milliseconds the client waits before reconnecting (the `retry:` field). */
const retry = 2000

/** A block of Server-Sent Events text. */
function block (event: string, id: number | undefined, data: string): string {
  return `event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${data}\n\n`
}

/** `Last-Event-ID`: a position this feed sent, or `undefined` when absent. */
function lastEventId (request: FastifyRequest): number | undefined {
  const given = request.headers['last-event-id']
  if (given === undefined || given === '') return undefined
  if (typeof given !== 'string' || !/^\d{1,15}$/.test(given)) throw new ViewsetErrors.InvalidLastEventId()
  return Number(given)
}

/** A `delete` event's data: the row's key as an object of every key column, as `changed_since` lists it. */
function keyData (rowKey: string, key: ChangeKey): string {
  return JSON.stringify({ key: storedKey(rowKey, key) ?? {} })
}

/** Where the stream starts, and whether the client must list again (its position is past the retention). */
async function startOf (plan: StreamPlan, request: FastifyRequest): Promise<{ position: number, reset: boolean }> {
  const { db, options, table } = plan
  const source = { historyTable: options.historyTable, table }
  const resumed = lastEventId(request)
  if (resumed !== undefined) {
    // A position the feed sent is one of this table's entries (or 0, before any): nothing after it was pruned while the
    // table's oldest entry left is at or below it (pruning removes the oldest; the README prunes per table or by time).
    const oldest = await oldestHistoryPosition(db, source)
    if (oldest === undefined ? resumed === 0 : Number(oldest) <= resumed) return { position: resumed, reset: false }
  }
  return { position: Number(await latestHistoryPosition(db, source)), reset: resumed !== undefined }
}

/** The milliseconds until the token expires (`exp`), or `undefined` when it does not. */
function untilExpiry (token: ViewsetToken | null): number | undefined {
  const exp: unknown = isRecord(token) ? Reflect.get(token, 'exp') : undefined
  return typeof exp === 'number' ? Math.max(0, exp * 1000 - Date.now()) : undefined
}

/**
 * Opens a change stream for the request: checks and reads what it needs (throwing a problem), then sends the headers
 * and joins the feed. Resolves once the stream is open; the reply is hijacked.
 *
 * @example
 * ```ts
 * if (wantsStream(request)) return await openStream(plan, request, reply)
 * ```
 */
export async function openStream (plan: StreamPlan, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const token = request.viewsetToken
  const caller = typeof token?.sub === 'string' ? `sub:${token.sub}` : `ip:${request.ip}`
  const release = admitStream(caller, plan.options)
  try {
    const scope = plan.scopeOf(request, token, 'LIST')
    const given = isRecord(request.query) ? request.query : {}
    if (given.q !== undefined && !plan.searchesVersions) {
      throw queryParameterError('q', 'cannot be combined with Accept: text/event-stream on this database: its ' +
        'full-text index holds the rows as they are now, not the stored versions the feed evaluates')
    }
    const rules = { db: plan.readerOf(request), request: { request, token } }
    const query = parseListQuery(given, plan.listPlanOf(request) ?? plan.list, undefined, rules, scope !== undefined)
    const conditions = scope === undefined ? query.conditions : [scope, ...query.conditions]
    const relations = await eventRelations(plan.relations, request, query.fields?.relations ?? plan.defaultRelations)
    const start = await startOf(plan, request)
    const serialize = query.fields?.serializeRow ?? plan.serializeRow
    reply.hijack()
    const stream = new EventStream(plan, request, reply, { serialize, release })
    // Streams whose events load other related rows (other rules, other relations) are other groups.
    const group = relations === undefined ? groupKey(conditions) : `${groupKey(conditions)}\u0001${relations.key}`
    stream.open(start, { group, conditions, load: relations?.load }, untilExpiry(token))
  } catch (error) {
    release()
    throw error
  }
}

/** A change's row as the streams of its group without field rules send it. */
const serializedRows = new WeakMap<MatchedChange, string>()

/** The milliseconds a timer may wait (setTimeout's bound). */
const longestTimer = 2_147_483_647

/** One open stream: what the feed delivers to, and the bounds that end it. */
class EventStream {
  readonly #plan: StreamPlan
  readonly #request: FastifyRequest
  readonly #reply: FastifyReply
  readonly #serialize: Serializer
  readonly #release: () => void
  readonly #timers: NodeJS.Timeout[] = []
  #idle: NodeJS.Timeout | undefined
  #subscriber: FeedSubscriber | undefined
  #ended = false

  constructor (
    plan: StreamPlan,
    request: FastifyRequest,
    reply: FastifyReply,
    { serialize, release }: { serialize: Serializer, release: () => void }
  ) {
    this.#plan = plan
    this.#request = request
    this.#reply = reply
    this.#serialize = serialize
    this.#release = release
  }

  /** Sends the headers and the start position, arms the bounds and joins the feed. */
  open (
    start: { position: number, reset: boolean },
    { group, conditions, load }: Pick<FeedSubscriber, 'group' | 'conditions' | 'load'>,
    expiresIn: number | undefined
  ): void {
    const { raw } = this.#reply
    const { options } = this.#plan
    const set: OutgoingHttpHeaders = {}
    for (const [name, value] of Object.entries(this.#reply.getHeaders())) if (value !== undefined) set[name] = value
    raw.writeHead(200, {
      ...set,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    })
    // The start position as the client's last event id: a reconnection resumes there, even before any event.
    raw.write(`retry: ${retry}\nid: ${start.position}\n\n`)
    if (start.reset) raw.write(block('reset', start.position, '{"reason":"expired"}'))
    raw.on('close', () => { this.#cleanUp() })
    const later = (ms: number, reason: string) =>
      this.#timers.push(setTimeout(() => { this.end(reason) }, Math.min(ms, longestTimer)))
    later(options.maxLifetime, 'lifetime')
    if (expiresIn !== undefined) later(expiresIn, 'token-expired')
    this.#timers.push(setInterval(() => { this.#write(`: heartbeat\nid: ${this.#position()}\n\n`) }, options.heartbeat))
    this.#touch()
    const stream = this
    this.#subscriber = {
      group,
      conditions,
      load,
      position: start.position,
      deliver (changes, upTo) { stream.#deliver(this, changes, upTo) },
      end (reason) { stream.end(reason) },
    }
    this.#plan.feed.join(this.#subscriber)
  }

  #position (): number {
    return this.#subscriber?.position ?? 0
  }

  /** Restarts the idle bound: an event was sent. */
  #touch (): void {
    clearTimeout(this.#idle)
    if (this.#ended) return
    this.#idle = setTimeout(() => { this.end('idle') }, Math.min(this.#plan.options.idleTimeout, longestTimer))
  }

  #deliver (subscriber: FeedSubscriber, changes: readonly MatchedChange[], upTo: number): void {
    let sent = false
    for (const change of changes) {
      if (change.position <= subscriber.position || this.#ended) continue
      const data = change.row === undefined
        ? keyData(change.rowKey, this.#plan.key)
        : this.#rowData(change, change.row)
      this.#write(block(change.event, change.position, data))
      subscriber.position = change.position
      sent = true
    }
    subscriber.position = Math.max(subscriber.position, upTo)
    if (sent) this.#touch()
  }

  /** The row as LIST serializes it, without the fields the caller's field rules hide. */
  #rowData (change: MatchedChange, row: Row): string {
    // Without field rules or `?fields=`, every stream of the group sends the same text: serialized once.
    const shared = !this.#plan.hiding && this.#serialize === this.#plan.serializeRow
    const known = shared ? serializedRows.get(change) : undefined
    if (known !== undefined) return known
    const copy = { ...row }
    if (this.#plan.hiding) hideFields(this.#request, copy)
    const text = this.#serialize(copy)
    if (shared) serializedRows.set(change, text)
    return text
  }

  /** Writes, or drops a client that reads too slowly: what it has not read stays under `sendBuffer`. */
  #write (text: string): void {
    if (this.#ended) return
    const { raw } = this.#reply
    raw.write(text)
    if (raw.writableLength > this.#plan.options.sendBuffer) {
      this.#cleanUp()
      raw.destroy()
    }
  }

  /** Ends the stream with an `end` event saying why (the client may reconnect and resume). */
  end (reason: string): void {
    if (this.#ended) return
    this.#write(block('end', undefined, JSON.stringify({ reason })))
    this.#cleanUp()
    this.#reply.raw.end()
  }

  #cleanUp (): void {
    if (this.#ended) return
    this.#ended = true
    for (const timer of this.#timers) clearTimeout(timer)
    clearTimeout(this.#idle)
    if (this.#subscriber !== undefined) this.#plan.feed.leave(this.#subscriber)
    this.#release()
  }
}
