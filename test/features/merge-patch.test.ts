// PATCH takes application/merge-patch+json (RFC 7396) as well as JSON; POST and PUT don't. A 415 of
// PATCH and OPTIONS on the element path say so with Accept-Patch (RFC 5789).
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createViewset } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

const acceptPatch = 'application/json, application/merge-patch+json'

for (const dialect of dialects) {
  describe(`merge patch on ${dialect.name}`, () => {
    test('PATCH merges a merge-patch+json body (charset or not); POST and PUT answer 415; Accept-Patch on 415 and OPTIONS', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'lamp', description: 'old', price: 3 } })
      const id = created.json().id as number
      for (const type of ['application/merge-patch+json', 'application/merge-patch+json; charset=utf-8']) {
        const patched = await app.inject({ method: 'PATCH', url: `/items/${id}`, headers: { 'content-type': type }, payload: JSON.stringify({ description: null, price: 4 }) })
        assert.equal(patched.statusCode, 200, patched.body)
        assert.deepEqual(patched.json(), { id, name: 'lamp', description: null, price: 4, in_stock: true })
      }
      // Validated like JSON: an unknown field is a 400.
      const invalid = await app.inject({ method: 'PATCH', url: `/items/${id}`, headers: { 'content-type': 'application/merge-patch+json' }, payload: '{"colour":"red"}' })
      assert.equal(invalid.statusCode, 400)
      for (const method of ['POST', 'PUT'] as const) {
        const refused = await app.inject({ method, url: method === 'POST' ? '/items' : `/items/${id}`, headers: { 'content-type': 'application/merge-patch+json' }, payload: '{"name":"x"}' })
        assert.equal(refused.statusCode, 415, `${method}: ${refused.body}`)
        assert.equal(problemOf(refused).code, 'FST_VIEWSET_UNSUPPORTED_MEDIA_TYPE')
        assert.equal(refused.headers['accept-patch'], undefined)
      }
      const text = await app.inject({ method: 'PATCH', url: `/items/${id}`, headers: { 'content-type': 'text/plain' }, payload: 'x' })
      assert.equal(text.statusCode, 415)
      assert.equal(text.headers['accept-patch'], acceptPatch)
      const options = await app.inject({ method: 'OPTIONS', url: `/items/${id}` })
      assert.equal(options.statusCode, 204)
      assert.equal(options.headers['accept-patch'], acceptPatch)
      assert.match(String(options.headers.allow), /PATCH/)
      assert.equal((await app.inject({ method: 'OPTIONS', url: '/items' })).headers['accept-patch'], undefined)
    })
  })
}
