import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { invalidOption } from '../errors.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { ResolvedIdempotency } from './idempotency-options.js'

// The keys of `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header), in a table the library owns: the
// database is the store, so that every process serving the viewset sees every key. A key is reserved by a committed
// row whose `owner` holds it until `lease_until` (a crashed request's key frees then); its answer is written by the
// write's own transaction (`complete`), which clears `owner`; a write that fails deletes the reservation.

/** An answer as stored: replayed as it was sent. */
export interface StoredAnswer {
  readonly status: number
  /** The headers that matter to a client (Location, ETag, Content-Type, Preference-Applied…), lower-case names. */
  readonly headers: Readonly<Record<string, string>>
  /** The body as sent, `''` for none. */
  readonly body: string
}

/** What reserving a key found. */
export type Reservation =
  /** The key is this request's until it completes or releases it: `owner` proves it. */
  | { readonly kind: 'reserved'; readonly owner: string }
  /** The same request completed before: its answer. */
  | { readonly kind: 'stored'; readonly answer: StoredAnswer }
  /** The key was used by a different request. */
  | { readonly kind: 'reused' }
  /** The same request is in flight: try again in `retryAfter` seconds. */
  | { readonly kind: 'busy'; readonly retryAfter: number }

/** The columns of a key's row, as read back (pg answers bigint as a string). */
interface KeyRow {
  readonly fingerprint: string
  readonly owner: string | null
  readonly leaseUntil: number
  readonly expiresAt: number
  readonly status: number | null
  readonly headers: string | null
  readonly body: string | null
}

/** Expired keys deleted per new key at most: the table stays bounded and no request does unbounded work. */
export const prunedPerKey = 10

const columns = ['id', 'fingerprint', 'owner', 'lease_until', 'expires_at', 'status', 'headers', 'body'] as const

/** The headers of a stored answer, read back: a JSON object of strings. */
function headersOf (text: string | null): Record<string, string> {
  const parsed: unknown = JSON.parse(text ?? '{}')
  const headers: Record<string, string> = {}
  if (typeof parsed !== 'object' || parsed === null) return headers
  for (const [name, value] of Object.entries(parsed)) if (typeof value === 'string') headers[name] = value
  return headers
}

function keyRow (row: Row): KeyRow {
  const text = (value: unknown) => (value === null || value === undefined ? null : String(value))
  return {
    fingerprint: String(row.fingerprint),
    owner: text(row.owner),
    leaseUntil: Number(row.lease_until),
    expiresAt: Number(row.expires_at),
    status: row.status === null || row.status === undefined ? null : Number(row.status),
    headers: text(row.headers),
    body: text(row.body),
  }
}

/**
 * The keys of one table. Reservations, releases and pruning are statements of their own (committed at once, seen by
 * every process); `complete` runs in the write's transaction, so the answer is stored if and only if the write
 * commits.
 *
 * @example
 * ```ts
 * const store = new IdempotencyStore(db, resolved.idempotency, (error) => dialect.classify(error))
 * const reservation = await store.reserve(id, fingerprint)
 * ```
 */
export class IdempotencyStore {
  readonly #db: AnyDatabase
  readonly #options: ResolvedIdempotency
  readonly #isUnique: (error: unknown) => boolean

  constructor (db: AnyDatabase, options: ResolvedIdempotency, classify: ViewsetDialect['classify']) {
    this.#db = db
    this.#options = options
    this.#isUnique = (error) => classify(error)?.kind === 'unique'
  }

