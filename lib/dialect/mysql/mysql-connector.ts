import { CompiledQuery, MysqlDialect } from 'kysely'
import type { DatabaseConnection, MysqlPool, MysqlPoolConnection } from 'kysely'
import { invalidOption, ViewsetErrors } from '../../errors.js'
import type { ConnectionSettings, DatabaseConnector } from '../shared/connection.js'
import { keepAliveDelay, readTimeout, redact } from '../shared/connection.js'
import { errorProperty } from '../../sql.js'
import { replaceMethod } from '../shared/replace-method.js'
import { readWatch } from '../shared/read-watch.js'
import { mysqlPoolFigures, watchPool } from '../../observability/pools.js'

async function openMysql (url: string, settings: ConnectionSettings): Promise<MysqlPool> {
  const mysql = await import('mysql2').catch(() => {
    throw new ViewsetErrors.InvalidDatabaseUrl(redact(url), 'MySQL needs the mysql2 package: npm install mysql2')
  })
  const parsed = new URL(url.replace(/^mariadb:/i, 'mysql:'))
  const timeout = settings.connectionTimeout
  const pool = mysql.createPool({
    // Query parameters (such as ?ssl={"rejectUnauthorized":true} or ?charset=...) are mysql2 options.
    uri: parsed.toString(),
    port: parsed.port === '' ? 3306 : Number(parsed.port),
    connectionLimit: settings.poolSize,
    connectTimeout: timeout,
    // DATETIME/TIMESTAMP are read and written in UTC, like pg's timestamptz; the session is set to UTC below.
    timezone: 'Z',
    // BIGINT as a number while it is exact, as a string beyond 2^53; DECIMAL as a string, like pg's numeric.
    supportBigNumbers: true,
    typeCast: mysqlTypeCast,
    // A dead idle connection is found by keepalive probes; a busy one by its read watch (see below).
    enableKeepAlive: true,
    keepAliveInitialDelay: keepAliveDelay,
  })
  watchPool('mysql', url, pool, mysqlPoolFigures)
  settings.lending?.({
    free: () => {
      const figures = mysqlPoolFigures(pool)
      return figures === null ? 0 : settings.poolSize - figures.inUse - figures.waiting
    },
    onRelease: (listener) => { pool.on('release', listener) },
  })
  return withAcquireTimeout(pool, timeout, readTimeout(settings.statementTimeout))
}

/** mysql2's query callback: (error, rows, fields). */
type MysqlCallback = (error: unknown, rows?: unknown, fields?: unknown) => void

function isCallback (value: unknown): value is MysqlCallback {
  return typeof value === 'function'
}

/** The connections whose `query` is guarded. */
const guarded = new WeakSet<object>()

/**
 * Watches each query Kysely sends (SQL text, values, callback) for an answer within `timeout`, a margin above the
 * statement timeout (shared/read-watch.ts: one timer per connection, where mysql2's own per-query `timeout` armed one
 * per query and kept each query's rows out of the young generation). Past it the connection is destroyed (it leaves
 * the pool, which opens a new one) and its queries answer 503 FST_VIEWSET_TIMEOUT. Only a half-open connection gets
 * there: the server stops a statement at its own timeout. MySQL 8 bounds only SELECTs on the server: a longer write
 * ends here too, and may still commit.
 */
function guardConnection (connection: MysqlPoolConnection, timeout: number): void {
  if (guarded.has(connection)) return
  guarded.add(connection)
  // The callbacks of the queries sent and not answered yet, in order: mysql2 answers them one after the other.
  const waiting: Array<MysqlCallback> = []
  const watch = readWatch(timeout, () => {
    destroy(connection)
    // mysql2 ends a destroyed connection without a word to the queries it holds: each answers the timeout.
    for (const fail of waiting.splice(0)) fail(new ViewsetErrors.Timeout())
  })
  // mysql2's overloads, forwarded as they come but for Kysely's (SQL text, values, callback)
  replaceMethod(connection, 'query', (query) => (sql, values, callback) => {
    if (typeof sql !== 'string' || !isCallback(callback)) return query(sql, values, callback)
    watch.start()
    waiting.push(callback)
    try {
      return query(sql, values, (error: unknown, rows: unknown, fields: unknown) => {
        // Answered with the timeout already.
        if (watch.expired) return
        watch.settle()
        waiting.shift()
        callback(error, rows, fields) // mysql2's callback: (error, rows, fields)
      })
    } catch (error) {
      // Thrown at once: nothing was sent, nothing will answer.
      watch.settle()
      waiting.pop()
      throw error
    }
  })
}

