import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

// BIGINT columns whose values can pass 2^53 are served through Type.String(): their exact digits go in and
// come out on every dialect. Type.Integer stays bounded to ±(2^53 - 1), where a JavaScript number is exact.

const Counter = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  big: Type.String({ pattern: '^-?[0-9]{1,19}$' }),
  small: Type.Optional(Type.Integer()),
})

const past53 = '9007199254740993' // 2^53 + 1: a JavaScript number would read 9007199254740992
const max64 = '9223372036854775807'
const min64 = '-9223372036854775808'

async function countersApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  const [idType, id] = autoIncrement(dialect.name)
  await database.db.schema.createTable('counters')
    .addColumn('id', idType as 'integer', id)
    .addColumn('big', 'bigint', (column) => column.notNull())
    .addColumn('small', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute()
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'counters', schema: Counter, filterFields: { big: ['eq', 'in', 'gt'] }, orderingFields: ['big'] }), { prefix: '/counters' })
  return { app, ...database }
}

for (const dialect of dialects) {
  describe(`BIGINT through a string field on ${dialect.name}`, () => {
    test('POST, GET, PATCH and PUT keep the exact digits past 2^53', async (t) => {
      const { app } = await countersApp(t, dialect)
      const created = await app.inject({ method: 'POST', url: '/counters', payload: { big: past53, small: 7 } })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json().big, past53)
      assert.equal(created.json().small, 7, 'a small BIGINT read through Type.Integer is a number')
      const id = created.json().id as number
      assert.equal(typeof id, 'number')

      const read = await app.inject(`/counters/${id}`)
      assert.equal(read.statusCode, 200)
      assert.deepEqual(read.json(), { id, big: past53, small: 7 })
      assert.match(read.body, /"big":"9007199254740993"/)

      const patched = await app.inject({ method: 'PATCH', url: `/counters/${id}`, payload: { big: max64 } })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(patched.json().big, max64)
      assert.equal((await app.inject(`/counters/${id}`)).json().big, max64)

      const put = await app.inject({ method: 'PUT', url: `/counters/${id}`, payload: { big: min64 } })
      assert.equal(put.statusCode, 200, put.body)
      assert.equal(put.json().big, min64)
      assert.equal((await app.inject('/counters')).json()[0].big, min64)
    })

    test('filters and ordering compare the exact values', async (t) => {
      const { app } = await countersApp(t, dialect)
      for (const big of ['9007199254740992', past53, '9007199254740994', '12']) {
        assert.equal((await app.inject({ method: 'POST', url: '/counters', payload: { big } })).statusCode, 201)
      }
      const equal = await app.inject(`/counters?big=${past53}`)
      assert.equal(equal.statusCode, 200)
      assert.deepEqual(equal.json().map((row: { big: string }) => row.big), [past53])
      const listed = await app.inject(`/counters?big__in=${past53},9007199254740994&order_by=big`)
      assert.deepEqual(listed.json().map((row: { big: string }) => row.big), [past53, '9007199254740994'])
      const greater = await app.inject(`/counters?big__gt=${past53}`)
      assert.deepEqual(greater.json().map((row: { big: string }) => row.big), ['9007199254740994'])
      const ordered = await app.inject('/counters?order_by=-big')
      assert.deepEqual(ordered.json().map((row: { big: string }) => row.big), ['9007199254740994', past53, '9007199254740992', '12'])
    })

    test('an integer field over a BIGINT column refuses values past 2^53 - 1', async (t) => {
      const { app } = await countersApp(t, dialect)
      const response = await app.inject({ method: 'POST', url: '/counters', headers: { 'content-type': 'application/json' }, payload: `{"big":"1","small":${past53}}` })
      assert.equal(response.statusCode, 400)
      assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(problemOf(response).errors?.map((error) => error.field), ['small'])
    })
  })
}