  /** Reserves key `id` for a request whose fingerprint is `fingerprint`, or says why not. */
  async reserve (id: string, fingerprint: string, now = Date.now()): Promise<Reservation> {
    const owner = randomUUID()
    // Each pass either reserves or finds a row; a row that vanishes or changes between two statements is read again.
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await this.#insert(id, fingerprint, owner, now)) {
        await this.#prune(now)
        return { kind: 'reserved', owner }
      }
      const found = await this.#find(id)
      if (found === undefined) continue
      const expired = found.expiresAt <= now || (found.owner !== null && found.leaseUntil <= now)
      if (expired) {
        if (await this.#takeOver(id, found, fingerprint, owner, now)) return { kind: 'reserved', owner }
        continue
      }
      if (found.fingerprint !== fingerprint) return { kind: 'reused' }
      if (found.owner !== null) {
        return { kind: 'busy', retryAfter: Math.max(1, Math.ceil((found.leaseUntil - now) / 1000)) }
      }
      const answer = { status: found.status ?? 200, headers: headersOf(found.headers), body: found.body ?? '' }
      return { kind: 'stored', answer }
    }
    return { kind: 'busy', retryAfter: 1 }
  }

  /**
   * Stores the answer of the request holding key `id` through `trx` (the write's transaction) and frees the key;
   * false when `owner` no longer holds it (its lease ran out and another request took it): the write must roll back.
   */
  async complete (trx: AnyDatabase, id: string, owner: string, answer: StoredAnswer, now = Date.now()) {
    const result = await trx.updateTable(this.#options.table).set({
      owner: null,
      status: answer.status,
      headers: JSON.stringify(answer.headers),
      body: answer.body,
      expires_at: now + this.#options.retention,
    }).where('id', '=', id).where('owner', '=', owner).executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** Deletes the reservation `owner` holds: the request failed, and the key may be used again. */
  async release (id: string, owner: string): Promise<void> {
    await this.#db.deleteFrom(this.#options.table).where('id', '=', id).where('owner', '=', owner).execute()
  }

  async #insert (id: string, fingerprint: string, owner: string, now: number): Promise<boolean> {
    const until = now + this.#options.lease
    const expires = Math.max(until, now + this.#options.retention)
    const values = { id, fingerprint, owner, lease_until: until, expires_at: expires }
    try {
      await this.#db.insertInto(this.#options.table).values(values).execute()
      return true
    } catch (error) {
      if (this.#isUnique(error)) return false
      throw error
    }
  }

  async #find (id: string): Promise<KeyRow | undefined> {
    const row = await this.#db.selectFrom(this.#options.table).select([...columns]).where('id', '=', id)
      .executeTakeFirst()
    return row === undefined ? undefined : keyRow(row)
  }

  /** Takes over an expired key (its retention, or a crashed holder's lease, ran out) if no one else did first. */
  async #takeOver (id: string, found: KeyRow, fingerprint: string, owner: string, now: number): Promise<boolean> {
    const until = now + this.#options.lease
    const expires = Math.max(until, now + this.#options.retention)
    const result = await this.#db.updateTable(this.#options.table).set({
      fingerprint,
      owner,
      lease_until: until,
      expires_at: expires,
      status: null,
      headers: null,
      body: null,
    }).where('id', '=', id).where('lease_until', '=', found.leaseUntil).where('expires_at', '=', found.expiresAt)
      .where('owner', found.owner === null ? 'is' : '=', found.owner).executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** Deletes at most {@link prunedPerKey} keys past their retention. */
  async #prune (now: number): Promise<void> {
    const { table } = this.#options
    const expired = await this.#db.selectFrom(table).select('id').where('expires_at', '<', now).limit(prunedPerKey)
      .execute()
    if (expired.length === 0) return
    await this.#db.deleteFrom(table).where('id', 'in', expired.map((row) => String(row.id)))
      .where('expires_at', '<', now).execute()
  }
}

/** The type of `body`: MySQL's `text` holds 64 KiB only, less than a bulk answer. */
const bodyTypes: Record<ViewsetDialect['name'], string> = { sqlite: 'text', postgres: 'text', mysql: 'longtext' }

/** Creates the table of keys, as the README's migration does, unless it exists. */
async function createKeyTable (db: AnyDatabase, table: string, dialect: ViewsetDialect['name']): Promise<void> {
  await db.schema.createTable(table).ifNotExists()
    .addColumn('id', 'varchar(64)', (column) => column.primaryKey())
    .addColumn('fingerprint', 'varchar(64)', (column) => column.notNull())
    .addColumn('owner', 'varchar(36)')
    .addColumn('lease_until', 'bigint', (column) => column.notNull())
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .addColumn('status', 'integer')
    .addColumn('headers', 'text')
    .addColumn('body', sql.raw(bodyTypes[dialect]))
    .execute()
  await db.schema.createIndex(`${table}_expires_at`).ifNotExists().on(table).column('expires_at').execute()
}

/** Whether the table of keys is there with its columns. */
async function hasKeyTable (db: AnyDatabase, table: string): Promise<boolean> {
  try {
    await db.selectFrom(table).select([...columns]).limit(1).execute()
    return true
  } catch {
    return false
  }
}

/**
 * Checks at startup that the table of keys exists with its columns, creating it first with `createTable`; fails
 * naming the table and the option otherwise (never in a request).
 *
 * @example
 * ```ts
 * await prepareKeyTable(db, resolved.idempotency, dialect.name)
 * ```
 */
export async function prepareKeyTable (
  db: AnyDatabase,
  options: ResolvedIdempotency,
  dialect: ViewsetDialect['name']
): Promise<void> {
  if (await hasKeyTable(db, options.table)) return
  if (options.createTable) {
    await createKeyTable(db, options.table, dialect)
    if (await hasKeyTable(db, options.table)) return
  }
  invalidOption('idempotency.table', `the table "${options.table}" of idempotency keys does not exist (or lacks ` +
    `the columns ${columns.join(', ')}): run the migration in the README, or set idempotency: { createTable: true }`)
}
