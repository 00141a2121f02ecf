import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { LightMyRequestResponse } from 'fastify'
import { createViewset } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

const Event = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  at: Type.String({ format: 'date-time' }),
})

// Written in this order; the instants they denote are in the order of their names (a0 < a1 < ... < a6).
const written = [
  { name: 'a3', at: '2024-01-01T12:00:00+02:00' }, // 10:00Z
  { name: 'a0', at: '2024-01-02T00:00:00+23:59' }, // 2024-01-01T00:01Z
  { name: 'a5', at: '2024-01-01t10:00:00.5z' }, // 10:00:00.500Z
  { name: 'a1', at: '2024-01-01T08:00:00-00:00' }, // 08:00Z
  { name: 'a6', at: '2024-01-01T00:00:00-23:59' }, // 23:59Z
  { name: 'a2', at: '2024-01-01T09:30:00.250+00:00' }, // 09:30:00.250Z
  { name: 'a4', at: '2024-01-01T10:00:00.25Z' }, // 10:00:00.250Z
]
const ordered = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6']

async function createEvents ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  const timestamp = dialect === 'postgres' ? 'timestamptz' : dialect === 'mysql' ? 'datetime(3)' : 'datetime'
  await db.schema.createTable('events')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull())
    .addColumn('at', timestamp as 'timestamptz', (column) => column.notNull())
    .execute()
}

async function eventsApp (t: TestContext, dialect: TestDialect, pagination: 'offset' | 'cursor' = 'offset') {
  const database = await testDatabase(t, dialect)
  await createEvents(database)
  const app = testApp(t)
  await app.register(createViewset({
    db: database.db,
    table: 'events',
    schema: Event,
    methods: ['LIST', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'BULK'],
    filterFields: { at: ['eq', 'gte', 'lt'], name: ['eq'] },
    orderingFields: ['at'],
    pagination,
  }), { prefix: '/events' })
  await app.ready()
  return { app, ...database }
}

const names = (body: Array<{ name: string }>) => body.map((row) => row.name)

