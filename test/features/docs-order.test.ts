import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { compileErrors, validate } from '@readme/openapi-parser'
import { createViewset, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { FastifyInstance } from 'fastify'
import { dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

// viewsetDocs registers @fastify/swagger, which collects routes as they are added (issue 42, 5): registered after
// viewsets it would document none of them, so it fails at startup saying to register it first. Registered first, the
// document it builds grows linearly with the viewsets (timed in npm run bench's startup phase; here, 200 of them).

for (const dialect of dialects) {
  describe(`viewsetDocs order on ${dialect.name}`, () => {
    test('viewsetDocs registered after viewsets fails at ready(), naming them and saying to register it first', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      void app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      void app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/admin/items' })
      void app.register(viewsetDocs)
      await assert.rejects(async () => { await app.ready() }, {
        code: 'FST_VIEWSET_DOCS_ORDER',
        message: /^viewsetDocs was registered after 2 viewsets \(\/items, \/admin\/items\): .*Register viewsetDocs before the viewsets$/,
      })
      assert.deepEqual(await database.db.selectFrom('items').selectAll().execute(), [])
    })

    test('awaited, the registration itself fails the same way', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      await assert.rejects(async () => { await app.register(viewsetDocs) }, { code: 'FST_VIEWSET_DOCS_ORDER' })
    })

    test('registered first, it documents the viewsets registered after it, whether awaited or not', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      void app.register(viewsetDocs)
      void app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/admin/items' })
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'documented' } })
      assert.equal(created.statusCode, 201)
      const response = await app.inject('/docs/json')
      assert.equal(response.statusCode, 200)
      assert.match(String(response.headers['content-type']), /application\/json/)
      const document = response.json()
      const result = await validate(structuredClone(document))
      assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
      assert.deepEqual(Object.keys(document.paths).sort(), ['/admin/items', '/admin/items/{id}', '/items', '/items/{id}'])
      const stored = await database.db.selectFrom('items').select('name').execute()
      assert.deepEqual(stored, [{ name: 'documented' }])
    })

    test('200 viewsets make one valid document, every component once and every reference resolved', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      void app.register(viewsetDocs)
      for (let index = 1; index <= 200; index++) {
        void app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: `/t${index}/items` })
      }
      await app.ready()
      const created = await app.inject({ method: 'POST', url: '/t200/items', payload: { name: 'last' } })
      assert.equal(created.statusCode, 201)
      const response = await app.inject('/docs/json')
      assert.equal(response.statusCode, 200)
      const document = response.json()
      assert.equal(Object.keys(document.paths).length, 400)
      const schemas = Object.keys(document.components.schemas)
      assert.equal(schemas.length, 200 * 5 + 1)
      assert.ok(schemas.includes('T200Items') && schemas.includes('T1ItemsPatch') && schemas.includes('ViewsetProblem'))
      const references = new Set(JSON.stringify(document.paths).match(/#\/components\/schemas\/[A-Za-z0-9]+/g))
      assert.deepEqual([...references].filter((reference) => !schemas.includes(reference.split('/').at(-1) ?? '')), [])
      assert.deepEqual(document.paths['/t200/items/{id}'].get.responses['200'].content['application/json'].schema, {
        $ref: '#/components/schemas/T200Items',
      })
      const result = await validate(structuredClone(document))
      assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
      const stored = await database.db.selectFrom('items').select('name').execute()
      assert.deepEqual(stored, [{ name: 'last' }])
    })

    test("under viewsetDocs a custom route's answer may still name the viewset's components ({ $ref: 'Items#' })", async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      await database.db.insertInto('items').values({ name: 'first' }).execute()
      class Items extends Viewset<ItemsDB, 'items', typeof Item> {
        override customRoutes (fastify: FastifyInstance) {
          fastify.get('/first', { schema: { response: { 200: { $ref: 'Items#' } } } }, async () =>
            await this.query().orderBy('id').executeTakeFirstOrThrow())
        }
      }
      const app = testApp(t)
      await app.register(viewsetDocs)
      await app.register(new Items({ db: database.db, table: 'items', schema: Item }).register(), { prefix: '/items' })
      const response = await app.inject('/items/first')
      assert.equal(response.statusCode, 200)
      assert.match(String(response.headers['content-type']), /application\/json/)
      // Written by the row component: the column the schema leaves out is not sent.
      const row = response.json()
      assert.equal(row.name, 'first')
      assert.equal('secret' in row, false)
      const document = (await app.inject('/docs/json')).json()
      assert.deepEqual(document.paths['/items/first'].get.responses['200'].content['application/json'].schema, {
        $ref: '#/components/schemas/Items',
      })
      assert.equal((await database.db.selectFrom('items').selectAll().execute()).length, 1)
    })
  })
}
