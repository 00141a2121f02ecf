import { strict as assert } from 'node:assert'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { AddressInfo } from 'node:net'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { createViewset, viewsetDocs } from '../../lib/index.js'
import { testApp } from '../helpers/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { openSse } from '../helpers/sse.js'
import type { SseEvent, SseStream } from '../helpers/sse.js'

// Issue 40 with composite keys (issue 39 item 1): the live feed (real sockets) and `changed_since` (inject) of two
// composite-keyed tables, on every database. `ck_ledger (account, code)`: a BIGINT part served as digits (two
// accounts that differ only past 2^53) and a string part with a comma and a slash; `ck_grid (sheet, row_no, col_no)`:
// a string part and two integer parts. Two tenants (alice, bob) through the row rule: each sees her own rows only,
// `delete` events and `deleted` keys name every part of the key.

const secret = 'changes-composite-keys-secret-long-enough'
const history = 'viewset_history'
const past53 = '9007199254740993'
const below = '9007199254740992'
const odd = 'a,b/c d'

const Entry = Type.Object({
  account: Type.String({ pattern: '^-?[0-9]{1,19}$' }),
  code: Type.String({ minLength: 1, maxLength: 64 }),
  title: Type.String({ maxLength: 64 }),
  status: Type.String({ maxLength: 16 }),
  tenant: Type.Optional(Type.String({ readOnly: true })),
})
const Cell = Type.Object({
  sheet: Type.String({ minLength: 1, maxLength: 64 }),
  row_no: Type.Integer(),
  col_no: Type.Integer(),
  value: Type.String({ maxLength: 64 }),
  tenant: Type.Optional(Type.String({ readOnly: true })),
})

const Big = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String({ maxLength: 64 }),
  tenant: Type.Optional(Type.String({ readOnly: true })),
})

type Headers = Record<string, string>
type Token = { sub?: string } | null
interface EntryRow { account: string, code: string, title: string, status: string, tenant?: string }
interface Changes<K> { changes: EntryRow[], deleted: K[], next: string }

async function createTables (db: Kysely<any>, dialect: TestDialect['name']): Promise<void> {
  const big = { sqlite: 'integer', postgres: 'bigserial', mysql: 'bigint' }[dialect]
  await db.schema.createTable('ck_big')
    .addColumn('id', big as 'integer', (column) => (dialect === 'postgres' ? column : column.autoIncrement()).primaryKey())
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(16)', (column) => column.notNull())
    .execute()
  await db.schema.createTable('ck_ledger')
    .addColumn('account', 'bigint', (column) => column.notNull())
    .addColumn('code', 'varchar(64)', (column) => column.notNull())
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('status', 'varchar(16)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(16)', (column) => column.notNull())
    .addPrimaryKeyConstraint('ck_ledger_pk', ['account', 'code'])
    .execute()
  await db.schema.createTable('ck_grid')
    .addColumn('sheet', 'varchar(64)', (column) => column.notNull())
    .addColumn('row_no', 'integer', (column) => column.notNull())
    .addColumn('col_no', 'integer', (column) => column.notNull())
    .addColumn('value', 'varchar(64)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(16)', (column) => column.notNull())
    .addPrimaryKeyConstraint('ck_grid_pk', ['sheet', 'row_no', 'col_no'])
    .execute()
}

interface Fixture {
  app: FastifyInstance
  db: Kysely<any>
  queries: string[]
  base: string
  alice: Headers
  bob: Headers
}

