import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { createViewset } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// Concurrent writes of the same keys: the library's own statements must not deadlock one another into 503s
// (issue 34 item 9). MariaDB's INSERT … ON DUPLICATE KEY UPDATE of a new key takes gap locks, and two bulk
// upserts that meet the same keys in opposite orders wait on each other: both need real concurrency, so
// the pool is larger than the number of requests in flight.

const Counter = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ maxLength: 64 }),
  hits: Type.Integer(),
})

const merge = { prefer: 'resolution=merge-duplicates' }
// More connections than the bulk test's requests, fewer than the upsert test's: some wait for a connection.
const poolSize = 12

async function countersApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect, { poolSize })
  const [idType, id] = autoIncrement(dialect.name)
  await database.db.schema
    .createTable('counters')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull().unique())
    .addColumn('hits', 'integer', (column) => column.notNull())
    .execute()
  const app = testApp(t)
  await app.register(
    createViewset({
      db: database.db,
      table: 'counters',
      schema: Counter,
      methods: ['LIST', 'GET', 'POST', 'BULK'],
      conflictFields: ['name'],
    }),
    { prefix: '/counters' }
  )
  await app.ready()
  // Open every connection first: a cold pool would space the requests out by its connection setups.
  await Promise.all(Array.from({ length: poolSize }, async () => await sql`select 1`.execute(database.db)))
  return { app, ...database }
}

for (const dialect of dialects) {
  describe(`concurrent upserts (${dialect.name})`, () => {
    test('30 concurrent upserts of one new key: one 201, 29 × 200, one row', async (t) => {
      const { app, db } = await countersApp(t, dialect)
      const responses = await Promise.all(
        Array.from({ length: 30 }, async (_, index) =>
          await app.inject({
            method: 'POST',
            url: '/counters',
            headers: merge,
            payload: { name: 'shared', hits: index },
          })
        )
      )
      const statuses = responses.map((response) => response.statusCode)
      assert.deepEqual(
        statuses.filter((status) => status === 201).length,
        1,
        `statuses: ${statuses.join(', ')}; ${responses.find((r) => r.statusCode >= 500)?.body ?? ''}`
      )
      assert.equal(statuses.filter((status) => status === 200).length, 29, `statuses: ${statuses.join(', ')}`)
      const stored = await db.selectFrom('counters').selectAll().execute()
      assert.equal(stored.length, 1)
      const [row] = stored
      assert.equal(row?.name, 'shared')
      // The last write wins: the stored value is one a request sent, and the one its answer shows.
      const bodies = responses.map((response) => response.json())
      assert.ok(bodies.some((body) => body.hits === row?.hits))
      for (const body of bodies) assert.equal(body.name, 'shared')
    })

    test('10 concurrent bulk upserts of the same keys in opposite orders: all succeed, each answer in its own order', async (t) => {
      const { app, db } = await countersApp(t, dialect)
      const names = Array.from({ length: 20 }, (_, index) => `key-${String(index).padStart(2, '0')}`)
      const responses = await Promise.all(
        Array.from({ length: 10 }, async (_, request) => {
          const ordered = request % 2 === 0 ? names : [...names].reverse()
          return await app.inject({
            method: 'POST',
            url: '/counters/bulk',
            headers: merge,
            payload: ordered.map((name) => ({ name, hits: request })),
          })
        })
      )
      const statuses = responses.map((response) => response.statusCode)
      assert.ok(
        statuses.every((status) => status === 200 || status === 201),
        `statuses: ${statuses.join(', ')}; ${responses.find((r) => r.statusCode >= 500)?.body ?? ''}`
      )
      responses.forEach((response, request) => {
        const ordered = request % 2 === 0 ? names : [...names].reverse()
        const body: Array<{ name: string; hits: number }> = response.json()
        assert.deepEqual(
          body.map((row) => row.name),
          ordered
        )
        assert.ok(body.every((row) => row.hits === request))
      })
      const stored = await db.selectFrom('counters').select(['name', 'hits']).orderBy('name').execute()
      assert.deepEqual(
        stored.map((row) => row.name),
        names
      )
      // Every bulk is all or none: the rows hold one request's values, the last one to commit.
      assert.equal(new Set(stored.map((row) => row.hits)).size, 1)
    })
  })
}
