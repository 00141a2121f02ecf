import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset, Viewset } from 'fastify-viewsets'
import type { ListRequest } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'
import { underlyingDatabase } from '../../lib/execution/request-transaction.js'

// readDb stands for a replica. Here it is a second, separate database, so every answer shows which
// one it came from, and each database's query log shows what ran where.
async function primaryAndReplica (
  t: TestContext,
  dialect: TestDialect
): Promise<{ primary: TestDatabase; replica: TestDatabase }> {
  const primary = await testDatabase(t, dialect)
  const replica = await testDatabase(t, dialect)
  for (const database of [primary, replica]) await createItemsTable(database)
  await primary.db
    .insertInto('items')
    .values([{ name: 'on the primary' }])
    .execute()
  await replica.db
    .insertInto('items')
    .values([{ name: 'on the replica' }, { name: 'only on the replica' }])
    .execute()
  primary.queries.length = 0
  replica.queries.length = 0
  return { primary, replica }
}

async function names (db: Kysely<any>): Promise<string[]> {
  return (await db.selectFrom('items').select('name').orderBy('id').execute()).map((row) => row.name)
}

// The replica's lag, measured at most once a second (data/read-routing.ts), is not a read of rows.
const statusQuery = /pg_is_in_recovery|pg_current_wal_lsn|show replica status|^select 1$/
const rowQueries = (queries: string[]) => queries.filter((text) => !statusQuery.test(text.trim()))

const verbs = (queries: string[]) => queries.map((text) => text.trim().split(/\s+/)[0]?.toLowerCase())

