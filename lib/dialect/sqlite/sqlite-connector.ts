import { isAbsolute, resolve } from 'node:path'
import type { SqliteDatabase } from 'kysely'
import { invalidOption, ViewsetErrors } from '../../errors.js'
import type { ConnectionSettings, DatabaseConnector } from '../shared/connection.js'
import { BoundedSqliteDialect } from './sqlite-driver.js'
import {
  attachSqlite, isBetterSqliteDatabase, planReader, runDirect, sqliteHandle, transactDirect,
} from './sqlite-statements.js'
import { sqliteReaders } from './sqlite-readers.js'
import { statisticsReader } from './sqlite-statistics.js'
import type { BetterSqliteDatabase, SqliteHandle } from './sqlite-statements.js'

/** Opens the file: WAL journaling, the busy timeout, foreign keys on, statements prepared once
 * (sqlite-statements.ts), and the reader threads of its heavy SELECTs (sqlite-readers.ts). */
async function openSqlite (path: string, settings: ConnectionSettings, handle: SqliteHandle): Promise<SqliteDatabase> {
  const { default: Database } = await import('better-sqlite3')
  const file = path === ':memory:' || isAbsolute(path) ? path : resolve(process.cwd(), path)
  const database = new Database(file)
  // WAL lets readers run beside the writer; the busy timeout makes concurrent writers wait instead of failing.
  database.pragma('journal_mode = WAL')
  database.pragma(`busy_timeout = ${settings.busyTimeout}`)
  database.pragma('foreign_keys = ON')
  const typed: BetterSqliteDatabase = database as BetterSqliteDatabase // rows are objects: nothing turns .raw() on
  const connection = attachSqlite(handle, typed)
  // Heavy SELECTs read on worker threads, each with its own connection: a `:memory:` database has no other.
  if (file !== ':memory:' && settings.readWorkers > 0) {
    const { readWorkers: workers, heavyQueue: queueBound, statementTimeout, busyTimeout } = settings
    const limits = { workers, queueBound, statementTimeout, busyTimeout }
    handle.readers = sqliteReaders(file, limits, planReader(typed), statisticsReader(typed))
  }
  return connection
}

/**
 * SQLite through better-sqlite3: `sqlite:path/to/file.db` (relative to the working directory, or absolute)
 * or `sqlite::memory:`. `statementTimeout` bounds the heavy SELECTs, which run on reader threads; SQLite cannot
 * interrupt a statement on the main thread (a cheap read, a write, every statement of a `:memory:` database).
 */
export const sqliteConnector: DatabaseConnector = {
  urls: ['sqlite:'],
  connect (url, settings) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
    if (path === '') {
      throw new ViewsetErrors.InvalidDatabaseUrl(
        url,
        'a SQLite URL needs a path, as in sqlite:base.db or sqlite::memory:'
      )
    }
    const handle = sqliteHandle(settings.log)
    return {
      dialect: new BoundedSqliteDialect(
        { database: async () => await openSqlite(path, settings, handle) },
        settings.connectionTimeout
      ),
      direct: (compiled) => runDirect(handle, compiled),
      transact: (work) => transactDirect(handle, work),
    }
  },
  adopt (database) {
    if (!isBetterSqliteDatabase(database)) {
      invalidOption('handle', 'a SQLite Kysely takes the better-sqlite3 Database given to its SqliteDialect')
    }
    // The same statement cache as a connection createDatabase opens; Kysely keeps preparing its own.
    const handle = sqliteHandle(undefined)
    attachSqlite(handle, database)
    return {
      direct: (compiled) => runDirect(handle, compiled),
      viaKysely: () => {},
      // Kysely's SqliteDriver runs its transactions on this same connection: busy() sees one open and declines.
      transact: (work) => transactDirect(handle, work),
    }
  },
}
