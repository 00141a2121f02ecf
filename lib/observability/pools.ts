import type { StatementDialect } from './channels.js'

// The connection pools of the databases createDatabase opened, for the metrics plugin to read at each scrape: a
// connector adds its pool when it opens (one call), nothing is read per request, and a closed or collected pool
// leaves the list at the next read.

/** What a pool holds at one moment: `null` once it is closed. */
export interface PoolFigures {
  /** Connections handed out to a query or a transaction. */
  readonly inUse: number
  /** Open connections waiting in the pool. */
  readonly idle: number
  /** Callers waiting for a connection. */
  readonly waiting: number
}

/** A pool as the metrics read it. */
export interface WatchedPool {
  readonly dialect: StatementDialect
  /** Where it connects, without user or password: `postgres://db:5432/app`, `sqlite:app.db`. */
  readonly database: string
  readonly figures: () => PoolFigures | null
}

const pools = new Set<WatchedPool>()

/** Drops the pools that closed or were collected. */
function prune (): void {
  for (const pool of pools) if (pool.figures() === null) pools.delete(pool)
}

/**
 * Adds a pool to those the metrics read: `read` answers its figures, or `null` once it closed. The pool is held
 * weakly, so a database nobody closes still goes when it is collected.
 *
 * @example
 * ```ts
 * watchPool('postgres', url, pool, (p) => p.ended ? null : { inUse: p.totalCount - p.idleCount, ... })
 * ```
 */
export function watchPool<P extends object> (
  dialect: StatementDialect,
  url: string,
  pool: P,
  read: (pool: P) => PoolFigures | null
): void {
  prune()
  const held = new WeakRef(pool)
  const figures = (): PoolFigures | null => {
    const live = held.deref()
    return live === undefined ? null : read(live)
  }
  pools.add({ dialect, database: poolLabel(url), figures })
}

/**
 * The open pools, each read now.
 *
 * @example
 * ```ts
 * for (const { dialect, database, figures } of watchedPools()) gauge.set({ dialect, database }, figures.inUse)
 * ```
 */
export function watchedPools (): Array<Omit<WatchedPool, 'figures'> & { figures: PoolFigures }> {
  const read = []
  for (const pool of pools) {
    const figures = pool.figures()
    if (figures === null) pools.delete(pool)
    else read.push({ dialect: pool.dialect, database: pool.database, figures })
  }
  return read
}

/** A URL as a bounded label: its scheme, host, port and path, never its user, password or query parameters. */
export function poolLabel (url: string): string {
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase() ?? ''
  if (scheme === 'sqlite') return url.replace(/\?.*$/, '')
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`
  } catch {
    return scheme
  }
}

/** The counts a pg `Pool` keeps, as its types document them. */
interface PgPoolCounts {
  readonly totalCount: number
  readonly idleCount: number
  readonly waitingCount: number
  readonly ending: boolean
}

/**
 * A pg `Pool`'s figures, from its documented counts.
 *
 * @example
 * ```ts
 * watchPool('postgres', url, pool, pgPoolFigures)
 * ```
 */
export function pgPoolFigures (pool: PgPoolCounts): PoolFigures | null {
  if (pool.ending) return null
  return { inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount }
}

/** The length of one of mysql2's internal queues, or 0 where a later mysql2 names it otherwise. */
function queueLength (pool: object, field: string): number {
  const queue: unknown = Reflect.get(pool, field)
  if (typeof queue !== 'object' || queue === null || !('length' in queue)) return 0
  return typeof queue.length === 'number' ? queue.length : 0
}

/**
 * A mysql2 pool's figures: mysql2 documents no counts, so its queues are read (`_allConnections`,
 * `_freeConnections`, `_connectionQueue`); a mysql2 that renames them reports zeros, never fails.
 *
 * @example
 * ```ts
 * watchPool('mysql', url, pool, mysqlPoolFigures)
 * ```
 */
export function mysqlPoolFigures (pool: object): PoolFigures | null {
  if (Reflect.get(pool, '_closed') === true) return null
  const idle = queueLength(pool, '_freeConnections')
  const inUse = queueLength(pool, '_allConnections') - idle
  return { inUse, idle, waiting: queueLength(pool, '_connectionQueue') }
}