/** Destroys a mysql2 connection (Kysely's type of it leaves `destroy` out). */
function destroy (connection: object): void {
  if ('destroy' in connection && typeof connection.destroy === 'function') connection.destroy()
}

/** The mysql2 subset of a column's metadata that {@link mysqlTypeCast} reads. */
interface MysqlField {
  type: string
  length: number
  extendedFormat?: string
  string: () => string | null
}

/**
 * Answers in the types the other dialects use: BOOLEAN (TINYINT(1)) as true/false, and MariaDB's
 * JSON (a LONGTEXT underneath) parsed, like MySQL's JSON type and PostgreSQL's json/jsonb.
 */
function mysqlTypeCast (field: MysqlField, next: () => unknown): unknown {
  if (field.type === 'TINY' && field.length === 1) {
    const value = field.string()
    return value === null ? null : value !== '0'
  }
  if (field.extendedFormat === 'json') {
    const value = field.string()
    return value === null ? null : JSON.parse(value)
  }
  return next()
}

/**
 * The session settings every MySQL connection gets: UTC, so that NOW() agrees with the UTC dates mysql2
 * writes, and the statement timeout: MariaDB's `max_statement_time` (seconds), else MySQL's
 * `max_execution_time` (milliseconds, SELECT only); MySQL does not know the first (error 1193).
 */
function mysqlSession (timeout: number) {
  return async function onMysqlConnection (connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("set time_zone = '+00:00'"))
    if (timeout === 0) return
    try {
      await connection.executeQuery(CompiledQuery.raw(`set session max_statement_time = ${timeout / 1000}`))
    } catch (error) {
      if (errorProperty(error, 'errno') !== '1193') throw error
      await connection.executeQuery(CompiledQuery.raw(`set session max_execution_time = ${timeout}`))
    }
  }
}

/**
 * mysql2's pool queues requests for a connection without limit. Fail after `timeout` milliseconds
 * instead, like pg's `connectionTimeoutMillis`, so that an exhausted pool answers 503 rather than hang.
 * Each connection handed out gets the `queryTimeout` of {@link guardConnection} (0: none).
 */
function withAcquireTimeout (pool: MysqlPool, timeout: number, queryTimeout: number): MysqlPool {
  return {
    getConnection (callback) {
      let waiting = true
      const timer = setTimeout(() => {
        waiting = false
        // Kysely types the callback with a connection always; its driver reads one only when no error came.
        callback(new ViewsetErrors.Unavailable(), undefined as never) // an error comes with no connection
      }, timeout)
      pool.getConnection((error, connection) => {
        clearTimeout(timer)
        if (waiting) {
          waiting = false
          if (queryTimeout > 0 && (error === null || error === undefined)) guardConnection(connection, queryTimeout)
          callback(error, connection)
        } else if (error === null || error === undefined) {
          // The caller gave up on this connection: hand it back to the pool.
          connection.release()
        }
      })
    },
    end: (callback) => {
      pool.end(callback)
    },
  }
}

/**
 * MySQL and MariaDB through mysql2 (an optional peer, loaded on first use): `mysql://user@host:3306/name` or
 * `mariadb://...`; query parameters are mysql2 options. Sessions run in UTC with the statement timeout, an
 * exhausted pool fails after `connectionTimeout`, BOOLEAN comes back as true/false and MariaDB JSON parsed.
 */
export const mysqlConnector: DatabaseConnector = {
  urls: ['mysql://', 'mariadb://'],
  connect (url, settings) {
    return {
      dialect: new MysqlDialect({
        pool: async () => await openMysql(url, settings),
        onCreateConnection: mysqlSession(settings.statementTimeout),
      }),
      direct: undefined,
    }
  },
  adopt (pool) {
    if (
      typeof pool !== 'object' ||
      pool === null ||
      !('getConnection' in pool) ||
      typeof pool.getConnection !== 'function'
    ) {
      invalidOption('handle', 'a MySQL Kysely takes the mysql2 pool given to its MysqlDialect')
    }
    // mysql2 prepares only with execute(), which Kysely does not use: nothing to adopt, as with createDatabase.
    return undefined
  },
}
