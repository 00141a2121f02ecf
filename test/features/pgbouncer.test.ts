import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'
import type { CreateDatabaseOptions } from 'fastify-viewsets'
import { dialects } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'
import { pgbouncerBinary, startPgBouncer } from '../helpers/pgbouncer.js'
import type { PgBouncer } from '../helpers/pgbouncer.js'
import pg from 'pg'
import { cancelsSafely, checkServer } from '../../lib/dialect/postgres/postgres-server-check.js'
import type { ConnectionSettings } from '../../lib/dialect/shared/connection.js'

// The suite's core paths through a real PgBouncer in transaction mode (Debian's package; CI installs it):
// what `pooler: 'pgbouncer'` changes, and what goes wrong without it.
const postgres = dialects.find((dialect) => dialect.name === 'postgres')
const missing = postgres === undefined
  ? 'no PostgreSQL'
  : pgbouncerBinary === undefined && process.env.CI === undefined ? 'PgBouncer is not installed' : undefined

/** The server's statement_timeout for the database the CRUD tests use; createDatabase asks for the same. */
const databaseTimeout = 5000
/** PgBouncer's server connections per database: fewer than the app's pool, so clients share them. */
const serverPoolSize = 2

/** The settings checkServer reads, as createDatabase gives them without options (statementTimeout: see above). */
const connectionSettings: ConnectionSettings = {
  poolSize: 10,
  connectionTimeout: 5000,
  busyTimeout: 5000,
  statementTimeout: databaseTimeout,
  preparedStatements: true,
  cancelOnDisconnect: undefined,
  pooler: undefined,
  log: undefined,
  readWorkers: 0,
  heavyQueue: 50,
}

/** One worker's rounds of POST, GET, LIST, PATCH and DELETE; the answers that were not the expected ones. */
async function crudRounds (app: ReturnType<typeof testApp>, worker: string, rounds: number) {
  const failures: Array<{ status: number, code: string }> = []
  type Response = { statusCode: number, headers: Record<string, unknown>, json: () => any }
  const expect = (response: Response, status: number) => {
    if (response.statusCode !== status) failures.push({ status: response.statusCode, code: problemOf(response).code })
    return response.statusCode === status
  }
  for (let round = 0; round < rounds; round++) {
    const created = await app.inject({ method: 'POST', url: '/items', payload: { name: `${worker}-${round}` } })
    if (!expect(created, 201)) continue
    const id = Number(created.json().id)
    expect(await app.inject(`/items/${id}`), 200)
    expect(await app.inject('/items?limit=5'), 200)
    expect(await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { price: round } }), 200)
    expect(await app.inject({ method: 'DELETE', url: `/items/${id}` }), 204)
  }
  return failures
}

