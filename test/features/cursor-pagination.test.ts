import assert from 'node:assert/strict'
import { Buffer } from 'node:buffer'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { createViewset } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

type ItemOptions = Partial<ViewsetOptions<ItemsDB, 'items', typeof Item>>

const cursorOptions: ItemOptions = {
  pagination: 'cursor',
  orderingFields: ['name', 'price', 'description'],
  filterFields: { price: ['gte'] },
}

// A nullable ordering column with ties and NULLs, in insertion (id) order. Lower-case ASCII: one order under every
// collation.
const descriptions = ['b', null, 'a', 'b', null, 'c', 'a', null, 'b', 'a', 'c']

async function seed (
  database: TestDatabase,
  rows: Array<{ name: string; description: string | null; price?: number }>
): Promise<void> {
  await database.db
    .insertInto('items')
    .values(rows.map((row) => ({ name: row.name, description: row.description, price: row.price ?? 1 })))
    .execute()
}

async function cursorApp (t: TestContext, dialect: TestDialect, options: ItemOptions = cursorOptions) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  await seed(
    database,
    descriptions.map((description, index) => ({
      name: `item ${String(index + 1).padStart(2, '0')}`,
      description,
      price: index % 3,
    }))
  )
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, ...options }), { prefix: '/items' })
  await app.ready()
  return { app, ...database }
}

/** The URLs of a Link header, by rel. */
function links (header: unknown): Record<string, string> {
  const found: Record<string, string> = {}
  for (const part of typeof header === 'string' ? header.split(', ') : []) {
    const match = /^<([^>]*)>; rel="(next|prev)"$/.exec(part)
    if (match?.[1] !== undefined && match[2] !== undefined) found[match[2]] = match[1]
  }
  return found
}

/** Ids in the order the NULL rule gives (NULL largest), ties by id. */
function expectedOrder (descending: boolean): number[] {
  const ids = descriptions.map((_, index) => index + 1)
  const rank = (value: string | null | undefined) => value ?? '\uffff'
  return ids.sort((a, b) => {
    const left = rank(descriptions[a - 1])
    const right = rank(descriptions[b - 1])
    if (left !== right) return (left < right ? -1 : 1) * (descending ? -1 : 1)
    return a - b
  })
}

interface Walked {
  ids: number[][]
  last: string | undefined
}

/** Follows `rel` links from `url` to the end; the ids of each page. */
async function walk (
  app: Awaited<ReturnType<typeof cursorApp>>['app'],
  url: string,
  rel: 'next' | 'prev'
): Promise<Walked> {
  const pages: number[][] = []
  let next: string | undefined = url
  let last: string | undefined
  while (next !== undefined) {
    const response: LightMyRequestResponse = await app.inject({ method: 'GET', url: next })
    assert.equal(response.statusCode, 200, response.body)
    const page = response.json<Array<{ id: number }>>().map((row) => row.id)
    pages.push(page)
    last = next
    next = links(response.headers.link)[rel]
    assert.ok(pages.length < 20, 'the walk ends')
  }
  return { ids: pages, last }
}

