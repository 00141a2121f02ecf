// Issue 34, found by the outside-tool acceptance (test/stress/openapi-tools.test.ts): an ordering filter on an
// int4 column is documented for any safe integer (an ordering bound need not be storable), but PostgreSQL bound
// it as an int4 and refused `id__lt=5143917410664081` with a 400. It now compares through an int8 there, and
// every dialect answers what the comparison means.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

const Score = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  points: Type.Integer(),
})

const big = 5143917410664081

for (const dialect of dialects) {
  describe(`ordering filters past an int4 column's range on ${dialect.name}`, () => {
    test('a bound past the column type compares as a number: all rows or none, never a 400', async (t) => {
      const database = await testDatabase(t, dialect)
      const [idType, id] = autoIncrement(dialect.name)
      await database.db.schema.createTable('bounds_scores')
        .addColumn('id', idType as 'integer', id)
        .addColumn('points', 'integer', (column) => column.notNull())
        .execute()
      await database.db.insertInto('bounds_scores').values([{ points: -5 }, { points: 7 }, { points: 2147483647 }]).execute()
      const app = testApp(t)
      await app.register(createViewset({
        db: database.db,
        table: 'bounds_scores',
        schema: Score,
        filterFields: { id: ['gt', 'gte', 'lt', 'lte'], points: ['gt', 'gte', 'lt', 'lte', 'eq'] },
        orderingFields: ['id'],
        defaultOrder: 'id',
      }), { prefix: '/scores' })
      const points = async (query: string): Promise<number[]> => {
        const response = await app.inject(`/scores?${query}`)
        assert.equal(response.statusCode, 200, `${query}: ${response.body}`)
        assert.match(String(response.headers['content-type']), /^application\/json/)
        return response.json().map((row: { points: number }) => row.points)
      }
      assert.deepEqual(await points(`id__lt=${big}`), [-5, 7, 2147483647])
      assert.deepEqual(await points(`id__lte=${big}`), [-5, 7, 2147483647])
      assert.deepEqual(await points(`id__gt=${big}`), [])
      assert.deepEqual(await points(`id__gte=${-big}`), [-5, 7, 2147483647])
      assert.deepEqual(await points(`points__gt=${-big}&points__lt=${big}`), [-5, 7, 2147483647])
      assert.deepEqual(await points('points__gte=7'), [7, 2147483647])
      assert.deepEqual(await points(`points__lt=${-big}`), [])
      // Nothing was changed by reading.
      assert.equal((await database.db.selectFrom('bounds_scores').select('id').execute()).length, 3)
    })
  })
}
