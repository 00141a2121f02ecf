import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { sql } from 'kysely'
import type { KyselyPlugin } from 'kysely'
import { createViewset, withPreparedStatements } from 'fastify-viewsets'
import { dialects, setupDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

// A viewset over a Kysely the user built, wrapped by withPreparedStatements: the same answers as
// createDatabase, with the user's plugins, transactions and pool.

/** A plugin that counts the results it sees: the user's plugins must still see the rows of the shortcut. */
function countingPlugin (): { plugin: KyselyPlugin; results: number[] } {
  const results: number[] = []
  return {
    results,
    plugin: {
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }) => {
        results.push(result.rows.length)
        return result
      },
    },
  }
}

async function wrapped (t: TestContext, dialect: TestDialect, plugins: KyselyPlugin[] = []) {
  const database = await setupDatabase(t, dialect, 'own Kysely, wrapped', { logged: false, plugins })
  await createItemsTable(database)
  await database.db
    .insertInto('items')
    .values([
      { name: 'Bread', price: 2 },
      { name: 'Milk', price: 1 },
    ])
    .execute()
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, orderingFields: ['price'] }), {
    prefix: '/items',
  })
  return { app, db: database.db }
}

for (const dialect of dialects) {
  describe(`withPreparedStatements on ${dialect.name}`, () => {
    test("reads and writes answer as on createDatabase, twice over (from the statement caches), through the user's plugins", async (t) => {
      const { plugin, results } = countingPlugin()
      const { app } = await wrapped(t, dialect, [plugin])
      for (const round of [1, 2]) {
        const list = await app.inject({ url: '/items?order_by=price' })
        assert.equal(list.statusCode, 200)
        assert.deepEqual(
          list.json().map((row: { name: string }) => row.name),
          ['Milk', 'Bread']
        )
        const one = await app.inject({ url: '/items/1' })
        assert.equal(one.statusCode, 200)
        assert.equal(one.json().name, 'Bread')
        const created = await app.inject({
          method: 'POST',
          url: '/items',
          payload: { name: `Eggs ${round}`, price: 3 },
        })
        assert.equal(created.statusCode, 201)
        const id = created.json().id as number
        const patched = await app.inject({
          method: 'PATCH',
          url: `/items/${id}`,
          payload: { price: 4 },
          headers: { 'content-type': 'application/merge-patch+json' },
        })
        assert.equal(patched.statusCode, 200)
        assert.deepEqual(
          { name: patched.json().name, price: patched.json().price },
          { name: `Eggs ${round}`, price: 4 }
        )
        assert.equal((await app.inject({ method: 'DELETE', url: `/items/${id}` })).statusCode, 204)
        assert.equal((await app.inject({ url: `/items/${id}` })).statusCode, 404)
      }
      // Every statement's rows went through the plugin, whichever path it took.
      assert.ok(results.length >= 14, String(results.length))
    })

    test("db.transaction() of the wrapper is the user's: it commits and rolls back on their connection", async (t) => {
      const { app, db } = await wrapped(t, dialect)
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ name: 'Committed' }).execute()
      })
      await db
        .transaction()
        .execute(async (trx) => {
          await trx.insertInto('items').values({ name: 'Rolled back' }).execute()
          throw new Error('roll back')
        })
        .catch(() => {})
      const list = await app.inject({ url: '/items' })
      assert.deepEqual(
        list.json().map((row: { name: string }) => row.name),
        ['Bread', 'Milk', 'Committed']
      )
    })
  })
}

const postgres = dialects.find((dialect) => dialect.name === 'postgres')
if (postgres !== undefined) {
  test("on PostgreSQL the user's pool keeps the statements viewsets compile as named statements", async (t) => {
    const { app, db } = await wrapped(t, postgres)
    for (let round = 0; round < 3; round++) assert.equal((await app.inject({ url: '/items/1' })).statusCode, 200)
    const { rows } = await sql<{
      statement: string
    }>`select statement from pg_prepared_statements where name like 'fastify_viewsets_%'`.execute(db)
    assert.ok(
      rows.some((row) => row.statement.startsWith('select "id", "name"')),
      JSON.stringify(rows)
    )
  })
}

test('withPreparedStatements refuses a handle of another database, and a transaction', async (t) => {
  const sqlite = dialects.find((dialect) => dialect.name === 'sqlite')
  if (sqlite === undefined) return
  const database = await setupDatabase(t, sqlite, 'own Kysely', { logged: false })
  assert.throws(() => withPreparedStatements(database.db, { connect: () => {} }), {
    code: 'FST_VIEWSET_INVALID_OPTION',
  })
  await database.db.transaction().execute(async (trx) => {
    assert.throws(() => withPreparedStatements(trx, {}), { code: 'FST_VIEWSET_INVALID_OPTION' })
  })
})
