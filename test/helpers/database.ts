import { randomBytes } from 'node:crypto'
import type { TestContext } from 'node:test'
import {
  DummyDriver, Kysely, MysqlDialect, PostgresDialect, sql, SqliteAdapter, SqliteDialect, SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely'
import type { ColumnDefinitionBuilder, Dialect, KyselyPlugin, LogEvent } from 'kysely'
import { createDatabase, withPreparedStatements } from '../../lib/index.js'

/** A database the suite runs on, chosen by environment: SQLite always, PostgreSQL and MySQL when their URLs are set. */
export interface TestDialect {
  name: 'sqlite' | 'postgres' | 'mysql'
  url: string
}

function configured (): TestDialect[] {
  const list: TestDialect[] = [{ name: 'sqlite', url: 'sqlite::memory:' }]
  const postgres = process.env.TEST_POSTGRES_URL
  const mysql = process.env.TEST_MYSQL_URL
  if (postgres !== undefined && postgres !== '') list.push({ name: 'postgres', url: postgres })
  if (mysql !== undefined && mysql !== '') list.push({ name: 'mysql', url: mysql })
  // In CI the PostgreSQL suite is required: a missing server is a failure, not a skip.
  if (process.env.CI !== undefined && postgres === undefined) {
    throw new Error('CI is set but TEST_POSTGRES_URL is not: the PostgreSQL suite is required')
  }
  const only = process.env.TEST_DIALECTS?.split(',').map((name) => name.trim())
  return only === undefined ? list : list.filter((dialect) => only.includes(dialect.name))
}

/** The dialects every feature test runs on. */
export const dialects: TestDialect[] = configured()

export interface TestDatabase {
  db: Kysely<any>
  dialect: TestDialect['name']
  /** A URL that reaches the same isolated database (its own schema or database). */
  url: string
  /** SQL texts run since the last reset, from Kysely's log hook. */
  queries: string[]
}

/**
 * The library's own reads of PostgreSQL's statistics (dialect/postgres/postgres-statistics.ts): asynchronous, at most
 * once a minute per column or statement, and no request's statement, so the statement counts leave them out.
 */
const statisticsRead = /pg_catalog\.pg_stats|^explain \(analyze, format json\)/

/**
 * A fresh, isolated database for one test: a new in-memory SQLite database, a new PostgreSQL schema
 * (as the connection's search_path), or a new MySQL database. It is dropped when the test ends.
 */
export async function testDatabase (
  t: TestContext,
  dialect: TestDialect,
  options: { poolSize?: number; connectionTimeout?: number } = {}
): Promise<TestDatabase> {
  const queries: string[] = []
  const log = (event: LogEvent) => {
    if (event.level === 'query' && !statisticsRead.test(event.query.sql)) queries.push(event.query.sql)
  }
  const name = `vs_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`
  let url = dialect.url
  if (dialect.name === 'postgres') {
    const admin = createDatabase<any>(dialect.url)
    await sql`create schema ${sql.id(name)}`.execute(admin)
    await admin.destroy()
    const parsed = new URL(dialect.url)
    parsed.searchParams.set('options', `-c search_path=${name}`)
    url = parsed.toString()
    t.after(async () => {
      const cleanup = createDatabase<any>(dialect.url)
      await sql`drop schema if exists ${sql.id(name)} cascade`.execute(cleanup)
      await cleanup.destroy()
    })
  } else if (dialect.name === 'mysql') {
    const admin = createDatabase<any>(dialect.url)
    await sql`create database ${sql.id(name)}`.execute(admin)
    await admin.destroy()
    const parsed = new URL(dialect.url)
    parsed.pathname = `/${name}`
    url = parsed.toString()
    t.after(async () => {
      const cleanup = createDatabase<any>(dialect.url)
      await sql`drop database if exists ${sql.id(name)}`.execute(cleanup)
      await cleanup.destroy()
    })
  }
  const db = createDatabase<any>(url, { log, ...options })
  t.after(() => db.destroy())
  return { db, dialect: dialect.name, url, queries }
}

/** How a test opens its database: createDatabase, or a Kysely the user built over a driver they opened (wrapped or
 * not). */
export type DatabaseSetup = 'createDatabase' | 'own Kysely' | 'own Kysely, wrapped'
export const databaseSetups: readonly DatabaseSetup[] = ['createDatabase', 'own Kysely', 'own Kysely, wrapped']

/**
 * A fresh, isolated database as `setup` opens it. An own Kysely is built the way a user builds one
 * (better-sqlite3, a pg Pool or a mysql2 pool, handed to Kysely's own dialect), with a logging Kysely
 * unless `logged` is false, and wrapped by withPreparedStatements for the third setup; on SQLite,
 * `sqliteStatements` collects every statement the connection runs.
 */
export async function setupDatabase (
  t: TestContext,
  dialect: TestDialect,
  setup: DatabaseSetup,
  options: { logged?: boolean; plugins?: KyselyPlugin[]; sqliteStatements?: string[] } = {}
): Promise<TestDatabase> {
  const isolated = await testDatabase(t, dialect)
  if (setup === 'createDatabase') return isolated
  const queries: string[] = []
  const log = (event: LogEvent) => {
    if (event.level === 'query' && !statisticsRead.test(event.query.sql)) queries.push(event.query.sql)
  }
  let handle: object
  let kyselyDialect: Dialect
  if (dialect.name === 'sqlite') {
    const { default: Database } = await import('better-sqlite3')
    // better-sqlite3's own trace of every statement it runs, Kysely's or not.
    const verbose = (sql: unknown) => { options.sqliteStatements?.push(String(sql)) }
    const database = new Database(':memory:', options.sqliteStatements === undefined ? {} : { verbose })
    handle = database
    kyselyDialect = new SqliteDialect({ database })
  } else if (dialect.name === 'postgres') {
    const { default: pg } = await import('pg')
    const pool = new pg.Pool({ connectionString: isolated.url, max: 5 })
    pool.on('error', () => {})
    handle = pool
    kyselyDialect = new PostgresDialect({ pool })
  } else {
    const mysql = await import('mysql2')
    const pool = mysql.createPool({ uri: isolated.url, connectionLimit: 5, timezone: 'Z' })
    handle = pool
    kyselyDialect = new MysqlDialect({ pool })
  }
  const own = new Kysely<any>({
    dialect: kyselyDialect,
    plugins: options.plugins ?? [],
    ...(options.logged === false ? {} : { log }),
  })
  t.after(() => own.destroy())
  return {
    db: setup === 'own Kysely' ? own : withPreparedStatements(own, handle),
    dialect: dialect.name,
    url: isolated.url,
    queries,
  }
}

/** An auto-incrementing integer primary key, in each dialect's spelling. */
export function autoIncrement (
  dialect: TestDialect['name']
): [string, (column: ColumnDefinitionBuilder) => ColumnDefinitionBuilder] {
  if (dialect === 'postgres') return ['serial', (column) => column.primaryKey()]
  if (dialect === 'mysql') return ['integer', (column) => column.primaryKey().autoIncrement()]
  return ['integer', (column) => column.primaryKey().autoIncrement()]
}

/** A timezone-aware timestamp type with a database default of now. */
export function timestamp (
  dialect: TestDialect['name']
): [string, (column: ColumnDefinitionBuilder) => ColumnDefinitionBuilder] {
  if (dialect === 'postgres') return ['timestamptz', (column) => column.notNull().defaultTo(sql`now()`)]
  if (dialect === 'mysql') return ['datetime(3)', (column) => column.notNull().defaultTo(sql`current_timestamp(3)`)]
  return ['text', (column) => column.notNull().defaultTo(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`)]
}

/**
 * A Kysely instance that compiles SQLite's SQL and runs nothing (Kysely's DummyDriver): for tests of statement shapes
 * and cost classes that need no database.
 */
export function compileOnlySqlite<DB = Record<string, Record<string, unknown>>> (): Kysely<DB> {
  return new Kysely<DB>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (kysely) => new SqliteIntrospector(kysely),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  })
}