describe('behind PgBouncer in transaction mode', { skip: missing }, () => {
  let pgbouncer: PgBouncer
  let admin: Kysely<unknown>
  // Two databases: one with statement_timeout set on the server (the documented fix), one without.
  const suffix = randomBytes(4).toString('hex')
  const configured = `vs_pgb_${suffix}`
  const plain = `vs_pgb_plain_${suffix}`
  const server = new URL(postgres?.url ?? 'postgres://127.0.0.1')

  /** The URL of `database` through PgBouncer (or straight to the server). */
  const urlOf = (database: string, through = true) => {
    const url = new URL(server)
    url.pathname = `/${database}`
    if (through) url.port = String(pgbouncer.port)
    return url.toString()
  }

  before(async () => {
    admin = createDatabase<unknown>(server.toString())
    await sql`create database ${sql.id(configured)}`.execute(admin)
    await sql`create database ${sql.id(plain)}`.execute(admin)
    await sql.raw(`alter database "${configured}" set statement_timeout = ${databaseTimeout}`).execute(admin)
    const direct = createDatabase<ItemsDB>(urlOf(configured, false))
    await createItemsTable({ db: direct, dialect: 'postgres', url: '', queries: [] })
    await direct.destroy()
    pgbouncer = await startPgBouncer(server, serverPoolSize)
  })

  after(async () => {
    await pgbouncer?.stop()
    await sql`drop database if exists ${sql.id(configured)} with (force)`.execute(admin)
    await sql`drop database if exists ${sql.id(plain)} with (force)`.execute(admin)
    await admin.destroy()
  })

  async function itemsApp (t: TestContext, options: CreateDatabaseOptions) {
    const db = createDatabase<ItemsDB>(urlOf(configured), { statementTimeout: databaseTimeout, ...options })
    t.after(() => db.destroy())
    const app = testApp(t)
    await app.register(createViewset({ db, table: 'items', schema: Item }), { prefix: '/items' })
    return { app, db }
  }

  test('a statement_timeout dropped by the pooler fails at startup, naming the fix', async (t) => {
    const db = createDatabase<ItemsDB>(urlOf(plain), { pooler: 'pgbouncer', statementTimeout: 1000 })
    t.after(() => db.destroy())
    const app = testApp(t)
    app.register(createViewset({ db, table: 'items', schema: Item }), { prefix: '/items' })
    await assert.rejects(async () => { await app.ready() }, (error: Error & { code?: string }) => {
      assert.equal(error.code, 'FST_VIEWSET_STATEMENT_TIMEOUT_IGNORED')
      assert.match(error.message, /statement_timeout = 0 ms, not the statementTimeout of 1000 ms/)
      assert.match(error.message, /ignore_startup_parameters/)
      return true
    })
    // The same database straight to the server gets the startup parameter: nothing to report.
    const direct = createDatabase<unknown>(urlOf(plain, false), { statementTimeout: 1000 })
    t.after(() => direct.destroy())
    const { rows } = await sql<{ setting: string }>`select setting from pg_settings where name = 'statement_timeout'`
      .execute(direct)
    assert.equal(rows[0]?.setting, '1000')
  })

  test('without pooler, startup fails naming the option; named statements forced on collide, each failure named', async (t) => {
    const unnamed = createDatabase<ItemsDB>(urlOf(configured), { statementTimeout: databaseTimeout })
    t.after(() => unnamed.destroy())
    const first = testApp(t)
    first.register(createViewset({ db: unnamed, table: 'items', schema: Item }), { prefix: '/items' })
    await assert.rejects(async () => { await first.ready() }, (error: Error & { code?: string }) => {
      assert.equal(error.code, 'FST_VIEWSET_POOLER_NOT_NAMED')
      assert.match(error.message, /pooler: 'pgbouncer'/)
      return true
    })
    // preparedStatements: true skips the check: what a pooler does to named statements, and how it answers.
    const { app } = await itemsApp(t, { poolSize: 8, preparedStatements: true })
    const failures = (await Promise.all(Array.from({ length: 8 }, (_, worker) => crudRounds(app, `off${worker}`, 5))))
      .flat()
    t.diagnostic(`named statements through PgBouncer: ${failures.length} failures of at most 200 requests`)
    assert.ok(failures.length > 0, '8 clients on 2 server connections: their statement names collide')
    for (const failure of failures) assert.deepEqual(failure, { status: 500, code: 'FST_VIEWSET_POOLER_STATEMENTS' })
  })

  test("with pooler: 'pgbouncer', CRUD through it has no error", async (t) => {
    const { app, db } = await itemsApp(t, { poolSize: 8, pooler: 'pgbouncer' })
    await db.deleteFrom('items').execute() // what the test before left
    const failures = (await Promise.all(Array.from({ length: 8 }, (_, worker) => crudRounds(app, `on${worker}`, 10))))
      .flat()
    t.diagnostic(`with pooler: ${failures.length} failures of 400 requests`)
    assert.deepEqual(failures, [])
    assert.deepEqual(await db.selectFrom('items').selectAll().execute(), [], 'every row created was deleted')
  })

  test('cancel-on-disconnect stays off below PgBouncer 1.20.1, which answers SHOW VERSION only on its console', async () => {
    // The admin console answers SHOW VERSION; an application's connection reaches the server, which does not.
    const console = createDatabase<unknown>(urlOf('pgbouncer'), { statementTimeout: 0, preparedStatements: false })
    const { rows } = await sql<{ version: string }>`show version`.execute(console).finally(() => console.destroy())
    const version = String(rows[0]?.version)
    assert.match(version, /^PgBouncer 1\.18\./, "Debian 12's PgBouncer")
    assert.equal(cancelsSafely(version), false)
    const decide = async (database: string, settings: Partial<ConnectionSettings>) =>
      await checkServer((config) => new pg.Client(config), { connectionString: urlOf(database) }, {
        ...connectionSettings,
        ...settings,
      })
    assert.equal(await decide(configured, { pooler: 'pgbouncer' }), false, 'no answer: assumed old')
    assert.equal(await decide(configured, { pooler: 'pgbouncer', cancelOnDisconnect: true }), true, 'asked for')
    assert.equal(await decide(configured, {}), true, 'no pooler named: on by default')
    assert.equal(cancelsSafely('PgBouncer 1.20.0'), false)
    assert.equal(cancelsSafely('PgBouncer 1.20.1'), true)
    assert.equal(cancelsSafely('PgBouncer 1.23.1'), true)
    assert.equal(cancelsSafely('PgBouncer 2.0.0'), true)
  })
})
