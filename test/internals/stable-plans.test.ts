import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { CompiledQuery, sql } from 'kysely'
import { createViewset, Viewset } from 'fastify-viewsets'
import type { ListRequest } from 'fastify-viewsets'
import { autoIncrement, databaseSetups, dialects, setupDatabase } from '../helpers/database.js'
import type { DatabaseSetup, TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// SQLite built with STAT4 (better-sqlite3 is) plans an index term with the value it compares with, and then
// prepares the statement again each time another value is bound: every filtered LIST of an analyzed table was
// parsed and planned anew. The library's own statements write those values `+?` on SQLite (the same value, which
// the planner does not read): the same rows, the index still used. Other dialects' SQL is unchanged, and so is
// a query the user builds.

const Reading = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  sensor: Type.Integer(),
  value: Type.Integer(),
})
interface Reading {
  id: number
  sensor: number
  value: number
}

/** Sensor 1 has most readings: the skew that STAT4 samples. */
const seed: Reading[] = Array.from({ length: 60 }, (_, index) => ({
  id: index + 1,
  sensor: index < 40 ? 1 : 2 + (index % 4),
  value: (index * 37) % 101,
}))

const byValue = (left: Reading, right: Reading) => left.value - right.value || left.id - right.id
const matching = (keep: (reading: Reading) => boolean) => seed.filter(keep).sort(byValue)

async function seeded (t: TestContext, dialect: TestDialect, setup: DatabaseSetup): Promise<TestDatabase> {
  const database = await setupDatabase(t, dialect, setup)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema
    .createTable('readings')
    .addColumn('id', idType as 'integer', id)
    .addColumn('sensor', 'integer', (column) => column.notNull())
    .addColumn('value', 'integer', (column) => column.notNull())
    .execute()
  await db.schema.createIndex('readings_sensor').on('readings').column('sensor').execute()
  await db.schema.createIndex('readings_value').on('readings').columns(['value', 'id']).execute()
  await db
    .insertInto('readings')
    .values(seed.map(({ sensor, value }) => ({ sensor, value })))
    .execute()
  await sql
    .raw(
      dialect.name === 'mysql'
        ? 'analyze table readings'
        : dialect.name === 'postgres'
          ? 'analyze readings'
          : 'analyze'
    )
    .execute(db)
  return database
}

const options = {
  table: 'readings',
  schema: Reading,
  methods: ['LIST' as const],
  filterFields: { sensor: ['eq' as const, 'in' as const, 'gte' as const, 'lt' as const] },
  orderingFields: ['value' as const, 'id' as const],
}