for (const dialect of dialects) {
  describe(`cursor pagination (${dialect.name})`, () => {
    for (const descending of [false, true]) {
      test(`walking next to the end and prev back visits every row once, in order (${descending ? '-' : ''}description, NULLs, ties)`, async (t) => {
        const { app } = await cursorApp(t, dialect)
        const order = descending ? '-description' : 'description'
        const first = await app.inject({ method: 'GET', url: `/items?order_by=${order}&limit=3&count=true` })
        assert.equal(first.statusCode, 200)
        assert.equal(first.headers['x-total-count'], '11')
        assert.equal(links(first.headers.link).prev, undefined, 'no prev on the first page')

        const forward = await walk(app, `/items?order_by=${order}&limit=3&count=true`, 'next')
        assert.deepEqual(forward.ids.flat(), expectedOrder(descending))
        assert.deepEqual(
          forward.ids.map((page) => page.length),
          [3, 3, 3, 2],
          'following next never gives an empty page'
        )
        const lastPage = await app.inject({ method: 'GET', url: forward.last ?? '' })
        assert.equal(lastPage.headers['x-total-count'], '11', 'count on every page')
        assert.match(
          forward.last ?? '',
          /order_by=-?description&count=true&limit=3&cursor=[A-Za-z0-9_-]+$/,
          'the other parameters are kept'
        )

        const backward = await walk(app, forward.last ?? '', 'prev')
        assert.deepEqual(backward.ids.reverse(), forward.ids, 'prev pages are the same pages, in the request order')
      })
    }

    test('the default order, with filters, and a cursor reused with another limit and filter', async (t) => {
      const { app } = await cursorApp(t, dialect)
      const first = await app.inject({ method: 'GET', url: '/items?limit=4' })
      assert.deepEqual(
        first.json<Array<{ id: number }>>().map((row) => row.id),
        [1, 2, 3, 4]
      )
      const next = links(first.headers.link).next ?? ''
      const cursor = /cursor=([^&]+)/.exec(next)?.[1] ?? ''
      const reused = await app.inject({ method: 'GET', url: `/items?limit=2&price__gte=2&cursor=${cursor}` })
      assert.equal(reused.statusCode, 200)
      // Rows after id 4 with price >= 2 (price is (id - 1) % 3): 6 and 9.
      assert.deepEqual(
        reused.json<Array<{ id: number }>>().map((row) => row.id),
        [6, 9]
      )
      assert.deepEqual(Object.keys(links(reused.headers.link)), ['prev'], 'no row follows 9: no next')
    })

    test('rows inserted or deleted mid-walk never repeat or skip a row that existed throughout', async (t) => {
      const { app, db } = await cursorApp(t, dialect)
      const seen: number[] = []
      let url: string | undefined = '/items?order_by=description&limit=3'
      let round = 0
      while (url !== undefined) {
        const response: LightMyRequestResponse = await app.inject({ method: 'GET', url })
        seen.push(...response.json<Array<{ id: number }>>().map((row) => row.id))
        url = links(response.headers.link).next
        // Between pages: new rows on both sides of the position, and one row that has not been read yet goes.
        round++
        await seed({ db, dialect: dialect.name, url: '', queries: [] }, [
          { name: `new a${round}`, description: 'a' },
          { name: `new null${round}`, description: null },
        ])
        if (round === 1) await db.deleteFrom('items').where('id', '=', 11).execute()
      }
      const existed = expectedOrder(false).filter((id) => id !== 11)
      const old = seen.filter((id) => id <= 11)
      assert.deepEqual(old, existed, 'every row that existed throughout, once, in order')
      assert.equal(new Set(seen).size, seen.length, 'no row twice')
    })

    test('every bad cursor is a 400 FST_VIEWSET_INVALID_CURSOR; an offset is a 400 that names cursor', async (t) => {
      const { app } = await cursorApp(t, dialect)
      const first = await app.inject({ method: 'GET', url: '/items?order_by=description&limit=3' })
      const cursor = /cursor=([^&>]+)/.exec(links(first.headers.link).next ?? '')?.[1] ?? ''
      assert.notEqual(cursor, '')
      const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
      const bad = [
        `${cursor}!`, // not base64url
        `${cursor.slice(0, -1)}${cursor.endsWith('A') ? 'B' : 'A'}`, // tampered
        encode({ a: 1 }), // not a position
        encode(['a', 'description,id', ['b']]), // too few values
        encode(['a', 'description,id', [5, 3]]), // wrong type
        encode(['a', 'description,id', ['b', null]]), // null for the key
        encode(['x', 'description,id', ['b', 3]]), // unknown direction
        'bm90IGpzb24', // "not json"
      ]
      for (const text of bad) {
        const response = await app.inject({
          method: 'GET',
          url: `/items?order_by=description&cursor=${encodeURIComponent(text)}`,
        })
        assert.equal(response.statusCode, 400, text)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_INVALID_CURSOR', text)
      }
      const otherOrder = await app.inject({ method: 'GET', url: `/items?order_by=-description&cursor=${cursor}` })
      assert.equal(otherOrder.statusCode, 400)
      assert.equal(problemOf(otherOrder).code, 'FST_VIEWSET_INVALID_CURSOR')
      assert.match(problemOf(otherOrder).detail, /order_by/)
      const good = await app.inject({
        method: 'GET',
        url: `/items?order_by=description&cursor=${encode(['a', 'description,id', ['b', 1]])}`,
      })
      assert.equal(good.statusCode, 200, 'a cursor is not signed: any position of the ordering is accepted')

      for (const offset of ['0', '3']) {
        const response = await app.inject({ method: 'GET', url: `/items?offset=${offset}` })
        assert.equal(response.statusCode, 400)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
        assert.match(problemOf(response).detail, /cursor/)
      }
    })

    test('with offset pagination (the default), cursor is an unknown parameter', async (t) => {
      const { app } = await cursorApp(t, dialect, { orderingFields: ['description'] })
      const response = await app.inject({ method: 'GET', url: '/items?cursor=abc' })
      assert.equal(response.statusCode, 400)
      assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
    })
  })
}

test('pagination must be offset or cursor', async (t) => {
  const [dialect] = dialects
  assert.ok(dialect !== undefined)
  const database = await testDatabase(t, dialect)
  assert.throws(
    () => createViewset({ db: database.db, table: 'items', schema: Item, pagination: 'keyset' as 'cursor' }),
    { code: 'FST_VIEWSET_INVALID_OPTION', message: /pagination/ }
  )
})
