// Issue 36, item 9: examples/override, the README's pattern for overriding `list`, is bounded as the generated LIST
// is. Its `order_by` goes through the library's own parser (parseOrderBy): an unknown, repeated or excess key is a
// 400 before any statement runs; its `search` has a maxLength. Good requests are still served.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { Kysely } from 'kysely'
import { parseOrderBy, orderByPattern } from 'fastify-viewsets'
import { build, orderingFields } from '../../examples/override/app.js'
import type { DB } from '../../examples/override/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf } from '../helpers/app.js'

async function overrideApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  const app = await build({ db: database.db as Kysely<DB> })
  t.after(() => app.close())
  for (const name of ['Bread', 'Apple', 'Cheese']) {
    const created = await app.inject({ method: 'POST', url: '/items', payload: { name } })
    assert.equal(created.statusCode, 201, created.body)
  }
  return { app, queries: database.queries }
}

const names = (body: string): string[] => JSON.parse(body).map((row: { name: string }) => row.name)

for (const dialect of dialects) {
  describe(`examples/override is bounded (${dialect.name})`, () => {
    test('repeated, unknown and excess order_by keys are a 400 that runs no statement', async (t) => {
      const { app, queries } = await overrideApp(t, dialect)
      const cases = [
        'created_at,created_at',
        'name,-name',
        Array(1500).fill('created_at').join(','),
        Array(1500).fill('-name').join(','),
        ['name', 'created_at', ...Array(1498).fill('id')].join(','),
        'x',
        'name,',
      ]
      for (const orderBy of cases) {
        queries.length = 0
        const response = await app.inject({ url: `/items?order_by=${orderBy}` })
        assert.equal(response.statusCode, 400, `${orderBy.slice(0, 40)}: ${response.body}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_UNSUPPORTED_ORDERING')
        assert.match(problemOf(response).detail, /the allowed fields are name, created_at/)
        assert.deepEqual(queries, [], 'nothing ran')
      }
      assert.match(
        problemOf(await app.inject({ url: '/items?order_by=created_at,created_at' })).detail,
        /"created_at" \(listed twice\)/
      )
    })

    test('a search longer than its maxLength is a 400 naming it; good requests are served', async (t) => {
      const { app } = await overrideApp(t, dialect)
      const long = await app.inject({ url: `/items?search=${'a'.repeat(101)}` })
      assert.equal(long.statusCode, 400, long.body)
      assert.equal(problemOf(long).code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(problemOf(long).errors?.map((error) => error.field), ['search'])

      const byName = await app.inject({ url: '/items?order_by=name' })
      assert.equal(byName.statusCode, 200, byName.body)
      assert.deepEqual(names(byName.body), ['Apple', 'Bread', 'Cheese'])
      const descending = await app.inject({ url: '/items?order_by=-name,created_at' })
      assert.deepEqual(names(descending.body), ['Cheese', 'Bread', 'Apple'])
      const searched = await app.inject({ url: '/items?search=e&order_by=-created_at,name' })
      assert.equal(searched.statusCode, 200, searched.body)
      assert.deepEqual(names(searched.body).sort(), ['Apple', 'Bread', 'Cheese'])
      const full = await app.inject({ url: `/items?search=${'a'.repeat(100)}` })
      assert.equal(full.statusCode, 200, full.body)
      assert.deepEqual(full.json(), [])
      // The default order (-created_at, then id) still serves the newest first.
      assert.equal((await app.inject({ url: '/items' })).statusCode, 200)
    })

    test('the document shows the bounds: the order_by pattern and the search maxLength', async (t) => {
      const { app } = await overrideApp(t, dialect)
      const document = (await app.inject('/docs/json')).json()
      const parameters: Array<{ name: string, schema: Record<string, unknown> }> = document.paths['/items'].get.parameters
      const schemaOf = (name: string) => parameters.find((parameter) => parameter.name === name)?.schema
      assert.equal(schemaOf('order_by')?.pattern, orderByPattern(orderingFields))
      assert.equal(schemaOf('search')?.maxLength, 100)
    })
  })
}

test('parseOrderBy reads keys as the generated LIST does, typed by the allowed fields', () => {
  assert.deepEqual(parseOrderBy('-created_at,name', orderingFields, 'id'), [
    { field: 'created_at', descending: true },
    { field: 'name', descending: false },
    { field: 'id', descending: false },
  ])
  assert.deepEqual(parseOrderBy('name', orderingFields), [{ field: 'name', descending: false }])
  assert.throws(() => parseOrderBy('name,name', orderingFields, 'id'), { code: 'FST_VIEWSET_UNSUPPORTED_ORDERING' })
  assert.throws(() => parseOrderBy('', orderingFields), { code: 'FST_VIEWSET_UNSUPPORTED_ORDERING' })
  assert.ok(new RegExp(orderByPattern(orderingFields), 'u').test('-name,created_at'))
  assert.ok(!new RegExp(orderByPattern(orderingFields), 'u').test('name,-name'))
})

test('parseOrderBy reads the .nullsfirst/.nullslast suffix that order_by accepts, and its pattern documents it', () => {
  assert.deepEqual(parseOrderBy('-created_at.nullslast,name.nullsfirst', orderingFields, 'id'), [
    { field: 'created_at', descending: true, nulls: 'last' },
    { field: 'name', descending: false, nulls: 'first' },
    { field: 'id', descending: false },
  ])
  // A choice equal to the default rule is still reported as written.
  assert.deepEqual(parseOrderBy('-name.nullsfirst', orderingFields), [{ field: 'name', descending: true, nulls: 'first' }])
  for (const bad of ['name.nullsmiddle', 'name.nullsfirst.nullslast', 'name.nullsfirst,name.nullslast', '.nullsfirst']) {
    assert.throws(() => parseOrderBy(bad, orderingFields, 'id'), { code: 'FST_VIEWSET_UNSUPPORTED_ORDERING' }, bad)
  }
  const pattern = new RegExp(orderByPattern(orderingFields), 'u')
  assert.ok(pattern.test('-created_at.nullslast,name.nullsfirst'))
  assert.ok(!pattern.test('name.nullsmiddle'))
  assert.ok(!pattern.test('name.nullsfirst,-name'))
})
