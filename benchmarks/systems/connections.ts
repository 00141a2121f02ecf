import Database from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import type { BenchDB } from '../data.js'
import type { DatabaseTarget } from '../seed.js'

// Connections as a user opens them, shared by the hand-written systems and the viewset over the user's
// own Kysely: one better-sqlite3 connection with the usual pragmas, or a pg pool of 10.

/** A better-sqlite3 connection to the benchmark file: WAL, a busy timeout and foreign keys, as users set them. */
export function openSqlite (file: string): Database.Database {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('busy_timeout = 5000')
  db.pragma('foreign_keys = ON')
  return db
}

/** A pg pool of 10 connections (the size createDatabase and Platformatic use here). */
export function openPool (url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 10 })
  pool.on('error', () => {})
  return pool
}

/** A Kysely instance built the way most teams already have one, Kysely's own dialect over the driver, and that driver's
 * handle. */
export function usersKysely (target: DatabaseTarget): { db: Kysely<BenchDB>; handle: Database.Database | pg.Pool } {
  if (target.kind === 'sqlite') {
    const database = openSqlite(target.file)
    return { db: new Kysely<BenchDB>({ dialect: new SqliteDialect({ database }) }), handle: database }
  }
  const pool = openPool(target.url)
  return { db: new Kysely<BenchDB>({ dialect: new PostgresDialect({ pool }) }), handle: pool }
}