for (const dialect of dialects) {
  describe(`readDb on ${dialect.name}`, () => {
    test('LIST and GET read from readDb; POST, PUT, PATCH and DELETE write to db and answer from it', async (t) => {
      const { primary, replica } = await primaryAndReplica(t, dialect)
      const app = testApp(t)
      await app.register(
        createViewset({
          db: primary.db as Kysely<ItemsDB>,
          readDb: replica.db as Kysely<ItemsDB>,
          table: 'items',
          schema: Item,
        }),
        { prefix: '/items' }
      )
      await app.ready()
      // Registration reads the catalog of db: the table must exist on the primary.
      primary.queries.length = 0
      replica.queries.length = 0

      const list = await app.inject('/items')
      assert.equal(list.statusCode, 200)
      assert.deepEqual(
        list.json().map((row: { name: string }) => row.name),
        ['on the replica', 'only on the replica']
      )
      const got = await app.inject('/items/2')
      assert.equal(got.statusCode, 200)
      assert.equal(got.json().name, 'only on the replica')
      assert.deepEqual(rowQueries(primary.queries), [], 'reads never reach the primary')

      replica.queries.length = 0
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'new' } })
      assert.equal(created.statusCode, 201)
      assert.deepEqual(
        created.json(),
        { id: 2, name: 'new', description: null, price: 0, in_stock: true },
        'the row as stored on the primary'
      )
      const patched = await app.inject({ method: 'PATCH', url: '/items/1', payload: { price: 3 } })
      assert.equal(patched.statusCode, 200)
      assert.equal(patched.json().name, 'on the primary')
      const put = await app.inject({ method: 'PUT', url: '/items/2', payload: { name: 'renamed' } })
      assert.equal(put.statusCode, 200)
      assert.equal(put.json().name, 'renamed')
      const deleted = await app.inject({ method: 'DELETE', url: '/items/1' })
      assert.equal(deleted.statusCode, 204)
      // A key only the replica has does not exist for writes.
      const missing = await app.inject({ method: 'DELETE', url: '/items/3' })
      assert.equal(missing.statusCode, 404)
      assert.equal(problemOf(missing).code, 'FST_VIEWSET_NOT_FOUND')

      assert.deepEqual(rowQueries(replica.queries), [], 'writes never reach the replica')
      assert.ok(
        verbs(primary.queries).includes('insert') &&
          verbs(primary.queries).includes('update') &&
          verbs(primary.queries).includes('delete')
      )
      assert.deepEqual(await names(primary.db), ['renamed'])
      assert.deepEqual(await names(replica.db), ['on the replica', 'only on the replica'])
      // Until the replica catches up, a read after a write shows the replica's state.
      assert.equal((await app.inject('/items/1')).json().name, 'on the replica')
    })

    test('a write sets the read-after-write cookie; inside its window the client reads db, after it readDb', async (t) => {
      const { primary, replica } = await primaryAndReplica(t, dialect)
      const app = testApp(t)
      await app.register(
        createViewset({
          db: primary.db as Kysely<ItemsDB>,
          readDb: replica.db as Kysely<ItemsDB>,
          replica: { readAfterWrite: 3000 },
          table: 'items',
          schema: Item,
        }),
        { prefix: '/items' }
      )
      const patched = await app.inject({ method: 'PATCH', url: '/items/1', payload: { price: 7 } })
      assert.equal(patched.statusCode, 200)
      const header = String(patched.headers['set-cookie'])
      const match = /^viewset-read-after-write=(\d+); Max-Age=3; Path=\/; HttpOnly; SameSite=Lax$/.exec(header)
      assert.ok(match !== null, header)
      const until = Number(match[1])
      assert.ok(until > Date.now() + 2000 && until <= Date.now() + 3000)
      const cookie = `viewset-read-after-write=${until}`

      const fresh = await app.inject({ url: '/items/1', headers: { cookie: `theme=dark; ${cookie}` } })
      assert.equal(fresh.statusCode, 200)
      assert.deepEqual([fresh.json().name, fresh.json().price], ['on the primary', 7], 'its own write, from db')
      const freshList = await app.inject({ url: '/items', headers: { cookie } })
      assert.deepEqual(freshList.json().map((row: { name: string }) => row.name), ['on the primary'])
      assert.equal((await app.inject('/items/1')).json().name, 'on the replica', 'other clients read readDb')
      const expired = await app.inject({ url: '/items/1', headers: { cookie: 'viewset-read-after-write=1000' } })
      assert.equal(expired.json().name, 'on the replica', 'after the window: readDb')
      const bad = await app.inject({ url: '/items/1', headers: { cookie: 'viewset-read-after-write=soon' } })
      assert.equal(bad.json().name, 'on the replica', 'a malformed cookie is ignored')

      // A failed write opens no window; a read never sets the cookie.
      const missing = await app.inject({ method: 'DELETE', url: '/items/99' })
      assert.equal(missing.statusCode, 404)
      assert.equal(missing.headers['set-cookie'], undefined)
      assert.equal((await app.inject('/items')).headers['set-cookie'], undefined)
      // A forged window only moves that client's reads to db: nothing changes.
      const forged = await app.inject({ url: '/items', headers: { cookie: 'viewset-read-after-write=9999999999999' } })
      assert.equal(forged.statusCode, 200)
      assert.deepEqual(await names(primary.db), ['on the primary'])
      assert.deepEqual(await names(replica.db), ['on the replica', 'only on the replica'])
    })

    test('readAfterWrite: false sets no cookie; misconfigured replica options fail at construction', async (t) => {
      const { primary, replica } = await primaryAndReplica(t, dialect)
      const base = { db: primary.db as Kysely<ItemsDB>, table: 'items' as const, schema: Item }
      const app = testApp(t)
      const off = { ...base, readDb: replica.db as Kysely<ItemsDB>, replica: { readAfterWrite: false as const } }
      await app.register(createViewset(off), { prefix: '/items' })
      const patched = await app.inject({ method: 'PATCH', url: '/items/1', payload: { price: 2 } })
      assert.equal(patched.statusCode, 200)
      assert.equal(patched.headers['set-cookie'], undefined)
      assert.equal((await app.inject('/items/1')).json().name, 'on the replica')

      assert.throws(() => createViewset({ ...base, replica: {} }), /replica: applies to reads from readDb/)
      const readDb = replica.db as Kysely<ItemsDB>
      assert.throws(
        () => createViewset({ ...base, readDb, replica: { readAfterWrite: 1500 } }),
        /replica\.readAfterWrite: 1500 ms is shorter than maxLag \+ checkInterval \(2000 ms\)/
      )
      assert.throws(() => createViewset({ ...base, readDb, replica: { maxlag: 5 } as never }), /replica\.maxlag: unknown key/)
      assert.throws(() => createViewset({ ...base, readDb, replica: { retryAfter: -1 } }), /replica\.retryAfter: expected a whole/)
    })

    // A SQLite file has no server to go down.
    if (dialect.name !== 'sqlite') {
      test('a readDb that cannot be reached: LIST and GET answer from db, never 503', async (t) => {
        const { primary } = await primaryAndReplica(t, dialect)
        // Nothing listens on port 1: every connection is refused.
        const down = createDatabase<ItemsDB>(primary.url.replace(/:\d+\//, ':1/'), { connectionTimeout: 1000 })
        t.after(async () => { await down.destroy() })
        const app = testApp(t)
        await app.register(
          createViewset({ db: primary.db as Kysely<ItemsDB>, readDb: down, table: 'items', schema: Item }),
          { prefix: '/items' }
        )
        for (let i = 0; i < 3; i++) {
          const list = await app.inject('/items')
          assert.equal(list.statusCode, 200)
          assert.deepEqual(list.json().map((row: { name: string }) => row.name), ['on the primary'])
          const got = await app.inject('/items/1')
          assert.equal(got.statusCode, 200)
          assert.equal(got.json().name, 'on the primary')
        }
        assert.equal((await app.inject('/items/2')).statusCode, 404)
      })
    }

    test('without readDb, reads and writes share db; overrides choose with this.readDb and this.db', async (t) => {
      class FreshReads extends Viewset<ItemsDB, 'items', typeof Item> {
        // Reads that must see the latest writes can go to the primary explicitly.
        override async list (request: ListRequest<{ limit: number; offset: number }>) {
          return await this.query(this.db)
            .orderBy('id')
            .limit(request.query.limit)
            .offset(request.query.offset)
            .execute()
        }
      }
      const { primary, replica } = await primaryAndReplica(t, dialect)
      const app = testApp(t)
      await app.register(createViewset({ db: primary.db as Kysely<ItemsDB>, table: 'items', schema: Item }), {
        prefix: '/plain',
      })
      const fresh = new FreshReads({
        db: primary.db as Kysely<ItemsDB>,
        readDb: replica.db as Kysely<ItemsDB>,
        table: 'items',
        schema: Item,
      })
      await app.register(fresh.register(), { prefix: '/fresh' })
      assert.equal(fresh.readDb, replica.db)
      // Wrapped so that a request transaction (a batch) reaches its statements: over the same database.
      assert.equal(underlyingDatabase(fresh.db), primary.db)

      assert.deepEqual(
        (await app.inject('/plain')).json().map((row: { name: string }) => row.name),
        ['on the primary']
      )
      assert.deepEqual(
        (await app.inject('/fresh')).json().map((row: { name: string }) => row.name),
        ['on the primary']
      )
      assert.equal((await app.inject('/fresh/2')).json().name, 'only on the replica', 'GET still reads readDb')
    })
  })
}
