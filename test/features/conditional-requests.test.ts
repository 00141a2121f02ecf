// Conditional requests (issue 17): ETag on GET and writes, If-None-Match → 304, If-Match on PUT, PATCH and
// DELETE checked with the write (412), requireIfMatch (428), and versionField.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

const VersionedItem = Type.Object({ ...Item.properties, version: Type.Optional(Type.Integer()) })

async function itemsApp (t: TestContext, dialect: TestDialect, options: { versionField?: 'version', requireIfMatch?: boolean } = {}) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  await database.db.schema.alterTable('items').addColumn('version', 'integer', (column) => column.notNull().defaultTo(1)).execute()
  const app = testApp(t)
  const viewset = options.versionField === undefined
    ? createViewset({ db: database.db, table: 'items', schema: Item, ...(options.requireIfMatch === undefined ? {} : { requireIfMatch: options.requireIfMatch }) })
    : createViewset({ db: database.db, table: 'items', schema: VersionedItem, versionField: options.versionField })
  await app.register(viewset, { prefix: '/items' })
  await app.ready()
  const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'counter', price: 2 } })
  assert.equal(created.statusCode, 201, created.body)
  return { app, db: database.db, id: created.json().id as number, created }
}

for (const dialect of dialects) {
  describe(`conditional requests on ${dialect.name}`, () => {
    test('GET sends a strong ETag, the one POST sent; If-None-Match (weak comparison) answers 304 with it', async (t) => {
      const { app, id, created } = await itemsApp(t, dialect)
      const read = await app.inject({ method: 'GET', url: `/items/${id}` })
      assert.equal(read.statusCode, 200)
      assert.match(String(read.headers.etag), /^"[A-Za-z0-9_-]+"$/)
      assert.equal(created.headers.etag, read.headers.etag)
      for (const header of [read.headers.etag, `W/${String(read.headers.etag)}`, `"other", ${String(read.headers.etag)}`, '*']) {
        const again = await app.inject({ method: 'GET', url: `/items/${id}`, headers: { 'if-none-match': String(header) } })
        assert.equal(again.statusCode, 304, String(header))
        assert.equal(again.headers.etag, read.headers.etag)
        assert.equal(again.body, '')
      }
      assert.equal((await app.inject({ method: 'GET', url: `/items/${id}`, headers: { 'if-none-match': '"other"' } })).statusCode, 200)
      // A ?fields= answer without versionField has no tag, and If-None-Match is ignored.
      const partial = await app.inject({ method: 'GET', url: `/items/${id}?fields=name`, headers: { 'if-none-match': '*' } })
      assert.equal(partial.statusCode, 200)
      assert.equal(partial.headers.etag, undefined)
      assert.deepEqual(partial.json(), { name: 'counter' })
    })

    test('the lost update: two read-modify-write PATCHes with the same tag get one 200 and one 412', async (t) => {
      const { app, db, id } = await itemsApp(t, dialect)
      const read = await app.inject({ method: 'GET', url: `/items/${id}` })
      const price = read.json().price as number
      // Both read price 2 and write price + 1: without If-Match, both would answer 200 and the price would be 3.
      const writes = await Promise.all([1, 2].map(async () => await app.inject({
        method: 'PATCH', url: `/items/${id}`, headers: { 'if-match': String(read.headers.etag) }, payload: { price: price + 1 },
      })))
      assert.deepEqual(writes.map((write) => write.statusCode).sort(), [200, 412])
      const failed = writes.find((write) => write.statusCode === 412)
      assert.equal(problemOf(failed ?? writes[0]!).code, 'FST_VIEWSET_PRECONDITION_FAILED')
      const written = writes.find((write) => write.statusCode === 200)
      // The winner's ETag is the one a GET sends next; the loser retries with it.
      const after = await app.inject({ method: 'GET', url: `/items/${id}` })
      assert.equal(written?.headers.etag, after.headers.etag)
      const retry = await app.inject({ method: 'PATCH', url: `/items/${id}`, headers: { 'if-match': String(after.headers.etag) }, payload: { price: after.json().price + 1 } })
      assert.equal(retry.statusCode, 200)
      assert.equal((await db.selectFrom('items').select('price').where('id', '=', id).executeTakeFirstOrThrow()).price, 4)
    })

    test('a stale If-Match on PUT, PATCH or DELETE answers 412 and changes nothing; * matches any row; a missing row is 404', async (t) => {
      const { app, db, id } = await itemsApp(t, dialect)
      const before = await db.selectFrom('items').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      const stale = { 'if-match': '"stale"' }
      for (const [method, payload] of [['PUT', { name: 'renamed' }], ['PATCH', { name: 'renamed' }], ['DELETE', undefined]] as const) {
        const response = await app.inject({ method, url: `/items/${id}`, headers: stale, ...(payload === undefined ? {} : { payload }) })
        assert.equal(response.statusCode, 412, `${method}: ${response.body}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_PRECONDITION_FAILED')
      }
      // A weak tag never matches If-Match (strong comparison).
      const etag = String((await app.inject({ method: 'GET', url: `/items/${id}` })).headers.etag)
      assert.equal((await app.inject({ method: 'PATCH', url: `/items/${id}`, headers: { 'if-match': `W/${etag}` }, payload: { name: 'renamed' } })).statusCode, 412)
      assert.deepEqual(await db.selectFrom('items').selectAll().where('id', '=', id).executeTakeFirstOrThrow(), before)
      assert.equal((await app.inject({ method: 'PATCH', url: '/items/999999', headers: stale, payload: { name: 'x' } })).statusCode, 404)
      assert.equal((await app.inject({ method: 'PATCH', url: `/items/${id}`, headers: { 'if-match': '*' }, payload: { name: 'renamed' } })).statusCode, 200)
      assert.equal((await app.inject({ method: 'DELETE', url: `/items/${id}`, headers: { 'if-match': '*' } })).statusCode, 204)
    })

    test('requireIfMatch: a write without If-Match is a 428 (after the 404 of a missing row), never for POST', async (t) => {
      const { app, id, created } = await itemsApp(t, dialect, { requireIfMatch: true })
      for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
        const response = await app.inject({ method, url: `/items/${id}`, ...(method === 'DELETE' ? {} : { payload: { name: 'renamed' } }) })
        assert.equal(response.statusCode, 428, `${method}: ${response.body}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_PRECONDITION_REQUIRED')
        assert.equal((await app.inject({ method, url: '/items/999999', ...(method === 'DELETE' ? {} : { payload: { name: 'x' } }) })).statusCode, 404)
      }
      const ok = await app.inject({ method: 'PATCH', url: `/items/${id}`, headers: { 'if-match': String(created.headers.etag) }, payload: { name: 'renamed' } })
      assert.equal(ok.statusCode, 200, ok.body)
    })

    test('If-Match and scope compose: a row outside the scope is a 404 whatever the tag, and nothing changes', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      // Only rows whose name starts with "mine" are in the scope.
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item, withoutTokens: true, scope: (eb) => eb('name', 'like', 'mine%') }), { prefix: '/items' })
      await database.db.insertInto('items').values({ name: 'theirs' }).execute()
      const other = (await database.db.selectFrom('items').select('id').where('name', '=', 'theirs').executeTakeFirstOrThrow()).id
      const mine = await app.inject({ method: 'POST', url: '/items', payload: { name: 'mine' } })
      for (const ifMatch of ['*', '"stale"', String(mine.headers.etag)]) {
        const response = await app.inject({ method: 'PATCH', url: `/items/${other}`, headers: { 'if-match': ifMatch }, payload: { name: 'mine too' } })
        assert.equal(response.statusCode, 404, ifMatch)
      }
      assert.equal((await database.db.selectFrom('items').select('name').where('id', '=', other).executeTakeFirstOrThrow()).name, 'theirs')
      const ok = await app.inject({ method: 'PATCH', url: `/items/${String(mine.json().id)}`, headers: { 'if-match': String(mine.headers.etag) }, payload: { price: 1 } })
      assert.equal(ok.statusCode, 200, ok.body)
    })

    test('versionField: the ETag is the version, every PUT and PATCH increments it, and ?fields= answers carry it', async (t) => {
      const { app, id, created } = await itemsApp(t, dialect, { versionField: 'version' })
      assert.equal(created.headers.etag, '"1"')
      const patched = await app.inject({ method: 'PATCH', url: `/items/${id}`, headers: { 'if-match': '"1"' }, payload: {} })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(patched.headers.etag, '"2"')
      assert.equal(patched.json().version, 2)
      // The version is read-only: a body's value is ignored.
      const put = await app.inject({ method: 'PUT', url: `/items/${id}`, payload: { name: 'renamed', version: 100 } })
      assert.equal(put.headers.etag, '"3"')
      const partial = await app.inject({ method: 'GET', url: `/items/${id}?fields=name`, headers: { 'if-none-match': '"3"' } })
      assert.equal(partial.statusCode, 304)
      assert.equal(partial.headers.etag, '"3"')
      assert.equal((await app.inject({ method: 'PATCH', url: `/items/${id}`, headers: { 'if-match': '"2"' }, payload: {} })).statusCode, 412)
    })
  })
}
