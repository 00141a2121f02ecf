import { PostgresDialect } from 'kysely'
import type { CompiledQuery, DatabaseConnection, Driver } from 'kysely'
import type { ClientConfig } from 'pg'
import type { ConnectionSettings, DatabaseConnector } from '../shared/connection.js'
import { keepAliveDelay, readTimeout } from '../shared/connection.js'
import { carryCancellationToCheckouts } from './postgres-cancel.js'
import { enableCancellation } from '../../execution/cancellation.js'
import { invalidOption } from '../../errors.js'
import { isPgPool, markPreparable, postgresHandle, queryDirect, patchClientQuery } from './postgres-statements.js'
import type { PostgresHandle } from './postgres-statements.js'
import type { DirectExecutor } from '../shared/connection.js'
import { wrapClientQuery } from './postgres-client-query.js'
import { checkServer } from './postgres-server-check.js'
import { postgresRowBounds } from './postgres-statistics.js'
import { pgPoolFigures, watchPool } from '../../observability/pools.js'

async function openPostgres (url: string, settings: ConnectionSettings, handle: PostgresHandle) {
  const { default: pg } = await import('pg')
  const config = {
    connectionString: url,
    connectionTimeoutMillis: settings.connectionTimeout,
    // A startup parameter rather than a SET per connection: no extra round trip, and no window in which
    // a connection runs unbounded. pg leaves it out when it is 0.
    statement_timeout: settings.statementTimeout,
    // A half-open connection (a failover, a partition) is found: idle, by keepalive probes; busy, by the read
    // timeout of each pooled client's query wrapper (not pg's query_timeout: shared/read-watch.ts says why).
    keepAlive: true,
    keepAliveInitialDelayMillis: keepAliveDelay,
  }
  const queryTimeout = readTimeout(settings.statementTimeout)
  // The one query of the startup check keeps pg's own timer (pg leaves query_timeout out when it is 0).
  const check = (options: ClientConfig) => new pg.Client({ ...options, query_timeout: queryTimeout })
  const cancelOnDisconnect = await checkServer(check, config, settings)
  const pool = new pg.Pool({ ...config, max: settings.poolSize })
  watchPool('postgres', url, pool, pgPoolFigures)
  settings.lending?.({
    free: () => settings.poolSize - (pool.totalCount - pool.idleCount) - pool.waitingCount,
    onRelease: (listener) => { pool.on('release', listener) },
  })
  // An idle client that loses its server emits 'error' on the pool; unhandled, it would crash the process.
  pool.on('error', () => {})
  // A client in use has no pool listener, and pg emits 'error' on it as well as failing its query when
  // the server goes away (a restart, a failover): without this listener the process would crash.
  pool.on('connect', (client) => {
    client.on('error', () => {})
    wrapClientQuery(client, cancelOnDisconnect, queryTimeout)
  })
  if (cancelOnDisconnect) {
    carryCancellationToCheckouts(pool)
    enableCancellation()
  }
  pool.on('connect', (client) => { patchClientQuery(client, handle.named) })
  handle.pool = pool
  return pool
}

/** The connections whose statements are marked preparable ({@link PreparingPostgresDialect}). */
const marking = new WeakSet<DatabaseConnection>()

/**
 * Kysely's PostgreSQL dialect whose connections mark each statement Kysely compiled (never raw SQL:
 * markPreparable's gate) as preparable before running it. A transaction's statements (a nested POST, a write under
 * a rule, a write with history) run on the connection Kysely holds, past queryDirect, which marks the others: without
 * this they were parsed and planned on every run unless the same text had run outside a transaction first.
 */
class PreparingPostgresDialect extends PostgresDialect {
  override createDriver (): Driver {
    const driver = super.createDriver()
    const acquire = driver.acquireConnection.bind(driver)
    driver.acquireConnection = async () => {
      const connection = await acquire()
      if (!marking.has(connection)) {
        marking.add(connection)
        const execute = connection.executeQuery.bind(connection)
        connection.executeQuery = async <R>(compiled: CompiledQuery) => {
          markPreparable(compiled)
          return await execute<R>(compiled)
        }
      }
      return connection
    }
    return driver
  }
}

/**
 * PostgreSQL through pg: `postgres://user@host:5432/name` or `postgresql://...`. `statement_timeout` is
 * sent when each connection opens and checked on the first (postgres-server-check.ts); compiled queries
 * become named statements (postgres-statements.ts) unless a pooler is named; unless `cancelOnDisconnect` is
 * off, a query whose client hung up is cancelled (postgres-cancel.ts); a connection with no answer past the
 * statement timeout is dropped (postgres-client-guard.ts): one wrapper of each client's query does both
 * (postgres-client-query.ts).
 */
export const postgresConnector: DatabaseConnector = {
  urls: ['postgres://', 'postgresql://'],
  // pg_stats bounds the rows of a page by an indexed equality, an OR filter, an AGGREGATE (postgres-statistics.ts).
  rowBounds: (catalog) => postgresRowBounds(catalog),
  connect (url, settings) {
    // Behind a pooler, a named statement lives on a server connection the next transaction may not get.
    const handle = postgresHandle(settings.log, settings.preparedStatements ?? settings.pooler === undefined)
    const config = { pool: async () => await openPostgres(url, settings, handle) }
    return {
      dialect: handle.named ? new PreparingPostgresDialect(config) : new PostgresDialect(config),
      direct: directOn(handle),
    }
  },
  adopt (pool) {
    if (!isPgPool(pool)) invalidOption('handle', 'a PostgreSQL Kysely takes the pg Pool given to its PostgresDialect')
    const handle = postgresHandle(undefined, true)
    handle.pool = pool
    // Its clients send compiled queries as named statements from their next checkout on, through Kysely too.
    pool.on('acquire', (client) => { patchClientQuery(client, true) })
    return { direct: directOn(handle), viaKysely: markPreparable }
  },
}

function directOn (handle: PostgresHandle): DirectExecutor {
  return (compiled) => {
    const result = queryDirect(handle, compiled)
    // What goes through Kysely may still be prepared, by the client's patched query (patchClientQuery).
    if (result === undefined && handle.named) markPreparable(compiled)
    return result
  }
}
