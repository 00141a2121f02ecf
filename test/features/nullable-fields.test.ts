import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// A nullable field (`Union([X, Null])`) is answered from what each driver returns for its column: pg's
// NUMERIC and int8 as strings, SQLite's booleans as 0/1, a small BIGINT as a number. The response is
// written as the schema says, never a 500.

const Reading = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  flag: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  amount: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  total: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  code: Type.Optional(Type.Union([Type.String({ pattern: '^-?[0-9]{1,19}$' }), Type.Null()])),
})

async function readingsApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  const [idType, id] = autoIncrement(dialect.name)
  await database.db.schema.createTable('readings')
    .addColumn('id', idType as 'integer', id)
    .addColumn('flag', 'boolean')
    .addColumn('amount', 'numeric(10, 2)')
    .addColumn('total', 'bigint')
    .addColumn('code', 'bigint')
    .execute()
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'readings', schema: Reading }), { prefix: '/readings' })
  return app
}

for (const dialect of dialects) {
  describe(`nullable scalar fields on ${dialect.name}`, () => {
    test('POST, GET and LIST answer a nullable boolean, NUMERIC, BIGINT as integer and BIGINT as string', async (t) => {
      const app = await readingsApp(t, dialect)
      const created = await app.inject({ method: 'POST', url: '/readings', payload: { flag: true, amount: 12.5, total: 42, code: '7' } })
      assert.equal(created.statusCode, 201, created.body)
      const id = created.json().id as number
      const expected = { id, flag: true, amount: 12.5, total: 42, code: '7' }
      assert.deepEqual(created.json(), expected)
      const empty = await app.inject({ method: 'POST', url: '/readings', payload: { flag: null, amount: null, total: null, code: null } })
      assert.equal(empty.statusCode, 201, empty.body)
      const nulls = { id: empty.json().id as number, flag: null, amount: null, total: null, code: null }
      assert.deepEqual(empty.json(), nulls)

      const read = await app.inject(`/readings/${id}`)
      assert.equal(read.statusCode, 200, read.body)
      assert.deepEqual(read.json(), expected)
      const list = await app.inject('/readings')
      assert.equal(list.statusCode, 200, list.body)
      assert.deepEqual(list.json(), [expected, nulls])
      const chosen = await app.inject('/readings?fields=flag,amount,total,code')
      assert.equal(chosen.statusCode, 200, chosen.body)
      assert.deepEqual(chosen.json(), [{ flag: true, amount: 12.5, total: 42, code: '7' }, { flag: null, amount: null, total: null, code: null }])
      const falsy = await app.inject({ method: 'PATCH', url: `/readings/${id}`, payload: { flag: false } })
      assert.equal(falsy.statusCode, 200, falsy.body)
      assert.equal(falsy.json().flag, false)
    })

    test('the documented schema keeps the union (OpenAPI 3.1); a wrong type is still a 400', async (t) => {
      const app = await readingsApp(t, dialect)
      const bad = await app.inject({ method: 'POST', url: '/readings', payload: { flag: 'yes' } })
      assert.equal(bad.statusCode, 400)
      assert.deepEqual(bad.json().errors, [{ in: 'body', field: 'flag', message: 'must be boolean or null' }])
    })
  })
}
