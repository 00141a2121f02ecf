import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset, viewsetReadiness } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { switchProxy } from '../helpers/switch-proxy.js'

// viewsetReadiness: GET /ready asks each database the app's viewsets use for `select 1`, within a timeout. Here the
// database goes away behind a proxy the test owns (PostgreSQL, MariaDB) or is closed (SQLite); the stress suite
// stops and starts a PostgreSQL cluster of its own (test/stress/readiness-cluster.test.ts).

const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })

async function createItems (db: Kysely<any>, dialect: TestDialect['name'], table: string): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable(table).addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(255)', (column) => column.notNull()).execute()
}

/** A database the test can take down and bring back, and the log of the statements it was sent. */
async function switchableDatabase (t: TestContext, dialect: TestDialect) {
  const { db: setup, url, queries } = await testDatabase(t, dialect)
  await createItems(setup, dialect.name, 'obs_ready_items')
  await createItems(setup, dialect.name, 'obs_ready_others')
  const sent: string[] = []
  const log = (event: { level: string, query: { sql: string } }) => { if (event.level === 'query') sent.push(event.query.sql) }
  if (dialect.name === 'sqlite') return { db: setup, sent: queries, down: async () => { await setup.destroy() }, up: undefined }
  const target = new URL(url)
  const proxy = await switchProxy(t, target.hostname, Number(target.port))
  const db = createDatabase<any>(proxy.through(url), { connectionTimeout: 1000, log })
  t.after(() => db.destroy())
  return { db, sent, down: proxy.down, up: proxy.up }
}

for (const dialect of dialects) {
  describe(`readiness on ${dialect.name}`, () => {
    test('200 while every database answers, 503 problem+json when one is down, 200 once it is back', async (t) => {
      const { db, sent, down, up } = await switchableDatabase(t, dialect)
      const other = await testDatabase(t, dialect)
      await createItems(other.db, dialect.name, 'obs_ready_elsewhere')
      const app = testApp(t)
      await app.register(viewsetReadiness, { timeout: 1500 })
      await app.register(createViewset({ db, table: 'obs_ready_items', schema: Item }), { prefix: '/items' })
      await app.register(createViewset({ db, table: 'obs_ready_others', schema: Item }), { prefix: '/others' })
      await app.register(createViewset({ db: other.db, table: 'obs_ready_elsewhere', schema: Item }), { prefix: '/elsewhere' })
      await app.ready()

      const ready = await app.inject({ method: 'GET', url: '/ready' })
      assert.equal(ready.statusCode, 200, ready.body)
      assert.deepEqual(ready.json(), { status: 'ready', databases: 2 }, 'two viewsets on one database ask it once')
      sent.length = 0
      const probes = await Promise.all([1, 2, 3].map(async () => await app.inject({ method: 'GET', url: '/ready' })))
      assert.deepEqual(probes.map((probe) => probe.statusCode), [200, 200, 200])
      assert.equal(sent.filter((text) => /^select 1$/i.test(text)).length, 1, 'concurrent probes share one check')

      await down()
      const notReady = await app.inject({ method: 'GET', url: '/ready' })
      assert.equal(notReady.statusCode, 503, notReady.body)
      const body = problemOf(notReady)
      assert.equal(body.code, 'FST_VIEWSET_UNAVAILABLE')
      assert.equal(body.detail, '1 of 2 databases did not answer within 1500 ms')
      assert.equal(notReady.headers['retry-after'], '1')
      assert.doesNotMatch(notReady.body, /127\.0\.0\.1|ECONN|select|obs_ready/i, 'it names no host, error or table')
      if (up === undefined) return // a closed SQLite database stays closed
      await up()
      const back = await app.inject({ method: 'GET', url: '/ready' })
      assert.equal(back.statusCode, 200, back.body)
      assert.equal((await app.inject({ method: 'GET', url: '/items' })).statusCode, 200)
    })
  })
}

test('readiness options are checked at registration', async (t) => {
  for (const [options, option] of [[{ path: 'ready' }, 'path'], [{ timeout: 0 }, 'timeout'], [{ timeout: Number.NaN }, 'timeout']] as const) {
    const app = testApp(t)
    await assert.rejects(async () => { await app.register(viewsetReadiness, options) }, (error: any) => {
      assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
      assert.ok(error instanceof TypeError)
      assert.match(error.message, new RegExp(`option ${option}:`))
      return true
    })
  }
})

test('an application without viewsets is ready, with no database to ask', async (t) => {
  const app = testApp(t)
  await app.register(viewsetReadiness, { path: '/health/ready' })
  const response = await app.inject({ method: 'GET', url: '/health/ready' })
  assert.deepEqual({ status: response.statusCode, body: response.json() }, { status: 200, body: { status: 'ready', databases: 0 } })
})
