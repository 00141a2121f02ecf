import { sql } from 'kysely'
import type { DialectReplication } from '../dialect.js'

interface ReplayStatus {
  recovering: boolean
  replayed: string | null
  behind: number | string | null
}

/**
 * A PostgreSQL replica's lag: 0 once it has replayed the WAL the primary has written (an idle primary's replica is
 * not behind, however old its last replayed transaction), else the age of its last replayed transaction
 * (`now() - pg_last_xact_replay_timestamp()`), `Infinity` when it has replayed none. A database not in recovery is
 * no replica: 0, and the primary is not asked.
 *
 * @example
 * ```ts
 * await postgresReplication.lag(db, replica) // 0, or 2150 while replay is 2 s behind
 * ```
 */
export const postgresReplication: DialectReplication = {
  async lag (primary, replica) {
    const { rows } = await sql<ReplayStatus>`
      select pg_is_in_recovery() as recovering, pg_last_wal_replay_lsn()::text as replayed,
        extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000 as behind`.execute(replica)
    const status = rows[0]
    if (status === undefined || !status.recovering) return 0
    if (status.replayed !== null) {
      const written = await sql<{ caught: boolean }>`
        select pg_current_wal_lsn() <= ${status.replayed}::pg_lsn as caught`.execute(primary)
      if (written.rows[0]?.caught === true) return 0
    }
    return status.behind === null ? Infinity : Math.max(0, Number(status.behind))
  },
}
