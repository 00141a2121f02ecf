import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { createViewset } from 'fastify-viewsets'
import type { ViewsetMethod } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

async function itemsApp (t: TestContext, dialect: TestDialect, methods?: ViewsetMethod[]) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, tags: ['items'], ...(methods === undefined ? {} : { methods }) }), { prefix: '/items' })
  return { app, ...database }
}

async function rowsOf (db: TestDatabase['db']) {
  return await db.selectFrom('items').selectAll().orderBy('id').execute()
}
type TestDatabase = Awaited<ReturnType<typeof testDatabase>>

async function seed (app: Awaited<ReturnType<typeof itemsApp>>['app'], count: number) {
  const ids: number[] = []
  for (let i = 0; i < count; i++) {
    const response = await app.inject({ method: 'POST', url: '/items', payload: { name: `item ${String(i).padStart(3, '0')}`, price: i } })
    assert.equal(response.statusCode, 201, response.body)
    ids.push(response.json().id)
  }
  return ids
}

for (const dialect of dialects) {
  describe(`CRUD on ${dialect.name}`, () => {
    test('POST creates a row and answers 201 with Location and the row as stored', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const response = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread', id: 999 } })
      assert.equal(response.statusCode, 201)
      assert.match(String(response.headers['content-type']), /^application\/json/)
      const body = response.json()
      assert.equal(typeof body.id, 'number')
      assert.notEqual(body.id, 999, 'a read-only id in the body is ignored')
      assert.equal(response.headers.location, `/items/${body.id}`)
      // database defaults come back: price 0, in_stock true, description NULL
      assert.deepEqual(body, { id: body.id, name: 'Bread', description: null, price: 0, in_stock: true })
      assert.equal(Object.hasOwn(body, 'secret'), false)
      const rows = await rowsOf(db)
      assert.equal(rows.length, 1)
      assert.equal(rows[0]?.id, body.id)
    })

    test('the secret column never appears in any response', async (t) => {
      const { app } = await itemsApp(t, dialect)
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread' } })
      const id = created.json().id
      const responses = [
        created,
        await app.inject({ method: 'GET', url: '/items' }),
        await app.inject({ method: 'GET', url: `/items/${id}` }),
        await app.inject({ method: 'PUT', url: `/items/${id}`, payload: { name: 'Rye' } }),
        await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { price: 2 } }),
      ]
      for (const response of responses) {
        assert.ok(response.statusCode < 300, response.body)
        assert.equal(response.body.includes('secret'), false, response.body)
        assert.equal(response.body.includes('s3cr3t'), false, response.body)
      }
    })

    test('GET answers the row, 404 for a missing one, 400 for a malformed or out-of-range id', async (t) => {
      const { app } = await itemsApp(t, dialect)
      const [id] = await seed(app, 1)
      const found = await app.inject({ method: 'GET', url: `/items/${id}` })
      assert.equal(found.statusCode, 200)
      assert.deepEqual(found.json(), { id, name: 'item 000', description: null, price: 0, in_stock: true })

      const missing = await app.inject({ method: 'GET', url: '/items/424242' })
      assert.equal(missing.statusCode, 404)
      const problem = problemOf(missing)
      assert.equal(problem.code, 'FST_VIEWSET_NOT_FOUND')
      assert.equal(problem.status, 404)
      assert.equal(problem.title, 'Not Found')
      assert.match(problem.type, /^urn:fastify-viewsets:problem:not-found$/)
      assert.match(problem.detail, /424242/)

      for (const bad of ['abc', '1.5', '1e30', 'Infinity', '99999999999999999999', '-99999999999999999999', 'NaN']) {
        const response = await app.inject({ method: 'GET', url: `/items/${bad}` })
        assert.equal(response.statusCode, 400, `${bad}: ${response.body}`)
        const body = problemOf(response)
        assert.equal(body.code, 'FST_VIEWSET_VALIDATION')
        assert.deepEqual(body.errors?.map((error) => [error.in, error.field]), [['params', 'id']])
      }
    })

    test('LIST pages in primary-key order with limit (default 20, 1..100) and offset', async (t) => {
      const { app } = await itemsApp(t, dialect)
      const ids = await seed(app, 25)
      const first = await app.inject({ method: 'GET', url: '/items' })
      assert.equal(first.statusCode, 200)
      assert.deepEqual(first.json().map((row: { id: number }) => row.id), ids.slice(0, 20))
      const second = await app.inject({ method: 'GET', url: '/items?limit=20&offset=20' })
      assert.deepEqual(second.json().map((row: { id: number }) => row.id), ids.slice(20))
      const small = await app.inject({ method: 'GET', url: '/items?limit=3&offset=2' })
      assert.deepEqual(small.json().map((row: { id: number }) => row.id), ids.slice(2, 5))
      const max = await app.inject({ method: 'GET', url: '/items?limit=100' })
      assert.equal(max.json().length, 25)
      const past = await app.inject({ method: 'GET', url: '/items?offset=1000' })
      assert.deepEqual(past.json(), [])

      for (const query of ['limit=0', 'limit=101', 'limit=-1', 'limit=abc', 'limit=1e30', 'limit=Infinity', 'limit=2.5', 'offset=-1', 'offset=1e30', 'offset=x', 'limit=', 'limit=1&limit=2']) {
        const response = await app.inject({ method: 'GET', url: `/items?${query}` })
        assert.equal(response.statusCode, 400, `${query}: ${response.body}`)
        const body = problemOf(response)
        assert.equal(body.code, 'FST_VIEWSET_VALIDATION')
        assert.equal(body.errors?.[0]?.in, 'querystring')
      }
    })

    test('maxLimit and defaultLimit options bound the page', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item, maxLimit: 5, defaultLimit: 2 }), { prefix: '/items' })
      await seed(app, 6)
      assert.equal((await app.inject('/items')).json().length, 2)
      assert.equal((await app.inject('/items?limit=5')).json().length, 5)
      assert.equal((await app.inject('/items?limit=6')).statusCode, 400)
    })

    test('PUT replaces the writable fields: required ones must be present, read-only ones are ignored', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const [id] = await seed(app, 1)
      const missing = await app.inject({ method: 'PUT', url: `/items/${id}`, payload: { price: 3 } })
      assert.equal(missing.statusCode, 400)
      assert.deepEqual(problemOf(missing).errors, [{ in: 'body', field: 'name', message: 'is required' }])

      const replaced = await app.inject({ method: 'PUT', url: `/items/${id}`, payload: { id: 77, name: 'Rye', description: 'dark', price: 4.5, in_stock: false } })
      assert.equal(replaced.statusCode, 200)
      assert.deepEqual(replaced.json(), { id, name: 'Rye', description: 'dark', price: 4.5, in_stock: false })
      const rows = await rowsOf(db)
      assert.deepEqual(rows.map((row) => row.id), [id])

      const notFound = await app.inject({ method: 'PUT', url: '/items/424242', payload: { name: 'x' } })
      assert.equal(notFound.statusCode, 404)
      assert.equal(problemOf(notFound).code, 'FST_VIEWSET_NOT_FOUND')
    })

    test('PATCH changes only the fields sent; an explicit null clears a nullable column', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread', description: 'white', price: 2 } })
      const id = created.json().id
      const patched = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { price: 3 } })
      assert.equal(patched.statusCode, 200)
      assert.deepEqual(patched.json(), { id, name: 'Bread', description: 'white', price: 3, in_stock: true })

      const cleared = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { description: null } })
      assert.equal(cleared.statusCode, 200)
      assert.equal(cleared.json().description, null)
      const [row] = await rowsOf(db)
      assert.equal(row?.description, null)

      const empty = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: {} })
      assert.equal(empty.statusCode, 200)
      assert.deepEqual(empty.json(), { id, name: 'Bread', description: null, price: 3, in_stock: true })

      const moved = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { id: id + 100, name: 'Moved' } })
      assert.equal(moved.statusCode, 200)
      assert.equal(moved.json().id, id, 'an id in a PATCH body never moves the row')

      const nullName = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { name: null } })
      assert.equal(nullName.statusCode, 400)
      assert.deepEqual(problemOf(nullName).errors?.map((error) => error.field), ['name'])

      const notFound = await app.inject({ method: 'PATCH', url: '/items/424242', payload: { price: 1 } })
      assert.equal(notFound.statusCode, 404)
    })

    test('DELETE answers 204 with no body, then 404', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const [id, other] = await seed(app, 2)
      const deleted = await app.inject({ method: 'DELETE', url: `/items/${id}` })
      assert.equal(deleted.statusCode, 204)
      assert.equal(deleted.body, '')
      assert.deepEqual((await rowsOf(db)).map((row) => row.id), [other])
      const again = await app.inject({ method: 'DELETE', url: `/items/${id}` })
      assert.equal(again.statusCode, 404)
      assert.equal(problemOf(again).code, 'FST_VIEWSET_NOT_FOUND')
      assert.equal((await app.inject({ method: 'GET', url: `/items/${id}` })).statusCode, 404)
    })

    test('bodies are validated without coercion, listing every failing field', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const response = await app.inject({ method: 'POST', url: '/items', payload: { name: 123, description: 5, price: -1, in_stock: 'yes', colour: 'red' } })
      assert.equal(response.statusCode, 400)
      const body = problemOf(response)
      assert.equal(body.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(body.errors?.map((error) => error.field).sort(), ['colour', 'description', 'in_stock', 'name', 'price'])
      assert.ok(body.errors?.every((error) => error.in === 'body'))
      assert.deepEqual(body.errors?.find((error) => error.field === 'description'), { in: 'body', field: 'description', message: 'must be string or null' })
      assert.deepEqual(body.errors?.find((error) => error.field === 'colour'), { in: 'body', field: 'colour', message: 'is not a field of this resource' })

      const tooLong = await app.inject({ method: 'POST', url: '/items', payload: { name: 'x', description: 'y'.repeat(1025) } })
      assert.equal(tooLong.statusCode, 400)
      assert.deepEqual(problemOf(tooLong).errors?.map((error) => error.field), ['description'])
      assert.match(problemOf(tooLong).errors?.[0]?.message ?? '', /1024/)

      for (const payload of ['[]', '"text"', '42', 'null']) {
        const wrong = await app.inject({ method: 'POST', url: '/items', payload, headers: { 'content-type': 'application/json' } })
        assert.equal(wrong.statusCode, 400, payload)
        problemOf(wrong)
      }
      assert.deepEqual(await rowsOf(db), [])
    })

    test('malformed JSON is a 400, another content type a 415, a body over the limit a 413', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t, { bodyLimit: 1024 })
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      const malformed = await app.inject({ method: 'POST', url: '/items', payload: '{"name": ', headers: { 'content-type': 'application/json' } })
      assert.equal(malformed.statusCode, 400)
      assert.equal(problemOf(malformed).code, 'FST_VIEWSET_INVALID_BODY')
      const empty = await app.inject({ method: 'POST', url: '/items', payload: '', headers: { 'content-type': 'application/json' } })
      assert.equal(empty.statusCode, 400)
      assert.equal(problemOf(empty).code, 'FST_VIEWSET_INVALID_BODY')
      const xml = await app.inject({ method: 'POST', url: '/items', payload: '<name>x</name>', headers: { 'content-type': 'application/xml' } })
      assert.equal(xml.statusCode, 415)
      assert.equal(problemOf(xml).code, 'FST_VIEWSET_UNSUPPORTED_MEDIA_TYPE')
      const text = await app.inject({ method: 'POST', url: '/items', payload: '{"name":"x"}', headers: { 'content-type': 'text/plain' } })
      assert.equal(text.statusCode, 415)
      assert.equal(problemOf(text).code, 'FST_VIEWSET_UNSUPPORTED_MEDIA_TYPE')
      const large = await app.inject({ method: 'POST', url: '/items', payload: { name: 'x', description: 'y'.repeat(2000) } })
      assert.equal(large.statusCode, 413)
      assert.equal(problemOf(large).code, 'FST_VIEWSET_PAYLOAD_TOO_LARGE')
      assert.deepEqual(await rowsOf(database.db), [])
    })

    test('a unique violation is a 409 that names the field and leaks no SQL', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const [, second] = await seed(app, 2)
      for (const response of [
        await app.inject({ method: 'POST', url: '/items', payload: { name: 'item 000' } }),
        await app.inject({ method: 'PATCH', url: `/items/${second}`, payload: { name: 'item 000' } }),
        await app.inject({ method: 'PUT', url: `/items/${second}`, payload: { name: 'item 000' } }),
      ]) {
        assert.equal(response.statusCode, 409)
        const body = problemOf(response)
        assert.equal(body.code, 'FST_VIEWSET_CONFLICT')
        assert.match(body.detail, /name/)
        assert.doesNotMatch(response.body, /insert|update|select|constraint failed|duplicate key|item 000|SQLITE|23505/i)
      }
      assert.deepEqual((await rowsOf(db)).map((row) => row.name), ['item 000', 'item 001'])
    })

    test('a string the database cannot store is a 4xx, never a 500', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const response = await app.inject({ method: 'POST', url: '/items', payload: { name: 'nul\u0000byte' } })
      if (dialect.name === 'postgres') {
        assert.equal(response.statusCode, 400)
        // Issue 34: the schema refuses it on PostgreSQL, naming the field, before the database would.
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
        assert.deepEqual(problemOf(response).errors?.map((error) => error.field), ['name'])
        assert.deepEqual(await rowsOf(db), [])
      } else {
        assert.equal(response.statusCode, 201, response.body)
      }
    })

    test('only the registered methods are served', async (t) => {
      const { app } = await itemsApp(t, dialect, ['GET', 'LIST'])
      assert.equal((await app.inject('/items')).statusCode, 200)
      const post = await app.inject({ method: 'POST', url: '/items', payload: { name: 'x' } })
      // A method that is not registered on a known path is a 405 that lists the ones that are (issue 11).
      assert.equal(post.statusCode, 405)
      assert.equal(problemOf(post).code, 'FST_VIEWSET_METHOD_NOT_ALLOWED')
      assert.equal(post.headers.allow, 'GET, HEAD, OPTIONS')
      assert.equal((await app.inject({ method: 'DELETE', url: '/items/1' })).statusCode, 405)
      assert.equal((await app.inject({ method: 'GET', url: '/items/1/x' })).statusCode, 404)
    })

    test('a path\'s OPTIONS and 405 answers are one route: ten routes for the default methods (issue 43)', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      // Every route costs Fastify as much at startup as a generated one: 6 methods, 2 HEAD, 1 per path for the rest.
      const routes: string[] = []
      app.addHook('onRoute', (route) => { routes.push(`${String(route.method)} ${route.url}`) })
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      await app.ready()
      assert.equal(routes.length, 10, routes.join('\n'))
      const seeded = await app.inject({ method: 'POST', url: '/items', payload: { name: 'kept', price: 1 } })
      assert.equal(seeded.statusCode, 201)
      const options = await app.inject({ method: 'OPTIONS', url: `/items/${seeded.json().id}` })
      assert.equal(options.statusCode, 204)
      assert.equal(options.headers.allow, 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS')
      assert.match(String(options.headers['accept-patch']), /application\/merge-patch\+json/)
      assert.equal(options.body, '')
      // The other methods of the route answer 405 before the body is read, whatever its type.
      const trace = await app.inject({ method: 'TRACE', url: '/items' })
      assert.equal(trace.statusCode, 405)
      assert.equal(trace.headers.allow, 'GET, HEAD, POST, OPTIONS')
      assert.equal(problemOf(trace).code, 'FST_VIEWSET_METHOD_NOT_ALLOWED')
      const put = await app.inject({ method: 'PUT', url: '/items', payload: 'not json', headers: { 'content-type': 'text/csv' } })
      assert.equal(put.statusCode, 405)
      assert.equal(put.headers.allow, 'GET, HEAD, POST, OPTIONS')
      assert.deepEqual((await rowsOf(database.db)).map((row) => row.name), ['kept'])
    })

    test('errors outside the viewset keep Fastify\'s own format', async (t) => {
      const { app } = await itemsApp(t, dialect)
      app.get('/other', async () => { throw Object.assign(new Error('boom'), { statusCode: 418 }) })
      const response = await app.inject('/other')
      assert.equal(response.statusCode, 418)
      assert.match(String(response.headers['content-type']), /^application\/json/)
      assert.equal(response.json().message, 'boom')
      const unknown = await app.inject('/elsewhere')
      assert.equal(unknown.statusCode, 404)
      assert.match(String(unknown.headers['content-type']), /^application\/json/)
    })

    test('the whole cycle: create, read, list, replace, patch, delete', async (t) => {
      const { app } = await itemsApp(t, dialect)
      const created = (await app.inject({ method: 'POST', url: '/items', payload: { name: 'Cycle', price: 1 } })).json()
      assert.deepEqual((await app.inject(`/items/${created.id}`)).json(), created)
      assert.deepEqual((await app.inject('/items')).json(), [created])
      const replaced = (await app.inject({ method: 'PUT', url: `/items/${created.id}`, payload: { name: 'Cycle 2', price: 2 } })).json()
      assert.deepEqual(replaced, { ...created, name: 'Cycle 2', price: 2 })
      const patched = (await app.inject({ method: 'PATCH', url: `/items/${created.id}`, payload: { in_stock: false } })).json()
      assert.deepEqual(patched, { ...replaced, in_stock: false })
      assert.equal((await app.inject({ method: 'DELETE', url: `/items/${created.id}` })).statusCode, 204)
      assert.deepEqual((await app.inject('/items')).json(), [])
    })
  })
}
