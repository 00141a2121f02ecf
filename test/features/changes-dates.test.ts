import { strict as assert } from 'node:assert'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { AddressInfo } from 'node:net'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { createViewset } from '../../lib/index.js'
import { testApp } from '../helpers/app.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { openSse } from '../helpers/sse.js'
import type { SseStream } from '../helpers/sse.js'

// Issue 40 on date columns: a stored version (the history's JSON, where a date is ISO text) is judged as the live row
// would be. A filter on a DATE column (`?due__lte=`) and a LIST rule on a DATETIME column (`published_at <= cutoff`,
// a date bound by the driver) evaluated on the versions of the feed's events, on `changed_since`'s deleted keys, and
// on a hard-deleted row's last version, on every database. Two tenants: bob's rows never reach alice.

const secret = 'changes-dates-secret-that-is-long-enough'
const cutoff = '2026-06-01T12:00:00.000Z'

const Event = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String({ maxLength: 64 }),
  due: Type.String({ format: 'date' }),
  published_at: Type.String({ format: 'date-time' }),
  tenant: Type.Optional(Type.String({ readOnly: true })),
})

type Headers = Record<string, string>
type Token = { sub?: string } | null
interface Changes { changes: Array<{ id: number, due: string }>, deleted: Array<{ id: number }>, next: string }

async function createEvents (db: Kysely<any>, dialect: TestDialect['name']): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  const dateTime = { sqlite: 'text', postgres: 'timestamptz', mysql: 'datetime(3)' }[dialect]
  await db.schema.createTable('fd_events').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('due', dialect === 'sqlite' ? 'text' : 'date', (column) => column.notNull())
    .addColumn('published_at', dateTime as 'text', (column) => column.notNull())
    .addColumn('tenant', 'varchar(16)', (column) => column.notNull())
    .execute()
}

interface Fixture { app: FastifyInstance, base: string, alice: Headers, bob: Headers }

