// Integers in URLs are canonical decimals (^-?(0|[1-9][0-9]*)$): path ids, limit, offset, filter values
// and each __in element, and string fields over integer columns. Anything else names no row: a 400.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

const nonCanonical = ['0x1', '1e0', '%2B1', '1.0', '01', '%20', '', '-0x1', '1%20']

for (const dialect of dialects) {
  describe(`canonical integers on ${dialect.name}`, () => {
    test('path ids, limit, offset, filter values and __in elements: only canonical decimals', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item, filterFields: { id: ['eq', 'gt', 'in'] } }), { prefix: '/items' })
      const id = (await app.inject({ method: 'POST', url: '/items', payload: { name: 'one' } })).json().id as number
      assert.equal((await app.inject({ method: 'GET', url: `/items/${id}` })).statusCode, 200)
      assert.equal((await app.inject({ method: 'GET', url: `/items?id__in=${id},-2&offset=0&limit=1` })).json().length, 1)
      const urls = (value: string) => [`/items/${value}`, `/items?limit=${value}`, `/items?offset=${value}`, `/items?id=${value}`, `/items?id__gt=${value}`, `/items?id__in=${id},${value}`]
      for (const value of nonCanonical) {
        for (const url of urls(value)) {
          if (url === '/items/') continue // the collection itself
          const response = await app.inject({ method: 'GET', url })
          assert.equal(response.statusCode, 400, `${url}: ${response.body}`)
          assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION', url)
        }
      }
    })

    test('a string field over an integer column is a canonical integer; contains on it fails at startup', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const StringId = Type.Object({ id: Type.Optional(Type.String({ readOnly: true })), name: Type.String() })
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: StringId, filterFields: { id: ['eq', 'in'] } }), { prefix: '/items' })
      const id = String((await app.inject({ method: 'POST', url: '/items', payload: { name: 'one' } })).json().id)
      assert.equal((await app.inject({ method: 'GET', url: `/items/${id}` })).statusCode, 200)
      for (const url of [`/items/0${id}`, `/items/%2B${id}`, '/items/1e0', `/items?id=0${id}`, `/items?id__in=${id},0x1`]) {
        assert.equal((await app.inject({ method: 'GET', url })).statusCode, 400, url)
      }
      const bad = testApp(t)
      await assert.rejects(async () => {
        await bad.register(createViewset({ db: database.db, table: 'items', schema: StringId, filterFields: { id: ['contains'] } }), { prefix: '/items' })
        await bad.ready()
      }, { code: 'FST_VIEWSET_INVALID_OPTION', message: /contains.*integer column/ })
    })
  })
}
