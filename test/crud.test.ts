import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createViewset } from 'fastify-viewsets'
import { dialects, testDatabase } from './helpers/database.js'
import { problemOf, testApp } from './helpers/app.js'
import { createItemsTable, Item } from './helpers/items.js'
import type { TestContext } from 'node:test'
import type { TestDialect } from './helpers/database.js'

async function itemsApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, tags: ['items'] }), { prefix: '/items' })
  return { app, ...database }
}

for (const dialect of dialects) {
  describe(`CRUD on ${dialect.name}`, () => {
    test('POST creates a row and answers 201 with Location and the row as stored', async (t) => {
      const { app } = await itemsApp(t, dialect)
      const response = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread', id: 999 } })
      assert.equal(response.statusCode, 201)
      const body = response.json()
      assert.equal(typeof body.id, 'number')
      assert.notEqual(body.id, 999, 'a read-only id in the body is ignored')
      assert.equal(response.headers.location, `/items/${body.id}`)
      assert.deepEqual(body, { id: body.id, name: 'Bread', description: null, price: 0, in_stock: true })
      assert.equal('secret' in body, false)
    })
  })
}
