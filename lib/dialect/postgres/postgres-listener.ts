import { sql } from 'kysely'
import type { AnyDatabase } from '../../sql.js'

// PostgreSQL's wake-up for the change feed: ONE connection per process and URL, outside every pool, runs `LISTEN`,
// and each notification (its payload the table written) wakes the feeds of that table. A notification only wakes a
// reader: the history table stays the source of truth, read by position, so a lost one delays a change until the
// next poll, never loses it. The writer notifies in the write's transaction (notifyChange), so that a rolled-back
// write wakes nobody and a committed one is readable when the notification arrives.

/** The channel the history writer notifies on. */
export const changesChannel = 'fastify_viewsets_changes'

type Wake = (table: string) => void

interface Listener {
  readonly wakes: Set<Wake>
  client: { end(): Promise<void> } | undefined
  closed: boolean
}

const listeners = new Map<string, Listener>()

/** Retry after a lost connection: the feeds poll meanwhile. */
const reconnectDelay = 1000

async function connect (url: string, listener: Listener): Promise<void> {
  if (listener.closed) return
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: url, keepAlive: true })
  const lost = () => {
    if (listener.client !== client) return
    listener.client = undefined
    client.end().catch(() => {})
    setTimeout(() => { connect(url, listener).catch(() => {}) }, reconnectDelay).unref()
  }
  client.on('error', lost)
  client.on('end', lost)
  client.on('notification', ({ channel, payload }: { channel: string, payload?: string | undefined }) => {
    if (channel !== changesChannel || payload === undefined) return
    for (const wake of listener.wakes) wake(payload)
  })
  listener.client = client
  try {
    await client.connect()
    await client.query(`LISTEN ${changesChannel}`)
  } catch {
    lost()
  }
  if (listener.closed) await client.end().catch(() => {})
}

/**
 * Subscribes `wake` to the notifications of the process's listener on `url` (opened by the first subscriber);
 * returns what unsubscribes it (the last one closes the connection).
 *
 * @example
 * ```ts
 * const stop = listenForChanges('postgres://app@db/app', (table) => { if (table === 'items') poll() })
 * ```
 */
export function listenForChanges (url: string, wake: Wake): () => Promise<void> {
  let listener = listeners.get(url)
  if (listener === undefined) {
    const created: Listener = { wakes: new Set(), client: undefined, closed: false }
    listeners.set(url, created)
    connect(url, created).catch(() => {})
    listener = created
  }
  listener.wakes.add(wake)
  const own = listener
  return async () => {
    own.wakes.delete(wake)
    if (own.wakes.size > 0) return
    own.closed = true
    listeners.delete(url)
    const client = own.client
    own.client = undefined
    await client?.end().catch(() => {})
  }
}

/**
 * Notifies the feeds of every process that `table` changed, in the transaction `trx` of the write (delivered at
 * commit, dropped at rollback). The history writer calls it after its insert on PostgreSQL; elsewhere the feeds poll.
 *
 * @example
 * ```ts
 * await notifyChange(trx, 'items')
 * ```
 */
export async function notifyChange (trx: AnyDatabase, table: string): Promise<void> {
  await sql`select pg_notify(${changesChannel}, ${table})`.execute(trx)
}
