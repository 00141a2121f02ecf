// Issue 37 item 2: the operators `nin`, `startswith` and `endswith`, on every dialect.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { createViewset } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

type ItemOptions = Partial<ViewsetOptions<ItemsDB, 'items', typeof Item>>

const options: ItemOptions = {
  orderingFields: ['name'],
  defaultOrder: 'name',
  filterFields: {
    name: ['nin', 'startswith', 'endswith'],
    price: ['nin'],
    description: ['nin', 'startswith', 'endswith'],
  },
  maxSearchLength: 10,
}

const shop = [
  { name: 'bread', price: 2, description: 'Fresh every morning' },
  { name: 'Brown bread', price: 3, description: null },
  { name: 'butter', price: 5, description: '50% salted' },
  { name: 'cheese', price: 10, description: '500 grams' },
  { name: 'milk', price: 1, description: null },
  { name: 'rye BREAD', price: 3, description: 'dark_50%' },
]

type ItemsApp = TestDatabase & { app: ReturnType<typeof testApp> }

async function itemsApp (t: TestContext, dialect: TestDialect): Promise<ItemsApp> {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  await database.db.insertInto('items').values(shop).execute()
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, ...options }), { prefix: '/items' })
  await app.ready()
  return { app, ...database }
}

const names = (response: { json: () => any }): string[] => response.json().map((row: { name: string }) => row.name)

/** The names stored, in name order: a read changes none. */
async function stored (database: TestDatabase): Promise<string[]> {
  const rows = await database.db.selectFrom('items').select('name').orderBy('id').execute()
  return rows.map((row) => row.name)
}

for (const dialect of dialects) {
  describe(`query operators (${dialect.name})`, () => {
    test('nin excludes the listed values, and a NULL never matches', async (t) => {
      const database = await itemsApp(t, dialect)
      const { app } = database
      const byPrice = await app.inject({ url: '/items?price__nin=2,3' })
      assert.equal(byPrice.statusCode, 200)
      assert.match(String(byPrice.headers['content-type']), /^application\/json/)
      assert.deepEqual(names(byPrice), ['butter', 'cheese', 'milk'])
      const byDescription = await app.inject({ url: '/items?description__nin=dark_50%25,500%20grams' })
      assert.equal(byDescription.statusCode, 200)
      // The two NULL descriptions are not "none of these": as for ne, they never match.
      assert.deepEqual(names(byDescription), ['bread', 'butter'])
      assert.deepEqual(await stored(database), shop.map((row) => row.name))
    })

    test('startswith and endswith match case-insensitively, with % and _ matching themselves', async (t) => {
      const database = await itemsApp(t, dialect)
      const { app } = database
      const starts = await app.inject({ url: '/items?name__startswith=BR' })
      assert.equal(starts.statusCode, 200)
      assert.deepEqual(new Set(names(starts)), new Set(['bread', 'Brown bread']))
      const ends = await app.inject({ url: '/items?name__endswith=Bread' })
      assert.deepEqual(new Set(names(ends)), new Set(['bread', 'Brown bread', 'rye BREAD']))
      const percent = await app.inject({ url: '/items?description__startswith=50%25' })
      assert.deepEqual(names(percent), ['butter'])
      const underscore = await app.inject({ url: '/items?description__endswith=_50%25' })
      assert.deepEqual(names(underscore), ['rye BREAD'])
      const none = await app.inject({ url: '/items?description__endswith=x50%25' })
      assert.deepEqual(names(none), [])
      assert.deepEqual(await stored(database), shop.map((row) => row.name))
    })

    test('bounds: a startswith past maxSearchLength and a nin of 101 values are 400s naming the parameter', async (t) => {
      const database = await itemsApp(t, dialect)
      const { app } = database
      const long = await app.inject({ url: `/items?name__startswith=${'a'.repeat(11)}` })
      assert.equal(long.statusCode, 400)
      const problem = problemOf(long)
      assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
      assert.equal(problem.errors?.[0]?.field, 'name__startswith')
      const many = await app.inject({ url: `/items?price__nin=${Array.from({ length: 101 }, (_, i) => i).join(',')}` })
      assert.equal(many.statusCode, 400)
      assert.equal(problemOf(many).errors?.[0]?.field, 'price__nin')
      assert.match(problemOf(many).detail, /at most 100/)
      const nul = await app.inject({ url: '/items?name__endswith=a%00' })
      assert.equal(nul.statusCode, 400)
      assert.equal(problemOf(nul).errors?.[0]?.field, 'name__endswith')
      const typed = await app.inject({ url: '/items?price__nin=1,abc' })
      assert.equal(typed.statusCode, 400)
      assert.equal(problemOf(typed).errors?.[0]?.field, 'price__nin')
      assert.deepEqual(await stored(database), shop.map((row) => row.name))
    })

    test('startup refuses nin on a boolean and startswith/endswith on a number, naming filterFields', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      for (const filterFields of [{ in_stock: ['nin'] }, { price: ['startswith'] }, { price: ['endswith'] }] as const) {
        const mount = async (): Promise<void> => {
          const app = testApp(t)
          await app.register(createViewset({ db: database.db, table: 'items', schema: Item, filterFields }))
          await app.ready()
        }
        await assert.rejects(mount, (error: Error & { code?: string }) => {
          assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
          assert.match(error.message, /filterFields/)
          assert.match(error.message, /does not apply to a (boolean|number) field/)
          return true
        })
      }
    })
  })
}
