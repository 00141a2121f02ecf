import { strict as assert } from 'node:assert'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { AddressInfo } from 'node:net'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from '../../lib/index.js'
import { openStreams } from '../../lib/changes/stream-limits.js'
import { testApp } from '../helpers/app.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { openSse } from '../helpers/sse.js'
import { injections } from '../helpers/hostile-corpus.js'
import type { SseStream } from '../helpers/sse.js'

// Issue 40, the live feed: `GET /items?<filters>` with `Accept: text/event-stream`, over real sockets, on every
// database. Two tenants (alice, bob): each sees only her rows, through the LIST rule, with the field rules applied.

const secret = 'changes-feed-secret-that-is-long-enough'
const table = 'feed_items'

const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  status: Type.String(),
  tenant: Type.Optional(Type.String({ readOnly: true })),
  note: Type.Optional(Type.String()),
})

async function createItems (db: Kysely<any>, dialect: TestDialect['name']) {
  const [idType, id] = autoIncrement(dialect)
  const text = dialect === 'mysql' ? sql`longtext` : sql`text`
  await db.schema.createTable(table).addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull())
    .addColumn('status', 'varchar(16)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(16)', (column) => column.notNull())
    .addColumn('note', text, (column) => column.notNull().defaultTo(dialect === 'mysql' ? sql`('')` : ''))
    .execute()
}

interface FeedApp {
  base: string
  app: Awaited<ReturnType<typeof testApp>>
  bearer: (sub: string, claims?: object) => Record<string, string>
}

