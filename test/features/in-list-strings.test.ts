// Issue 34, item 8, found by the outside-tool acceptance (test/stress/openapi-tools.test.ts): `country__in`
// over a `maxLength: 2` string was documented as any string, and `country__in=abc` was a 400. A plain
// string's `__in` now carries its element's lengths (and, on PostgreSQL, no NUL): what the pattern allows is
// answered 200, what it refuses is the server's 400.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import fc from 'fast-check'
import { createViewset, viewsetDocs } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

const Place = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  country: Type.String({ minLength: 1, maxLength: 2 }),
  label: Type.String(),
})

for (const dialect of dialects) {
  describe(`__in over a plain string on ${dialect.name}`, () => {
    test('the documented pattern is what the server accepts: element lengths, no comma inside', async (t) => {
      const database = await testDatabase(t, dialect)
      const [idType, id] = autoIncrement(dialect.name)
      await database.db.schema.createTable('tools_places')
        .addColumn('id', idType as 'integer', id)
        .addColumn('country', 'varchar(2)', (column) => column.notNull())
        .addColumn('label', 'varchar(50)', (column) => column.notNull())
        .execute()
      await database.db.insertInto('tools_places').values([
        { country: 'fr', label: 'Paris' }, { country: 'de', label: 'Berlin' },
      ]).execute()
      const app = testApp(t)
      await app.register(viewsetDocs)
      await app.register(createViewset({
        db: database.db,
        table: 'tools_places',
        schema: Place,
        filterFields: { country: ['in'], label: ['in'] },
      }), { prefix: '/places' })
      const document = (await app.inject('/docs/json')).json()
      const parameter = (name: string) =>
        document.paths['/places'].get.parameters.find((p: { name: string }) => p.name === name).schema
      const country = new RegExp(parameter('country__in').pattern, 'u')
      const nul = dialect.name === 'postgres' ? '\\x00' : ''
      assert.equal(parameter('country__in').pattern, `^[^,${nul}]{1,2}(?:,[^,${nul}]{1,2})*$`)
      // A string no length bounds is documented as before (no pattern) where NUL is storable.
      assert.equal(parameter('label__in').pattern, dialect.name === 'postgres' ? `^[^,${nul}]{0,}(?:,[^,${nul}]{0,})*$` : undefined)

      const samples = fc.sample(fc.stringMatching(country), { numRuns: 40, seed: 34 })
      for (const value of samples) {
        const response = await app.inject({ method: 'GET', url: '/places', query: { country__in: value } })
        assert.equal(response.statusCode, 200, `country__in=${JSON.stringify(value)}: ${response.body}`)
      }
      const both = await app.inject({ method: 'GET', url: '/places', query: { country__in: 'fr,de' } })
      assert.deepEqual(both.json().map((row: { label: string }) => row.label).sort(), ['Berlin', 'Paris'])
      for (const value of ['abc', 'fr,abc', 'fr,', '']) {
        assert.equal(country.test(value), false, `the document refuses ${JSON.stringify(value)}`)
        const response = await app.inject({ method: 'GET', url: '/places', query: { country__in: value } })
        assert.equal(response.statusCode, 400, `country__in=${JSON.stringify(value)}: ${response.body}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
      }
    })
  })
}