for (const dialect of dialects) {
  describe(`date-times (${dialect.name})`, () => {
    test('values written with any RFC 3339 offset are accepted, and order_by and __gte/__lt compare instants', async (t) => {
      const { app, db } = await eventsApp(t, dialect)
      for (const event of written) {
        const response = await app.inject({ method: 'POST', url: '/events', payload: event })
        assert.equal(response.statusCode, 201, `${event.at}: ${response.body}`)
        assert.equal(Date.parse(response.json().at), Date.parse(event.at.toUpperCase()))
      }
      const all = await app.inject({ url: '/events?order_by=at&limit=100' })
      assert.equal(all.statusCode, 200)
      assert.deepEqual(names(all.json()), ordered)
      const descending = await app.inject({ url: '/events?order_by=-at&limit=100' })
      assert.deepEqual(names(descending.json()), [...ordered].reverse())
      // 10:00Z written as 11:00+01:00 and as 05:00-05:00: the same instant, whatever the spelling.
      for (const bound of ['2024-01-01T11:00:00%2B01:00', '2024-01-01T05:00:00-05:00', '2024-01-01t10:00:00z']) {
        const from = await app.inject({ url: `/events?order_by=at&at__gte=${bound}` })
        assert.equal(from.statusCode, 200, from.body)
        assert.deepEqual(names(from.json()), ['a3', 'a4', 'a5', 'a6'], bound)
        const before = await app.inject({ url: `/events?order_by=at&at__lt=${bound}` })
        assert.deepEqual(names(before.json()), ['a0', 'a1', 'a2'], bound)
      }
      const far = await app.inject({ url: '/events?order_by=at&at__gte=2024-01-02T00:00:00%2B23:59' })
      assert.deepEqual(names(far.json()), ordered)
      const rows = await db.selectFrom('events').select(['name', 'at']).orderBy('at').execute()
      assert.deepEqual(rows.map((row) => row.name), ordered)
      if (dialect.name === 'sqlite') {
        // SQLite stores the one canonical UTC form.
        assert.deepEqual(rows.map((row) => row.at), [
          '2024-01-01T00:01:00.000Z', '2024-01-01T08:00:00.000Z', '2024-01-01T09:30:00.250Z',
          '2024-01-01T10:00:00.000Z', '2024-01-01T10:00:00.250Z', '2024-01-01T10:00:00.500Z',
          '2024-01-01T23:59:00.000Z',
        ])
      }
    })

    test('PUT, PATCH and BULK write the same instants; a cursor pages in instant order', async (t) => {
      const { app, db } = await eventsApp(t, dialect, 'cursor')
      const bulk = await app.inject({ method: 'POST', url: '/events/bulk', payload: written })
      assert.equal(bulk.statusCode, 201, bulk.body)
      const first = bulk.json()[0] as { id: number }
      const put = await app.inject({
        method: 'PUT', url: `/events/${first.id}`, payload: { name: 'a3', at: '2024-01-01T23:00:00+13:00' },
      })
      assert.equal(put.statusCode, 200, put.body)
      const patched = await app.inject({
        method: 'PATCH', url: `/events/${first.id}`, payload: { at: '2024-01-01T20:00:00+10:00' },
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(Date.parse(patched.json().at), Date.parse('2024-01-01T10:00:00Z'))
      const seen: string[] = []
      let url: string | undefined = '/events?order_by=at&limit=2'
      while (url !== undefined) {
        const page: LightMyRequestResponse = await app.inject({ url })
        assert.equal(page.statusCode, 200, page.body)
        seen.push(...names(page.json()))
        url = /<([^>]+)>; rel="next"/.exec(String(page.headers.link ?? ''))?.[1]
      }
      assert.deepEqual(seen, ordered)
      const stored = await db.selectFrom('events').select('at').where('id', '=', first.id).executeTakeFirstOrThrow()
      assert.equal(new Date(stored.at as string).toISOString(), '2024-01-01T10:00:00.000Z')
    })

    test('a date-time RFC 3339 does not allow is a 400 naming the field, and nothing is stored', async (t) => {
      const { app, db } = await eventsApp(t, dialect)
      for (const at of ['2024-01-01T00:00:00+24:00', '2024-13-01T00:00:00Z', '2024-01-01T00:00:00']) {
        const response = await app.inject({ method: 'POST', url: '/events', payload: { name: 'x', at } })
        assert.equal(response.statusCode, 400, at)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
        assert.deepEqual(problem.errors?.map((error) => error.field), ['at'])
      }
      assert.deepEqual(await db.selectFrom('events').selectAll().execute(), [])
    })

    test('every spelling Ajv takes as a date-time is stored as its instant, never a 5xx', async (t) => {
      const { app } = await eventsApp(t, dialect)
      const spellings: Array<[string, string]> = [
        ['2024-01-01T23:59:60Z', '2024-01-02T00:00:00.000Z'], // a leap second rolls over, as PostgreSQL reads it
        ['2024-01-01T05:00:00+05', '2024-01-01T00:00:00.000Z'],
        ['2024-01-01T05:30:00+0530', '2024-01-01T00:00:00.000Z'],
        ['2024-01-01 00:00:00Z', '2024-01-01T00:00:00.000Z'],
        ['2024-01-01T15:59:00+15:59', '2024-01-01T00:00:00.000Z'],
        ['2024-01-01T16:00:00+16:00', '2024-01-01T00:00:00.000Z'],
        ['2023-12-31T00:01:00-23:59', '2024-01-01T00:00:00.000Z'],
      ]
      for (const [index, [at, instant]] of spellings.entries()) {
        const response = await app.inject({ method: 'POST', url: '/events', payload: { name: `s${index}`, at } })
        assert.equal(response.statusCode, 201, `${at}: ${response.body}`)
        assert.equal(new Date(response.json().at).toISOString(), instant, at)
        const read = await app.inject({ url: `/events?at=${encodeURIComponent(at)}&name=s${index}` })
        assert.equal(read.statusCode, 200, read.body)
      }
    })
  })
}

test('rows SQLite stored before in another form keep being served as stored', async (t) => {
  const sqlite = dialects.find((dialect) => dialect.name === 'sqlite')
  if (sqlite === undefined) return
  const { app, db } = await eventsApp(t, sqlite)
  await db.insertInto('events').values({ name: 'old', at: '2024-01-01T12:00:00+02:00' }).execute()
  const response = await app.inject({ url: '/events' })
  assert.equal(response.statusCode, 200)
  assert.deepEqual(response.json(), [{ id: 1, name: 'old', at: '2024-01-01T12:00:00+02:00' }])
})