async function feedApp (
  t: TestContext, db: Kysely<any>, dialect: TestDialect['name'], changes: Record<string, unknown> = {}
): Promise<FeedApp> {
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  await app.register(createViewset({
    db,
    table,
    schema: Item,
    history: { createTable: true },
    changes: { pollInterval: 25, ...changes },
    methods: ['LIST', 'GET', 'POST', 'PATCH', 'DELETE'],
    protectedMethods: ['LIST', 'GET', 'POST', 'PATCH', 'DELETE'],
    filterFields: { status: ['eq'] },
    beforeWrite: (values: Record<string, unknown>, { token }: { token: { sub?: string } | null }) =>
      ({ ...values, tenant: token?.sub ?? '' }),
    scope: (eb: any, { token }: { token: { sub?: string } | null }) => eb('tenant', '=', token?.sub ?? ''),
    // alice's auditor token sees rows without their note.
    fieldAccess: ({ token }: { token: { role?: string } | null }) => (token?.role === 'auditor' ? { hidden: ['note'] } : {}),
  } as any), { prefix: '/items' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const bearer = (sub: string, claims: object = {}) => ({ authorization: `Bearer ${app.jwt.sign({ sub, ...claims })}` })
  return { base: `http://127.0.0.1:${port}`, app, bearer }
}

async function write (feed: FeedApp, method: string, url: string, sub: string, payload?: object) {
  const response = await feed.app.inject({ method, url, headers: feed.bearer(sub), payload } as any)
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`)
  return response.statusCode === 204 ? undefined : response.json()
}

async function subscribe (t: TestContext, url: string, headers: Record<string, string>): Promise<SseStream> {
  const stream = await openSse(url, headers)
  t.after(() => { stream.close() })
  return stream
}

for (const dialect of dialects) {
  describe(`change feed (${dialect.name})`, () => {
    let database: TestDatabase

    async function setUp (t: TestContext, changes: Record<string, unknown> = {}) {
      database = await testDatabase(t, dialect)
      await createItems(database.db, dialect.name)
      return await feedApp(t, database.db, dialect.name, changes)
    }

    test('create, update and delete of the filter\'s rows, the caller\'s rule and field rules applied', async (t) => {
      const feed = await setUp(t)
      const stream = await subscribe(t, `${feed.base}/items?status=open`, feed.bearer('alice', { role: 'auditor' }))
      assert.equal(stream.status, 200)
      assert.match(String(stream.headers['content-type']), /^text\/event-stream/)
      const bobs1 = await write(feed, 'POST', '/items', 'bob', { name: 'bob-1', status: 'open', note: 'b' })
      const created = await write(feed, 'POST', '/items', 'alice', { name: 'a-1', status: 'open', note: 'secret' })
      await write(feed, 'POST', '/items', 'alice', { name: 'a-closed', status: 'closed' })
      const insert = await stream.next()
      assert.equal(insert.event, 'insert')
      // bob's row came first and never arrives; the note is hidden from the auditor.
      assert.deepEqual(JSON.parse(insert.data), { id: created.id, name: 'a-1', status: 'open', tenant: 'alice' })
      await write(feed, 'PATCH', `/items/${created.id}`, 'alice', { name: 'a-1b' })
      const update = await stream.next()
      assert.equal(update.event, 'update')
      assert.equal(JSON.parse(update.data).name, 'a-1b')
      assert.ok(Number(update.id) > Number(insert.id))
      // Leaving the filter is a delete; coming back an insert; a real delete a delete.
      await write(feed, 'PATCH', `/items/${created.id}`, 'alice', { status: 'closed' })
      assert.deepEqual(await stream.next().then(({ event, data }) => [event, JSON.parse(data)]),
        ['delete', { key: { id: created.id } }])
      await write(feed, 'PATCH', `/items/${created.id}`, 'alice', { status: 'open' })
      assert.equal((await stream.next()).event, 'insert')
      await write(feed, 'DELETE', `/items/${created.id}`, 'alice')
      assert.deepEqual(await stream.next().then(({ event, data }) => [event, JSON.parse(data)]),
        ['delete', { key: { id: created.id } }])
      // bob's delete is judged on his row's last version: alice's rule never admits it.
      await write(feed, 'DELETE', `/items/${bobs1.id}`, 'bob')
      await write(feed, 'POST', '/items', 'alice', { name: 'a-after', status: 'open' })
      assert.deepEqual(await stream.next().then(({ event, data }) => [event, JSON.parse(data).name]), ['insert', 'a-after'])
      // bob, meanwhile, sees his own rows only.
      const bobs = await subscribe(t, `${feed.base}/items`, feed.bearer('bob'))
      await write(feed, 'POST', '/items', 'alice', { name: 'a-2', status: 'open' })
      await write(feed, 'POST', '/items', 'bob', { name: 'bob-2', status: 'open', note: 'n' })
      const seen = await bobs.next()
      assert.deepEqual([seen.event, JSON.parse(seen.data).name, JSON.parse(seen.data).note], ['insert', 'bob-2', 'n'])
    })

    test('resume with Last-Event-ID: no gap, no duplicate; past the retention, a reset', async (t) => {
      const feed = await setUp(t)
      const alice = feed.bearer('alice')
      const first = await subscribe(t, `${feed.base}/items`, alice)
      for (const name of ['r1', 'r2']) await write(feed, 'POST', '/items', 'alice', { name, status: 'open' })
      const r1 = await first.next()
      const r2 = await first.next()
      assert.deepEqual([r1.event, JSON.parse(r1.data).name, JSON.parse(r2.data).name], ['insert', 'r1', 'r2'])
      first.close()
      await first.ended
      // Written while disconnected.
      for (const name of ['r3', 'r4', 'r5']) await write(feed, 'POST', '/items', 'alice', { name, status: 'open' })
      const resumed = await subscribe(t, `${feed.base}/items`, { ...alice, 'last-event-id': r1.id ?? '' })
      const names: string[] = []
      const ids: string[] = []
      for (let i = 0; i < 4; i++) {
        const event = await resumed.next()
        names.push(JSON.parse(event.data).name)
        ids.push(event.id ?? '')
      }
      assert.deepEqual(names, ['r2', 'r3', 'r4', 'r5'])
      assert.equal(ids[0], r2.id)
      await write(feed, 'POST', '/items', 'alice', { name: 'r6', status: 'open' })
      assert.equal(JSON.parse((await resumed.next()).data).name, 'r6')
      // The entries after the position were pruned: the client is told to list again, then the feed goes on.
      await database.db.deleteFrom('viewset_history').where('position', '<=', Number(ids[2])).execute()
      const expired = await subscribe(t, `${feed.base}/items`, { ...alice, 'last-event-id': r1.id ?? '' })
      const reset = await expired.next()
      assert.deepEqual([reset.event, JSON.parse(reset.data)], ['reset', { reason: 'expired' }])
      await write(feed, 'POST', '/items', 'alice', { name: 'r7', status: 'open' })
      assert.equal(JSON.parse((await expired.next()).data).name, 'r7')
      // Pruned per table while another table keeps an older entry: this table's own oldest entry says it was pruned.
      const other = { table_name: 'feed_other', row_key: '{"id":1}', operation: 'create', after: '{"id":1}' }
      await database.db.insertInto('viewset_history')
        .values({ ...other, position: 1, at: new Date().toISOString(), actor: null, before: null }).execute()
      await database.db.deleteFrom('viewset_history').where('table_name', '=', table)
        .where('position', '<=', Number(ids[3])).execute()
      const pruned = await subscribe(t, `${feed.base}/items`, { ...alice, 'last-event-id': ids[2] ?? '' })
      const again = await pruned.next()
      assert.deepEqual([again.event, JSON.parse(again.data)], ['reset', { reason: 'expired' }])
    })

    test('two app instances: a write through one reaches a subscriber of the other', async (t) => {
      const feed = await setUp(t)
      const other = dialect.name === 'sqlite' ? database.db : createDatabase<any>(database.url)
      if (other !== database.db) t.after(() => other.destroy())
      const second = await feedApp(t, other, dialect.name)
      const stream = await subscribe(t, `${second.base}/items`, second.bearer('alice'))
      await write(feed, 'POST', '/items', 'alice', { name: 'from-one', status: 'open' })
      const event = await stream.next()
      assert.deepEqual([event.event, JSON.parse(event.data).name], ['insert', 'from-one'])
    })

    test('bounds: per caller and per process, a bad Last-Event-ID, a token in the query string', async (t) => {
      const feed = await setUp(t, { maxStreamsPerCaller: 1, maxStreams: openStreams() + 2 })
      const one = await subscribe(t, `${feed.base}/items`, feed.bearer('alice'))
      assert.equal(one.status, 200)
      const again = await subscribe(t, `${feed.base}/items`, feed.bearer('alice'))
      assert.equal(again.status, 429)
      assert.equal(JSON.parse(again.body).code, 'FST_VIEWSET_TOO_MANY_CALLER_STREAMS')
      const two = await subscribe(t, `${feed.base}/items`, feed.bearer('bob'))
      assert.equal(two.status, 200)
      const full = await subscribe(t, `${feed.base}/items`, feed.bearer('carol'))
      assert.equal(full.status, 503)
      assert.equal(JSON.parse(full.body).code, 'FST_VIEWSET_TOO_MANY_STREAMS')
      one.close()
      two.close()
      await Promise.all([one.ended, two.ended])
      const bad = await subscribe(t, `${feed.base}/items`, { ...feed.bearer('dave'), 'last-event-id': 'abc' })
      assert.equal(bad.status, 400)
      assert.equal(JSON.parse(bad.body).code, 'FST_VIEWSET_INVALID_LAST_EVENT_ID')
      const token = String(feed.bearer('erin').authorization).slice('Bearer '.length)
      const inQuery = await subscribe(t, `${feed.base}/items?access_token=${token}`, {})
      assert.equal(inQuery.status, 401)
      const unknown = await subscribe(t, `${feed.base}/items?access_token=${token}`, feed.bearer('erin'))
      assert.equal(unknown.status, 400)
      // A page is still a page.
      const page = await feed.app.inject({ url: '/items', headers: feed.bearer('alice') })
      assert.equal(page.statusCode, 200)
      assert.deepEqual(page.json(), [])
    })

    test('hostile Last-Event-ID values are a 400 before any stream opens', async (t) => {
      const feed = await setUp(t)
      const printable = injections.filter((value) => /^[\x20-\x7e]+$/.test(value))
      for (const value of [...printable, '-1', '1e3', '9999999999999999']) {
        const response = await feed.app.inject({
          url: '/items',
          headers: { ...feed.bearer('alice'), accept: 'text/event-stream', 'last-event-id': value },
        })
        assert.equal(response.statusCode, 400, value)
        assert.equal(response.json().code, 'FST_VIEWSET_INVALID_LAST_EVENT_ID')
      }
      assert.equal(openStreams(), 0)
    })

    test('a slow subscriber is disconnected: what it has not read stays bounded', async (t) => {
      const feed = await setUp(t, { sendBuffer: 64 * 1024 })
      const stream = await subscribe(t, `${feed.base}/items`, feed.bearer('alice'))
      stream.pause()
      const note = 'x'.repeat(60_000)
      let writes = 0
      // Writes until the server drops the client (bounded: the socket buffers fill within a few MB).
      while (openStreams() > 0 && writes < 400) {
        await write(feed, 'POST', '/items', 'alice', { name: `big-${writes}`, status: 'open', note })
        writes++
      }
      assert.ok(writes < 400, 'the slow client was dropped')
      // The client, reading again, finds its stream cut short.
      stream.resume()
      await stream.ended
      assert.equal(openStreams(), 0)
    })

    test('an expiring token ends the stream; app.close() ends every stream', async (t) => {
      const feed = await setUp(t)
      const exp = Math.floor(Date.now() / 1000) + 2
      const expiring = await subscribe(t, `${feed.base}/items`, feed.bearer('alice', { exp }))
      const end = await expiring.next()
      assert.deepEqual([end.event, JSON.parse(end.data)], ['end', { reason: 'token-expired' }])
      await expiring.ended
      const a = await subscribe(t, `${feed.base}/items`, feed.bearer('alice'))
      const b = await subscribe(t, `${feed.base}/items?status=open`, feed.bearer('bob'))
      await feed.app.close()
      for (const stream of [a, b]) {
        const last = await stream.next()
        assert.deepEqual([last.event, JSON.parse(last.data)], ['end', { reason: 'closing' }])
        await stream.ended
      }
      assert.equal(openStreams(), 0)
    })
  })
}

test('changes needs history, and LIST', () => {
  const db = createDatabase<any>('sqlite::memory:')
  assert.throws(() => createViewset({ db, table, schema: Item, changes: true } as any),
    /changes: needs the history option/)
  assert.throws(() => createViewset({ db, table, schema: Item, history: true, changes: { every: 1 } } as any),
    /changes\.every: unknown key/)
})
