import { sql } from 'kysely'
import type { AnyDatabase } from '../../sql.js'

/**
 * At startup: the cache of the sequence the history table's `position` is drawn from, or `undefined` when it has none
 * (not an identity or serial column). A cache above 1 hands each connection its own block of positions, which then
 * commit out of order even under the history lock (dialect/shared/history-lock.ts).
 *
 * @example
 * ```ts
 * await postgresPositionCache(db, 'viewset_history') // 1, as the README's migration creates it
 * ```
 */
export async function postgresPositionCache (db: AnyDatabase, historyTable: string): Promise<number | undefined> {
  const { rows } = await sql<{ cache: unknown }>`select sequences.seqcache as cache
    from pg_sequence as sequences
    where sequences.seqrelid = cast(pg_get_serial_sequence(${`"${historyTable}"`}, 'position') as regclass)`.execute(db)
  const cache = rows[0]?.cache
  return cache === undefined || cache === null ? undefined : Number(cache)
}
