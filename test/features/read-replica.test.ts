import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { Kysely } from 'kysely'
import { createViewset, Viewset } from 'fastify-viewsets'
import type { ListRequest } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

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
      assert.equal(fresh.db, primary.db)

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
