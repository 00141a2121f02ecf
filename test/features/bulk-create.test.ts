import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { createViewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

type ItemOptions = Partial<ViewsetOptions<ItemsDB, 'items', typeof Item>>

async function bulkApp (t: TestContext, dialect: TestDialect, options: ItemOptions = { methods: ['LIST', 'POST', 'BULK'] }) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  const app = testApp(t)
  await app.register(viewsetDocs)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, withoutTokens: true, ...options }), { prefix: '/items' })
  await app.ready()
  database.queries.length = 0
  return { app, ...database }
}

interface Stored { id: number, name: string, description: string | null, price: number, in_stock: boolean }

for (const dialect of dialects) {
  describe(`bulk create (${dialect.name})`, () => {
    test('500 elements: a handful of INSERTs, rows in element order, database defaults for fields left out', async (t) => {
      const { app, db, queries } = await bulkApp(t, dialect)
      // Two sets of sent fields (with and without price and description), interleaved: two INSERTs.
      const elements = Array.from({ length: 500 }, (_, index) => index % 2 === 0
        ? { name: `item ${index}` }
        : { name: `item ${index}`, price: index, description: `d${index}` })
      const response = await app.inject({ method: 'POST', url: '/items/bulk', payload: elements })
      assert.equal(response.statusCode, 201, response.body)
      const rows = response.json<Stored[]>()
      assert.deepEqual(rows.map((row) => row.name), elements.map((element) => element.name), 'in element order')
      assert.equal(new Set(rows.map((row) => row.id)).size, 500)
      assert.deepEqual(rows[0], { id: rows[0]?.id, name: 'item 0', description: null, price: 0, in_stock: true }, 'database defaults')
      assert.deepEqual(rows[1], { id: rows[1]?.id, name: 'item 1', description: 'd1', price: 1, in_stock: true })
      const inserts = queries.filter((text) => /^insert/i.test(text))
      assert.equal(inserts.length, 2, inserts.join('\n'))
      const stored = await db.selectFrom('items').select(['id', 'name']).execute()
      assert.equal(stored.length, 500)
      // Each answered row is the stored one.
      const byId = new Map(stored.map((row) => [Number(row.id), row.name]))
      for (const row of rows) assert.equal(byId.get(row.id), row.name)
    })

    test('a bad element 3 names /3/... and nothing is written; a database conflict rolls back every statement', async (t) => {
      const { app, db } = await bulkApp(t, dialect)
      const invalid = await app.inject({ method: 'POST', url: '/items/bulk', payload: [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 5 }] })
      assert.equal(invalid.statusCode, 400)
      const problem = problemOf(invalid)
      assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(problem.errors?.map((error) => error.field), ['/3/name'])
      const missing = await app.inject({ method: 'POST', url: '/items/bulk', payload: [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { price: 1 }] })
      assert.deepEqual(problemOf(missing).errors?.map((error) => error.field), ['/3/name'])

      await db.insertInto('items').values({ name: 'taken' }).execute()
      // The first three go in one INSERT, the fourth (other fields) in a second one, which fails.
      const conflict = await app.inject({ method: 'POST', url: '/items/bulk', payload: [{ name: 'a', price: 1 }, { name: 'b', price: 1 }, { name: 'c', price: 1 }, { name: 'taken' }] })
      assert.equal(conflict.statusCode, 409, conflict.body)
      const named = problemOf(conflict)
      assert.equal(named.code, 'FST_VIEWSET_CONFLICT')
      // The database says which (PostgreSQL's detail and MySQL's message carry the value; SQLite's names the
      // column, and the one element whose name is stored is read after the rollback).
      assert.deepEqual(named.errors, [{ in: 'body', field: '/3/name', message: 'a row with the same value already exists' }])
      assert.doesNotMatch(named.detail, /taken/, 'never the value')
      assert.deepEqual((await db.selectFrom('items').select('name').execute()).map((row) => row.name), ['taken'], 'all or nothing')
    })

    test('a conflict inside one multi-row INSERT, and elements that repeat a unique value, name their element', async (t) => {
      const { app, db, queries } = await bulkApp(t, dialect)
      await db.insertInto('items').values({ name: 'taken' }).execute()
      // One statement for all four: the database fails it as a whole, and its message tells the element.
      const inside = await app.inject({ method: 'POST', url: '/items/bulk', payload: [{ name: 'a' }, { name: 'b' }, { name: 'taken' }, { name: 'd' }] })
      assert.equal(inside.statusCode, 409, inside.body)
      assert.deepEqual(problemOf(inside).errors?.map((error) => error.field), ['/2/name'])
      queries.length = 0
      const repeated = await app.inject({ method: 'POST', url: '/items/bulk', payload: [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'b' }] })
      assert.equal(repeated.statusCode, 409, repeated.body)
      const problem = problemOf(repeated)
      assert.equal(problem.code, 'FST_VIEWSET_CONFLICT')
      assert.deepEqual(problem.errors, [{ in: 'body', field: '/3/name', message: 'an earlier element has the same value' }])
      assert.deepEqual(queries, [], 'found before any statement')
      assert.deepEqual((await db.selectFrom('items').select('name').execute()).map((row) => row.name), ['taken'])
    })

    test('[] answers 201 []; a body that is not an array, or longer than maxBulk, is a 400', async (t) => {
      const { app } = await bulkApp(t, dialect, { methods: ['POST', 'BULK'], maxBulk: 3 })
      const empty = await app.inject({ method: 'POST', url: '/items/bulk', payload: [] })
      assert.equal(empty.statusCode, 201)
      assert.deepEqual(empty.json(), [])
      const single = await app.inject({ method: 'POST', url: '/items/bulk', payload: { name: 'a' } })
      assert.equal(single.statusCode, 400)
      assert.equal(problemOf(single).code, 'FST_VIEWSET_VALIDATION')
      const many = await app.inject({ method: 'POST', url: '/items/bulk', payload: [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'd' }] })
      assert.equal(many.statusCode, 400)
      assert.equal(problemOf(many).code, 'FST_VIEWSET_VALIDATION')
    })

    test('beforeWrite runs for each element, with the method BULK', async (t) => {
      const methods: string[] = []
      const { app } = await bulkApp(t, dialect, {
        methods: ['BULK'],
        beforeWrite: (values, { method }) => { methods.push(method); return { ...values, description: `via ${method}` } },
      })
      const response = await app.inject({ method: 'POST', url: '/items/bulk', payload: [{ name: 'a' }, { name: 'b', description: 'mine' }] })
      assert.equal(response.statusCode, 201, response.body)
      assert.deepEqual(response.json<Stored[]>().map((row) => row.description), ['via BULK', 'via BULK'])
      assert.deepEqual(methods, ['BULK', 'BULK'])
    })

    test('with an integer key, /bulk is a path of its own: its other methods are 405s with Allow, and change nothing', async (t) => {
      const { app, db } = await bulkApp(t, dialect, { methods: ['LIST', 'GET', 'POST', 'BULK', 'PATCH', 'DELETE'] })
      await db.insertInto('items').values({ name: 'kept' }).execute()
      for (const method of ['GET', 'PATCH', 'DELETE', 'PUT'] as const) {
        const answer = await app.inject({ method, url: '/items/bulk', ...(method === 'PATCH' ? { payload: { name: 'x' } } : {}) })
        assert.equal(answer.statusCode, 405, `${method}: ${answer.body}`)
        assert.equal(answer.headers.allow, 'POST, OPTIONS')
        assert.equal(problemOf(answer).code, 'FST_VIEWSET_METHOD_NOT_ALLOWED')
      }
      const options = await app.inject({ method: 'OPTIONS', url: '/items/bulk' })
      assert.equal(options.statusCode, 204)
      assert.equal(options.headers.allow, 'POST, OPTIONS')
      assert.deepEqual((await db.selectFrom('items').select('name').execute()).map((row) => row.name), ['kept'])
      // The element path is as before.
      assert.equal((await app.inject({ method: 'GET', url: '/items/bulk2' })).statusCode, 400)
    })

    test('BULK is registered only when listed, and documented as createMany{Name}', async (t) => {
      const plain = await bulkApp(t, dialect, {})
      const refused = await plain.app.inject({ method: 'POST', url: '/items/bulk', payload: [{ name: 'a' }] })
      assert.notEqual(refused.statusCode, 201)
      const { app } = await bulkApp(t, dialect)
      const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
      const operation = document.paths['/items/bulk'].post
      assert.equal(operation.operationId, 'createManyItems')
      assert.equal(operation.requestBody.content['application/json'].schema.type, 'array')
      assert.equal(operation.requestBody.content['application/json'].schema.maxItems, 1000)
      assert.ok(operation.responses['201'])
      assert.ok(operation.responses['409'])
    })
  })
}
