import { sql } from 'kysely'
import type { DialectReplication } from '../dialect.js'
import type { Row } from '../../sql.js'

/** The seconds a replica status row says it is behind: MySQL 8 names it after the source, MariaDB after the master. */
function secondsBehind (status: Row): unknown {
  return status.Seconds_Behind_Source ?? status.Seconds_Behind_Master
}

/**
 * A MySQL or MariaDB replica's lag, from `SHOW REPLICA STATUS` (MySQL 8.0.22+, MariaDB 10.5+; it takes the
 * REPLICATION CLIENT, or MariaDB's REPLICA MONITOR, privilege): no status row is no replica (0), a NULL
 * `Seconds_Behind_*` is a stopped replication (`Infinity`). Whole seconds only: MySQL measures no finer.
 *
 * @example
 * ```ts
 * await mysqlReplication.lag(db, replica) // 0, or 3000 while the replica applies events 3 s old
 * ```
 */
export const mysqlReplication: DialectReplication = {
  async lag (_primary, replica) {
    const { rows } = await sql<Row>`show replica status`.execute(replica)
    const status = rows[0]
    if (status === undefined) return 0
    const behind = secondsBehind(status)
    return behind === null || behind === undefined ? Infinity : Number(behind) * 1000
  },
}