/** A comparison whose value is a bare placeholder: `= ?`, `> $1`, `in (?`, `(?, ?)` after an operator. */
// PostgreSQL's integer ordering bounds are `cast($n as bigint)` (filters.ts): a bound past int4 is not refused.
const barePlaceholder = /(?:=|<|>|\bin \()\s*\(?(?:\?|\$\d|cast\(\$\d+ as bigint\))/i

for (const dialect of dialects) {
  describe(`the data layer's statements keep one plan on ${dialect.name}`, () => {
    for (const setup of databaseSetups) {
      test(`filtered and cursor LISTs answer the same rows, their values compared ${dialect.name === 'sqlite' ? 'as +?' : 'as bound'} (${setup})`, async (t) => {
        const database = await seeded(t, dialect, setup)
        const app = testApp(t)
        await app.register(createViewset({ db: database.db, ...options }), { prefix: '/readings' })
        await app.register(createViewset({ db: database.db, ...options, pagination: 'cursor' }), { prefix: '/pages' })
        const statements: string[] = []
        const get = async (url: string) => {
          database.queries.length = 0
          const response = await app.inject({ url })
          assert.equal(response.statusCode, 200, `${url}: ${response.body}`)
          assert.match(String(response.headers['content-type']), /^application\/json/)
          statements.push(...database.queries)
          return response
        }

        const many = await get('/readings?sensor=1&order_by=value&count=true&limit=5')
        assert.deepEqual(many.json(), matching((reading) => reading.sensor === 1).slice(0, 5))
        assert.equal(many.headers['x-total-count'], '40')
        assert.equal(many.headers.link, '</readings?sensor=1&order_by=value&count=true&limit=5&offset=5>; rel="next"')
        const few = await get('/readings?sensor=3&order_by=value&count=true&limit=5')
        assert.deepEqual(
          few.json(),
          matching((reading) => reading.sensor === 3)
        )
        assert.equal(few.headers['x-total-count'], '5')
        assert.equal(few.headers.link, undefined)
        const listed = await get('/readings?sensor__in=2,3,4&order_by=value&limit=20')
        assert.deepEqual(
          listed.json(),
          matching((reading) => [2, 3, 4].includes(reading.sensor))
        )
        const ranged = await get('/readings?sensor__gte=2&sensor__lt=4&order_by=value&limit=20')
        assert.deepEqual(
          ranged.json(),
          matching((reading) => reading.sensor >= 2 && reading.sensor < 4)
        )

        const first = await get('/pages?sensor=1&order_by=value&limit=4')
        const ones = matching((reading) => reading.sensor === 1)
        assert.deepEqual(first.json(), ones.slice(0, 4))
        const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1]
        assert.ok(next !== undefined, String(first.headers.link))
        const second = await get(next)
        assert.deepEqual(second.json(), ones.slice(4, 8))

        const reads = statements.filter((statement) => statement.toLowerCase().startsWith('select'))
        assert.ok(
          reads.some((statement) => /\) > \(/.test(statement)),
          `a row-value keyset: ${reads.join('\n')}`
        )
        if (dialect.name === 'sqlite') {
          for (const statement of reads) {
            assert.doesNotMatch(statement, barePlaceholder, statement)
            assert.match(statement, /\+\?/, statement)
          }
        } else {
          for (const statement of reads) assert.doesNotMatch(statement, /\+(?:\?|\$\d)/, statement)
          assert.ok(
            reads.every((statement) => barePlaceholder.test(statement)),
            reads.join('\n')
          )
        }
      })
    }

    test('the index still serves each filtered statement', async (t) => {
      const database = await seeded(t, dialect, 'createDatabase')
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, ...options }), { prefix: '/readings' })
      for (const [url, count] of [
        ['/readings?sensor=4', 5],
        ['/readings?sensor__in=4,5', 10],
        ['/readings?sensor__gte=4&sensor__lt=5', 5],
      ] as const) {
        database.queries.length = 0
        const response = await app.inject({ url })
        assert.equal(response.statusCode, 200)
        assert.equal(response.json().length, count, url)
        const [statement] = database.queries
        assert.ok(statement !== undefined)
        if (dialect.name !== 'sqlite') {
          assert.doesNotMatch(statement, /\+(?:\?|\$\d)/)
          continue
        }
        // The plan SQLite makes of the very text the viewset ran (placeholders bound to any value).
        const placeholders = statement.split('?').length - 1
        const { rows } = await database.db.executeQuery<{ detail: string }>(
          CompiledQuery.raw(
            `explain query plan ${statement}`,
            Array.from({ length: placeholders }, () => 4)
          )
        )
        assert.ok(
          rows.some((row) => /USING (?:COVERING )?INDEX readings_sensor \(sensor/.test(row.detail)),
          `${statement}: ${JSON.stringify(rows)}`
        )
      }
    })

    test('a query the user builds in an override is compiled as written', async (t) => {
      const database = await seeded(t, dialect, 'createDatabase')
      class Readings extends Viewset<any, 'readings', typeof Reading> {
        override async list (_request: ListRequest) {
          return await this.query().where('sensor', '=', 3).orderBy('id').execute()
        }
      }
      const app = testApp(t)
      await app.register(
        new Readings({ db: database.db, table: 'readings', schema: Reading, methods: ['LIST'] }).register(),
        { prefix: '/readings' }
      )
      database.queries.length = 0
      const response = await app.inject({ url: '/readings' })
      assert.equal(response.statusCode, 200)
      assert.deepEqual(
        response.json(),
        seed.filter((reading) => reading.sensor === 3)
      )
      assert.equal(database.queries.length, 1)
      assert.match(
        database.queries[0] ?? '',
        dialect.name === 'postgres' ? /"sensor" = \$1/ : /"sensor" = \?|`sensor` = \?/
      )
    })
  })
}
