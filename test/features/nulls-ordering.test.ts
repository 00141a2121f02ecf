// Issue 37 item 3: `order_by=-price.nullslast,name` / `.nullsfirst`, with offset and cursor pages, on every dialect.
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

// Lower-case ASCII descriptions: the same order under every collation; ties broken by id.
const shop = [
  { name: 'a', price: 2, description: 'fresh' },
  { name: 'b', price: 3, description: null },
  { name: 'c', price: 5, description: 'salted' },
  { name: 'd', price: 10, description: 'dark' },
  { name: 'e', price: 1, description: null },
  { name: 'f', price: 3, description: 'dark' },
  { name: 'g', price: 4, description: null },
]

type ItemsApp = TestDatabase & { app: ReturnType<typeof testApp> }

async function itemsApp (t: TestContext, dialect: TestDialect, extra: ItemOptions = {}): Promise<ItemsApp> {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  await database.db.insertInto('items').values(shop).execute()
  const app = testApp(t)
  const options: ItemOptions = { orderingFields: ['description', 'price', 'name'], ...extra }
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, ...options }), { prefix: '/items' })
  await app.ready()
  return { app, ...database }
}

const names = (response: { json: () => any }): string[] => response.json().map((row: { name: string }) => row.name)

/** The expected order of `description` with NULLs `nulls`, then id (the seed's order, which names follow). */
function expected (descending: boolean, nulls: 'first' | 'last'): string[] {
  const rank = (value: string | null) => (value === null ? (nulls === 'first' ? -1 : 1) : 0)
  return [...shop]
    .sort((a, b) => {
      const byNull = rank(a.description) - rank(b.description)
      if (byNull !== 0 || a.description === null || b.description === null) return byNull
      const order = a.description < b.description ? -1 : a.description > b.description ? 1 : 0
      return descending ? -order : order
    })
    .map((row) => row.name)
}

/** Follows `rel` links from `url` to the end, gathering each page's names. */
async function follow (app: ItemsApp['app'], url: string, rel: 'next' | 'prev'): Promise<{ seen: string[], last: string }> {
  const seen: string[] = []
  let next: string | undefined = url
  let last = url
  while (next !== undefined) {
    last = next
    const page: Awaited<ReturnType<typeof app.inject>> = await app.inject({ url: next })
    assert.equal(page.statusCode, 200, page.body)
    seen.push(...(rel === 'next' ? names(page) : names(page).reverse()))
    const link = new RegExp(`<([^>]+)>; rel="${rel}"`).exec(String(page.headers.link ?? ''))?.[1]
    next = link === undefined ? undefined : link.slice(link.indexOf('/items'))
  }
  return { seen, last }
}

const orders: Array<[string, boolean, 'first' | 'last']> = [
  ['description', false, 'last'],
  ['description.nullslast', false, 'last'],
  ['description.nullsfirst', false, 'first'],
  ['-description', true, 'first'],
  ['-description.nullsfirst', true, 'first'],
  ['-description.nullslast', true, 'last'],
]

for (const dialect of dialects) {
  describe(`nulls first / last (${dialect.name})`, () => {
    test('each choice orders the NULLs where it says; the default is the same order as its spelled-out choice', async (t) => {
      const database = await itemsApp(t, dialect)
      const { app } = database
      for (const [orderBy, descending, nulls] of orders) {
        const response = await app.inject({ url: `/items?order_by=${orderBy}&limit=100` })
        assert.equal(response.statusCode, 200, response.body)
        assert.match(String(response.headers['content-type']), /^application\/json/)
        assert.deepEqual(names(response), expected(descending, nulls), orderBy)
      }
      const paged = await app.inject({ url: '/items?order_by=-description.nullslast,name&limit=3&offset=3' })
      assert.deepEqual(names(paged), expected(true, 'last').slice(3, 6))
      const stored = await database.db.selectFrom('items').select('name').orderBy('id').execute()
      assert.deepEqual(stored.map((row) => row.name), shop.map((row) => row.name))
    })

    test('cursor pages hold the choice, forwards and back, and a cursor of another order is a 400', async (t) => {
      const { app } = await itemsApp(t, dialect, { pagination: 'cursor' })
      for (const [orderBy, descending, nulls] of orders) {
        for (const limit of [1, 2, 3]) {
          const forwards = await follow(app, `/items?order_by=${orderBy}&limit=${limit}`, 'next')
          assert.deepEqual(forwards.seen, expected(descending, nulls), `${orderBy} limit ${limit}`)
          // Back from the last page: every row before it, in reverse.
          const back = await follow(app, forwards.last, 'prev')
          const lastPage = names(await app.inject({ url: forwards.last }))
          const before = expected(descending, nulls).reverse().slice(lastPage.length)
          assert.deepEqual(back.seen.slice(lastPage.length), before)
        }
      }
      const first = await app.inject({ url: '/items?order_by=description.nullsfirst&limit=2' })
      const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1] ?? ''
      const cursor = new URL(next, 'http://x').searchParams.get('cursor') ?? ''
      const other = await app.inject({ url: `/items?order_by=description&limit=2&cursor=${cursor}` })
      assert.equal(other.statusCode, 400)
      assert.equal(problemOf(other).code, 'FST_VIEWSET_INVALID_CURSOR')
      // `-description.nullsfirst` is `-description`: one order, so one cursor serves both spellings.
      const defaultFirst = await app.inject({ url: '/items?order_by=-description&limit=2' })
      const nextDefault = /<([^>]+)>; rel="next"/.exec(String(defaultFirst.headers.link))?.[1] ?? ''
      const same = new URL(nextDefault, 'http://x').searchParams.get('cursor') ?? ''
      const spelled = await app.inject({ url: `/items?order_by=-description.nullsfirst&limit=2&cursor=${same}` })
      assert.equal(spelled.statusCode, 200, spelled.body)
      assert.deepEqual(names(spelled), expected(true, 'first').slice(2, 4))
    })

    test('a bad suffix is a 400 FST_VIEWSET_UNSUPPORTED_ORDERING', async (t) => {
      const { app } = await itemsApp(t, dialect)
      for (const orderBy of ['description.nullsmiddle', 'description.nullslast.nullsfirst', 'description,description.nullslast']) {
        const response = await app.inject({ url: `/items?order_by=${orderBy}` })
        assert.equal(response.statusCode, 400, orderBy)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_UNSUPPORTED_ORDERING', orderBy)
      }
    })
  })
}
