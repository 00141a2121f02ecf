import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import type { Kysely, LogEvent } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'
import type { ReplicaOptions } from 'fastify-viewsets'
import { dialects } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { ownCluster } from '../helpers/hostile-cluster.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'
import { streamingReplica } from '../helpers/streaming-replica.js'

// A real PostgreSQL streaming replica (pg_basebackup of a cluster the test owns) that applies each commit 2 s after
// it (recovery_min_apply_delay): its lag is certain, so a read from it right after a write is certainly stale.

const applyDelay = 2000

interface Logged { db: Kysely<ItemsDB>; rows: () => string[] }

/** A database whose log keeps the row reads it ran (not the lag measures). */
function logged (t: TestContext, url: string): Logged {
  const queries: string[] = []
  const log = (event: LogEvent) => {
    if (event.level === 'query' && /from "items"/.test(event.query.sql)) queries.push(event.query.sql)
  }
  const db = createDatabase<ItemsDB>(url, { log, connectionTimeout: 1000 })
  t.after(async () => { await db.destroy() })
  return { db, rows: () => queries.splice(0) }
}

async function setUp (t: TestContext) {
  const cluster = await ownCluster(t)
  const primary = logged(t, cluster.url)
  await createItemsTable({ db: primary.db, dialect: 'postgres', url: cluster.url, queries: [] })
  const replicaServer = await streamingReplica(t, cluster, `${applyDelay}ms`)
  const replica = logged(t, replicaServer.url)
  // One commit replayed: until then the replica cannot say how far behind it is, and is not read.
  await primary.db.insertInto('items').values({ name: 'seed' }).execute()
  await sql`truncate items restart identity`.execute(primary.db)
  await waitFor(async () => {
    const { rows } = await sql<{ replayed: boolean }>`select pg_last_xact_replay_timestamp() is not null as replayed`
      .execute(replica.db)
    return rows[0]?.replayed === true
  })
  await waitFor(async () => (await replica.db.selectFrom('items').select('id').execute()).length === 0)
  return { primary, replica, replicaServer }
}

/** Polls `check` every 50 ms until it holds (at most 20 s). */
async function waitFor (check: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; tries < 400; tries++) {
    if (await check().catch(() => false)) return
    await sleep(50)
  }
  throw new Error('timed out waiting')
}

async function appOn (t: TestContext, primary: Logged, replica: Logged, options: ReplicaOptions) {
  const app = testApp(t)
  await app.register(createViewset({ db: primary.db, readDb: replica.db, replica: options, table: 'items', schema: Item }), {
    prefix: '/items',
  })
  await app.ready()
  return app
}

/** The `name=value` of the read-after-write cookie a write answered. */
function cookieOf (response: { headers: Record<string, unknown> }): string {
  const header = response.headers['set-cookie']
  const cookie = (Array.isArray(header) ? header : [header]).find((value) => String(value).startsWith('viewset-read-after-write='))
  assert.ok(cookie !== undefined, 'a write sets the read-after-write cookie')
  assert.match(String(cookie), /^viewset-read-after-write=\d+; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax$/)
  return String(cookie).split(';')[0] ?? ''
}

const postgres = dialects.some((dialect) => dialect.name === 'postgres')

// It needs PostgreSQL (TEST_DIALECTS narrows it away otherwise).
if (postgres) {
  describe('a real streaming replica on PostgreSQL', () => {
    test('read-your-writes inside the window; no stale 304; lag and a stopped replica fall back to the primary', async (t) => {
      const { primary, replica, replicaServer } = await setUp(t)
      // A lag bound the delay never reaches: only the cookie sends these reads to the primary.
      const app = await appOn(t, primary, replica, { readAfterWrite: 61_000, maxLag: 60_000, checkInterval: 1000 })
      let staleWithout = 0
      for (let i = 0; i < 10; i++) {
        const created = await app.inject({ method: 'POST', url: '/items', payload: { name: `item ${i}`, price: i } })
        assert.equal(created.statusCode, 201)
        const cookie = cookieOf(created)
        const id = created.json().id
        const got = await app.inject({ url: `/items/${id}`, headers: { cookie } })
        assert.equal(got.statusCode, 200, 'POST → GET with the cookie reads the new row')
        assert.deepEqual(got.json(), created.json())
        const before = got.headers.etag
        // Without the cookie, the replica has not replayed the insert yet.
        if ((await app.inject(`/items/${id}`)).statusCode === 404) staleWithout++

        const patched = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { price: i + 100 }, headers: { cookie } })
        assert.equal(patched.statusCode, 200)
        const after = await app.inject({ url: `/items/${id}`, headers: { cookie: cookieOf(patched), 'if-none-match': String(before) } })
        assert.equal(after.statusCode, 200, 'never a 304 to the tag the primary no longer holds')
        assert.equal(after.json().price, i + 100, 'PATCH → GET is never stale')
        assert.notEqual(after.headers.etag, before)
        const list = await app.inject({ url: '/items', headers: { cookie } })
        assert.equal(list.json().length, i + 1, 'LIST with the cookie sees every row written')
      }
      assert.equal(staleWithout, 10, 'the replica really lags: without the cookie every read right after a write missed it')
      assert.equal((await primary.db.selectFrom('items').select('id').execute()).length, 10)

      // Once the window is over, the client reads the replica again (it has caught up by then).
      await waitFor(async () => (await replica.db.selectFrom('items').select('id').execute()).length === 10)
      primary.rows()
      replica.rows()
      const expired = 'viewset-read-after-write=1000'
      assert.equal((await app.inject({ url: '/items', headers: { cookie: expired } })).statusCode, 200)
      assert.deepEqual(primary.rows(), [], 'an expired window reads the replica')
      assert.equal(replica.rows().length, 1)

      // Lag past maxLag: a write made elsewhere is pending on the replica, whose last replayed commit is older than
      // 1 s, so a client without a cookie reads the primary until the replica has replayed it.
      const bounded = await appOn(t, primary, replica, { readAfterWrite: 1200, maxLag: 1000, checkInterval: 100 })
      await sleep(1100)
      await primary.db.insertInto('items').values({ name: 'written elsewhere' }).execute()
      await sleep(400)
      assert.equal((await bounded.inject('/items')).statusCode, 200) // measures the lag (at most once per 100 ms)
      await sleep(150)
      const lagging = await bounded.inject('/items')
      assert.equal(lagging.statusCode, 200)
      assert.ok(lagging.json().some((row: { name: string }) => row.name === 'written elsewhere'), 'read from the primary')
      assert.equal((await replica.db.selectFrom('items').select('id').execute()).length, 10, 'the replica is still behind')

      // The replica stops: reads answer 200 from the primary, never 503.
      await waitFor(async () => (await replica.db.selectFrom('items').select('id').execute()).length === 11)
      await replicaServer.stop()
      for (let i = 0; i < 5; i++) {
        const list = await app.inject('/items')
        assert.equal(list.statusCode, 200, 'a stopped replica does not answer 503')
        assert.equal(list.json().length, 11)
        const got = await app.inject('/items/1')
        assert.equal(got.statusCode, 200)
        assert.equal(got.json().name, 'item 0')
      }
      assert.equal((await app.inject({ method: 'DELETE', url: '/items/11' })).statusCode, 204)
      assert.equal((await primary.db.selectFrom('items').select('id').execute()).length, 10)
    })
  })
}