async function fixture (t: TestContext, dialect: TestDialect): Promise<Fixture> {
  const database = await testDatabase(t, dialect)
  const { db } = database
  await createTables(db, dialect.name)
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  await app.register(viewsetDocs)
  const shared = {
    db,
    history: { createTable: true },
    changes: { pollInterval: 25 },
    methods: ['LIST', 'GET', 'POST', 'PATCH', 'DELETE'],
    protectedMethods: ['LIST', 'GET', 'POST', 'PATCH', 'DELETE'],
    beforeWrite: (values: Record<string, unknown>, { method, token }: { method: string, token: Token }) =>
      (method === 'POST' ? { ...values, tenant: token?.sub ?? '' } : values),
    scope: (eb: any, { token }: { token: Token }) => eb('tenant', '=', token?.sub ?? ''),
  }
  await app.register(createViewset({
    ...shared, table: 'ck_ledger', schema: Entry, primaryKey: ['account', 'code'], filterFields: { status: ['eq'] },
  } as any), { prefix: '/ledger' })
  await app.register(createViewset({
    ...shared, table: 'ck_grid', schema: Cell, primaryKey: ['sheet', 'row_no', 'col_no'],
  } as any), { prefix: '/grid' })
  await app.register(createViewset({ ...shared, table: 'ck_big', schema: Big } as any), { prefix: '/big' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const as = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { app, db, queries: database.queries, base: `http://127.0.0.1:${port}`, alice: as('alice'), bob: as('bob') }
}

/** The path of a row: each key part percent-encoded (a comma too), joined by commas. */
function path (prefix: string, ...parts: Array<string | number>): string {
  return `${prefix}/${parts.map((part) => encodeURIComponent(String(part))).join(',')}`
}

async function write (
  app: FastifyInstance, who: Headers, method: string, url: string, payload?: object
): Promise<void> {
  const response = await app.inject({ method, url, headers: who, ...(payload === undefined ? {} : { payload }) } as any)
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`)
}

async function subscribe (t: TestContext, url: string, headers: Headers): Promise<SseStream> {
  const stream = await openSse(url, headers)
  t.after(() => { stream.close() })
  assert.equal(stream.status, 200, stream.body)
  return stream
}

/** The next event, or a failure naming what was awaited (never a hang). */
async function next (stream: SseStream, awaited: string): Promise<SseEvent> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(new Error(`no event within 5 s: ${awaited}`)) }, 5000)
  })
  try {
    return await Promise.race([stream.next(), late])
  } finally {
    clearTimeout(timer)
  }
}

async function nextOf (stream: SseStream, awaited: string): Promise<[string, unknown]> {
  const event = await next(stream, awaited)
  return [event.event, JSON.parse(event.data)]
}

async function changesSince<K> (
  app: FastifyInstance, who: Headers, url: string
): Promise<Changes<K> & { link?: string }> {
  const response = await app.inject({ method: 'GET', url, headers: who })
  assert.equal(response.statusCode, 200, response.body)
  const link = response.headers.link
  return { ...response.json(), ...(typeof link === 'string' ? { link } : {}) }
}

function entry (account: string, code: string, title: string, status = 'open') {
  return { account, code, title, status }
}

for (const dialect of dialects) {
  describe(`changes with composite keys (${dialect.name})`, () => {
    test('the feed: events of a two-part key (BIGINT past 2^53, a string with a comma and a slash) and of a ' +
      'three-part key; delete events name every part; another tenant\'s writes and deletes never arrive', async (t) => {
      const { app, base, alice, bob } = await fixture(t, dialect)
      const ledger = await subscribe(t, `${base}/ledger?status=open`, alice)
      const grid = await subscribe(t, `${base}/grid`, alice)
      const bobs = await subscribe(t, `${base}/grid`, bob)
      await write(app, bob, 'POST', '/ledger', entry(past53, 'bob', 'bob 1'))
      await write(app, alice, 'POST', '/ledger', entry(past53, odd, 'high'))
      await write(app, alice, 'POST', '/ledger', entry(below, odd, 'low'))
      assert.deepEqual(await nextOf(ledger, 'high'), ['insert', { ...entry(past53, odd, 'high'), tenant: 'alice' }])
      assert.deepEqual(await nextOf(ledger, 'low'), ['insert', { ...entry(below, odd, 'low'), tenant: 'alice' }])
      // The two rows differ only past 2^53: each write reaches its own row's event.
      await write(app, alice, 'PATCH', path('/ledger', past53, odd), { title: 'high 2' })
      assert.deepEqual(await nextOf(ledger, 'high 2'), ['update', { ...entry(past53, odd, 'high 2'), tenant: 'alice' }])
      await write(app, alice, 'PATCH', path('/ledger', below, odd), { status: 'closed' })
      assert.deepEqual(await nextOf(ledger, 'low leaves'), ['delete', { key: { account: below, code: odd } }])
      await write(app, alice, 'DELETE', path('/ledger', past53, odd))
      assert.deepEqual(await nextOf(ledger, 'high deleted'), ['delete', { key: { account: past53, code: odd } }])
      // bob's delete is judged on his row's last version: it never reaches alice.
      await write(app, bob, 'DELETE', path('/ledger', past53, 'bob'))
      await write(app, alice, 'POST', '/ledger', entry(past53, 'after', 'after'))
      assert.deepEqual(await nextOf(ledger, 'after'),
        ['insert', { ...entry(past53, 'after', 'after'), tenant: 'alice' }])

      // Three parts: the key's integers as numbers, the string as sent.
      await write(app, bob, 'POST', '/grid', { sheet: odd, row_no: 1, col_no: 1, value: 'bob' })
      await write(app, alice, 'POST', '/grid', { sheet: odd, row_no: 1, col_no: 2, value: 'v' })
      assert.deepEqual(await nextOf(grid, 'cell'),
        ['insert', { sheet: odd, row_no: 1, col_no: 2, value: 'v', tenant: 'alice' }])
      await write(app, bob, 'DELETE', path('/grid', odd, 1, 1))
      await write(app, alice, 'DELETE', path('/grid', odd, 1, 2))
      assert.deepEqual(await nextOf(grid, 'cell deleted'), ['delete', { key: { sheet: odd, row_no: 1, col_no: 2 } }])
      // bob sees his own: his cell, created then deleted.
      assert.deepEqual(await nextOf(bobs, 'bob\'s cell'),
        ['insert', { sheet: odd, row_no: 1, col_no: 1, value: 'bob', tenant: 'bob' }])
      assert.deepEqual(await nextOf(bobs, 'bob\'s delete'), ['delete', { key: { sheet: odd, row_no: 1, col_no: 1 } }])
    })

    test('the feed resumes with Last-Event-ID on a composite key: no gap, no duplicate', async (t) => {
      const { app, base, alice, bob } = await fixture(t, dialect)
      const first = await subscribe(t, `${base}/ledger`, alice)
      await write(app, alice, 'POST', '/ledger', entry(past53, 'r1', 'r1'))
      await write(app, alice, 'POST', '/ledger', entry(past53, 'r2', 'r2'))
      const r1 = await next(first, 'r1')
      const r2 = await next(first, 'r2')
      assert.deepEqual([JSON.parse(r1.data).code, JSON.parse(r2.data).code], ['r1', 'r2'])
      first.close()
      await first.ended
      // Written while disconnected, bob's too.
      await write(app, alice, 'PATCH', path('/ledger', past53, 'r1'), { title: 'r1 again' })
      await write(app, bob, 'POST', '/ledger', entry(below, 'bob', 'bob'))
      await write(app, alice, 'DELETE', path('/ledger', past53, 'r2'))
      await write(app, alice, 'POST', '/ledger', entry(below, 'r3', 'r3'))
      const resumed = await subscribe(t, `${base}/ledger`, { ...alice, 'last-event-id': r1.id ?? '' })
      const seen: Array<[string, unknown]> = []
      for (let index = 0; index < 4; index++) seen.push(await nextOf(resumed, `resumed event ${index}`))
      assert.deepEqual(seen, [
        ['insert', { ...entry(past53, 'r2', 'r2'), tenant: 'alice' }],
        ['update', { ...entry(past53, 'r1', 'r1 again'), tenant: 'alice' }],
        ['delete', { key: { account: past53, code: 'r2' } }],
        ['insert', { ...entry(below, 'r3', 'r3'), tenant: 'alice' }],
      ])
      await write(app, alice, 'POST', '/ledger', entry(past53, 'r4', 'r4'))
      assert.equal((JSON.parse((await next(resumed, 'r4')).data) as EntryRow).code, 'r4')
    })

    test('changed_since: rows changed and keys deleted by every part, across pages, with rules; applied to a copy ' +
      'they give LIST', async (t) => {
      const { app, db, queries, alice, bob } = await fixture(t, dialect)
      await write(app, alice, 'POST', '/ledger', entry(past53, odd, 'high'))
      await write(app, alice, 'POST', '/ledger', entry(below, odd, 'low'))
      await write(app, alice, 'POST', '/ledger', entry(past53, 'x', 'gone'))
      await write(app, bob, 'POST', '/ledger', entry(below, 'bob', 'bob'))
      await write(app, alice, 'PATCH', path('/ledger', below, odd), { title: 'low 2' })
      await write(app, alice, 'DELETE', path('/ledger', past53, odd))
      await write(app, alice, 'DELETE', path('/ledger', past53, 'x'))
      await write(app, bob, 'DELETE', path('/ledger', below, 'bob'))
      // One page, three statements (the entries, the current rows by key, the versions of the keys no longer read):
      // the row of `below` is current, its neighbour past 2^53 (same code) is deleted.
      queries.length = 0
      const all = await changesSince<{ account: string, code: string }>(app, alice, '/ledger?changed_since=0&limit=50')
      assert.equal(queries.length, 3, queries.join('\n'))
      assert.deepEqual(all.changes, [{ ...entry(below, odd, 'low 2'), tenant: 'alice' }])
      assert.deepEqual(all.deleted, [{ account: past53, code: odd }, { account: past53, code: 'x' }])
      const bobs = await changesSince<{ account: string, code: string }>(app, bob, '/ledger?changed_since=0')
      assert.deepEqual(bobs, { changes: [], deleted: [{ account: below, code: 'bob' }], next: bobs.next })
      // A selection without the key's parts: the rows still resolve by every part, and come as selected.
      const titles = await changesSince(app, alice, '/ledger?changed_since=0&fields=title')
      assert.deepEqual(titles.changes, [{ title: 'low 2' }])

      // Pages of two entries, a copy keyed by both parts, writes in between: the copy ends equal to LIST.
      const copy = new Map<string, EntryRow>()
      const keyOf = (row: { account: string, code: string }) => `${row.account}\u0000${row.code}`
      let position = '0'
      for (let page = 1; page < 50; page++) {
        const answer = await changesSince<{ account: string, code: string }>(app, alice,
          `/ledger?changed_since=${position}&limit=2`)
        for (const row of answer.changes) copy.set(keyOf(row), row)
        for (const key of answer.deleted) copy.delete(keyOf(key))
        assert.ok(answer.deleted.every((key) => key.code !== 'bob'), 'no key of bob\'s')
        if (page === 1) {
          await write(app, alice, 'POST', '/ledger', entry(past53, odd, 'high again'))
          await write(app, alice, 'PATCH', path('/ledger', below, odd), { status: 'done' })
        }
        if (answer.link === undefined) break
        position = answer.next
      }
      const listed = await app.inject({ url: '/ledger?limit=50', headers: alice })
      const rows = listed.json() as EntryRow[]
      assert.deepEqual([...copy.values()].sort((a, b) => keyOf(a).localeCompare(keyOf(b))),
        rows.sort((a, b) => keyOf(a).localeCompare(keyOf(b))))
      assert.equal(rows.length, 2)
      // Pruned past the position: a 410, the client lists again.
      await db.deleteFrom(history).where('table_name', '=', 'ck_ledger').execute()
      const expired = await app.inject({ url: `/ledger?changed_since=${position}`, headers: alice })
      assert.deepEqual([expired.statusCode, expired.json().code], [410, 'FST_VIEWSET_POSITION_EXPIRED'])

      // Three parts: integer parts as numbers; the filter on status applies to the versions too.
      await write(app, alice, 'POST', '/grid', { sheet: odd, row_no: 1, col_no: 2, value: 'v' })
      await write(app, alice, 'POST', '/grid', { sheet: odd, row_no: 2, col_no: 1, value: 'w' })
      await write(app, bob, 'POST', '/grid', { sheet: odd, row_no: 1, col_no: 1, value: 'bob' })
      await write(app, alice, 'DELETE', path('/grid', odd, 1, 2))
      await write(app, bob, 'DELETE', path('/grid', odd, 1, 1))
      const grid = await changesSince<Record<string, unknown>>(app, alice, '/grid?changed_since=0')
      assert.deepEqual(grid.changes, [{ sheet: odd, row_no: 2, col_no: 1, value: 'w', tenant: 'alice' }])
      assert.deepEqual(grid.deleted, [{ sheet: odd, row_no: 1, col_no: 2 }])
      const entries = await db.selectFrom(history).select('row_key').where('table_name', '=', 'ck_grid').execute()
      assert.ok(entries.some((row) => row.row_key === JSON.stringify({ sheet: odd, row_no: 1, col_no: 2 })))
    })

    test('a BIGINT key served as an integer: deleted keys and delete events carry it as LIST does, a number',
      async (t) => {
        const { app, base, alice } = await fixture(t, dialect)
        const stream = await subscribe(t, `${base}/big`, alice)
        const created = await app.inject({ method: 'POST', url: '/big', headers: alice, payload: { title: 'b' } })
        assert.equal(created.statusCode, 201, created.body)
        const { id } = created.json()
        assert.equal(typeof id, 'number')
        await write(app, alice, 'DELETE', `/big/${id}`)
        assert.deepEqual((await nextOf(stream, 'insert'))[0], 'insert')
        assert.deepEqual(await nextOf(stream, 'delete'), ['delete', { key: { id } }])
        const page = await changesSince<{ id: number }>(app, alice, '/big?changed_since=0')
        assert.deepEqual([page.changes, page.deleted], [[], [{ id }]])
      })

    test('OpenAPI: a deleted key of changed_since documents every part of the key', async (t) => {
      const { app } = await fixture(t, dialect)
      const document = app.swagger() as any
      const answer = document.paths['/ledger'].get.responses['200'].content['application/json'].schema.oneOf[1]
      const key = answer.properties.deleted.items
      assert.deepEqual(key.required, ['account', 'code'])
      assert.deepEqual(Object.keys(key.properties), ['account', 'code'])
      const grid = document.paths['/grid'].get.responses['200'].content['application/json'].schema.oneOf[1]
      assert.deepEqual(grid.properties.deleted.items.required, ['sheet', 'row_no', 'col_no'])
    })
  })
}