async function fixture (t: TestContext, dialect: TestDialect): Promise<Fixture> {
  const { db } = await testDatabase(t, dialect)
  await createEvents(db, dialect.name)
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  // The date as the driver binds one (better-sqlite3 binds no Date: SQLite's dates are ISO text).
  const until = dialect.name === 'sqlite' ? cutoff : new Date(cutoff)
  await app.register(createViewset({
    db,
    table: 'fd_events',
    schema: Event,
    history: { createTable: true },
    changes: { pollInterval: 25 },
    methods: ['LIST', 'GET', 'POST', 'PATCH', 'DELETE'],
    protectedMethods: ['LIST', 'GET', 'POST', 'PATCH', 'DELETE'],
    filterFields: { due: ['eq', 'lte', 'gte'], published_at: ['lte', 'gte'] },
    beforeWrite: (values: Record<string, unknown>, { method, token }: { method: string, token: Token }) =>
      (method === 'POST' ? { ...values, tenant: token?.sub ?? '' } : values),
    // Each tenant writes its rows; its lists show those published by the cutoff.
    scope: (eb: any, { token, method }: { token: Token, method: string }) => {
      const own = eb('tenant', '=', token?.sub ?? '')
      return method === 'LIST' ? eb.and([own, eb('published_at', '<=', until)]) : own
    },
  } as any), { prefix: '/events' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const as = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { app, base: `http://127.0.0.1:${port}`, alice: as('alice'), bob: as('bob') }
}

async function post (
  app: FastifyInstance, who: Headers, title: string, due: string, published: string
): Promise<number> {
  const payload = { title, due, published_at: `2026-06-01T${published}:00.000Z` }
  const response = await app.inject({ method: 'POST', url: '/events', headers: who, payload })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().id
}

async function send (app: FastifyInstance, who: Headers, method: string, url: string, payload?: object): Promise<void> {
  const response = await app.inject({ method, url, headers: who, ...(payload === undefined ? {} : { payload }) } as any)
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`)
}

async function changesSince (app: FastifyInstance, who: Headers, query: string) {
  const response = await app.inject({ url: `/events?${query}`, headers: who })
  assert.equal(response.statusCode, 200, response.body)
  return response.json() as Changes
}

/** The next event, or a failure naming what was awaited (never a hang). */
async function nextOf (stream: SseStream, awaited: string): Promise<[string, unknown]> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(new Error(`no event within 5 s: ${awaited}`)) }, 5000)
  })
  try {
    const event = await Promise.race([stream.next(), late])
    return [event.event, JSON.parse(event.data)]
  } finally {
    clearTimeout(timer)
  }
}

for (const dialect of dialects) {
  describe(`changes on date columns (${dialect.name})`, () => {
    test('changed_since: a DATE filter and a DATETIME rule judge stored versions as the table\'s rows', async (t) => {
      const { app, alice, bob } = await fixture(t, dialect)
      const e1 = await post(app, alice, 'e1', '2026-11-26', '10:00')
      const e2 = await post(app, alice, 'e2', '2026-11-27', '09:00')
      const embargoed = await post(app, alice, 'embargoed', '2026-11-26', '14:00')
      const b1 = await post(app, bob, 'b1', '2026-11-26', '10:00')
      const first = await changesSince(app, alice, 'changed_since=0&due__lte=2026-11-26')
      assert.deepEqual([first.changes.map((row) => row.id), first.deleted], [[e1], []])
      await send(app, alice, 'PATCH', `/events/${e1}`, { due: '2026-11-28' })
      await send(app, alice, 'DELETE', `/events/${e2}`)
      await send(app, alice, 'DELETE', `/events/${embargoed}`)
      await send(app, bob, 'DELETE', `/events/${b1}`)
      // e1 left the DATE filter: its earlier version matched it (2026-11-26 <= 2026-11-26), so it is deleted.
      const filtered = await changesSince(app, alice, `changed_since=${first.next}&due__lte=2026-11-26`)
      assert.deepEqual([filtered.changes, filtered.deleted], [[], [{ id: e1 }]])
      // e2 was hard-deleted: its last version, published at 09:00, is one the rule admitted (<= 12:00 that day);
      // the embargoed row's (14:00) never was, and bob's is bob's.
      const all = await changesSince(app, alice, `changed_since=${first.next}`)
      assert.deepEqual([all.changes.map((row) => [row.id, row.due]), all.deleted], [[[e1, '2026-11-28']], [{ id: e2 }]])
      const early = await changesSince(app, alice, `changed_since=${first.next}&published_at__lte=2026-06-01T09:30:00Z`)
      assert.deepEqual([early.changes, early.deleted], [[], [{ id: e2 }]])
      const bobs = await changesSince(app, bob, 'changed_since=0')
      assert.deepEqual([bobs.changes, bobs.deleted], [[], [{ id: b1 }]])
    })

    test('the feed: a DATE filter and a DATETIME rule on each event\'s versions; the row as LIST serializes it',
      async (t) => {
        const { app, base, alice, bob } = await fixture(t, dialect)
        const stream = await openSse(`${base}/events?due__lte=2026-11-26`, alice)
        t.after(() => { stream.close() })
        assert.equal(stream.status, 200, stream.body)
        await post(app, bob, 'bob', '2026-11-26', '10:00')
        const e3 = await post(app, alice, 'e3', '2026-11-26', '10:00')
        // A later row matching however dates compare: what arrives first if e3's event is lost.
        const marker = await post(app, alice, 'marker', '2026-01-01', '08:00')
        const listed = await app.inject({ url: '/events?limit=50', headers: alice })
        const [row, markerRow] = listed.json()
        assert.deepEqual(await nextOf(stream, 'e3'), ['insert', row])
        assert.equal(row.id, e3)
        assert.deepEqual(await nextOf(stream, 'marker'), ['insert', markerRow])
        await send(app, alice, 'DELETE', `/events/${e3}`)
        await send(app, alice, 'DELETE', `/events/${marker}`)
        assert.deepEqual(await nextOf(stream, 'e3 deleted'), ['delete', { key: { id: e3 } }])
        assert.deepEqual(await nextOf(stream, 'marker deleted'), ['delete', { key: { id: marker } }])
      })
  })
}
