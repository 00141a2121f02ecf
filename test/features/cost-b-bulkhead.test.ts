import { strict as assert } from 'node:assert'
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from '../../lib/index.js'
import { viewsetMetrics } from '../../lib/observability/metrics.js'
import { testApp, problemOf } from '../helpers/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { bulkheadEvents, published } from '../helpers/bulkhead-events.js'

// Issue 36 item 2 on PostgreSQL and MariaDB: heavy statements hold at most `heavyConnections` of the pool
// (default poolSize − 1), so a key lookup finds a connection however many heavy requests wait; past `heavyQueue`
// they answer 503 at once; a client that hangs up leaves the queue at once.

const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), title: Type.String() })

/** 100,000 rows, from a table of ten digits joined five times (the same SQL on both databases). */
async function seed (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('cost_b_digits').addColumn('d', 'integer').execute()
  await db.insertInto('cost_b_digits').values([...Array(10).keys()].map((d) => ({ d }))).execute()
  await db.schema.createTable('cost_b_bulk_items')
    .addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .execute()
  await sql`insert into cost_b_bulk_items (id, title)
    select a.d * 10000 + b.d * 1000 + c.d * 100 + e.d * 10 + f.d + 1,
      concat('title ', a.d, b.d, c.d, e.d, f.d)
    from cost_b_digits a cross join cost_b_digits b cross join cost_b_digits c
      cross join cost_b_digits e cross join cost_b_digits f`.execute(db)
}

/** An app on a pool of two connections over the seeded table. */
async function bulkheadApp (t: TestContext, dialect: TestDialect, options: { heavyQueue?: number } = {}) {
  const { url, db: setup } = await testDatabase(t, dialect)
  await seed(setup)
  const db = createDatabase<any>(url, { poolSize: 2, ...options })
  t.after(() => db.destroy())
  const app = testApp(t)
  await app.register(viewsetMetrics)
  await app.register(createViewset({
    db, table: 'cost_b_bulk_items', schema: Item, filterFields: { title: ['contains'] }, methods: ['LIST', 'GET'],
  }), { prefix: '/items' })
  await app.ready()
  return app
}

const heavy = '/items?title__contains=zzz&limit=5'

for (const dialect of dialects.filter((each) => each.name !== 'sqlite')) {
  test(`${dialect.name}: heavy requests hold one of two connections, and a key lookup passes them`, async (t) => {
    const app = await bulkheadApp(t, dialect)
    const events = bulkheadEvents(t)
    assert.equal((await app.inject('/items/7')).statusCode, 200)
    const order: string[] = []
    const heavies = [1, 2, 3].map(async (n) => {
      const response = await app.inject(heavy)
      order.push(`heavy ${n}`)
      return response
    })
    // The first holds the one heavy connection; the two others wait for it.
    await published(events, 'queued', 2)
    const lookup = await app.inject('/items/7')
    order.push('lookup')
    assert.equal(lookup.statusCode, 200)
    assert.deepEqual(lookup.json(), { id: 7, title: 'title 00006' })
    for (const response of await Promise.all(heavies)) {
      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json(), [])
    }
    // The lookup did not wait behind the queued heavy requests.
    assert.ok(order.indexOf('lookup') < order.indexOf('heavy 2'), order.join(', '))
    assert.ok(order.indexOf('lookup') < order.indexOf('heavy 3'), order.join(', '))
    assert.ok(events.every((event) => event.running <= 1 && event.capacity === 1), JSON.stringify(events))
  })

  test(`${dialect.name}: past heavyQueue a heavy request answers 503 FST_VIEWSET_UNAVAILABLE at once`, async (t) => {
    const app = await bulkheadApp(t, dialect, { heavyQueue: 1 })
    const events = bulkheadEvents(t)
    const first = app.inject(heavy)
    const second = app.inject(heavy)
    await published(events, 'queued', 1)
    const refused = await app.inject(heavy)
    assert.equal(refused.statusCode, 503)
    assert.equal(refused.headers['retry-after'], '1')
    assert.equal(problemOf(refused).code, 'FST_VIEWSET_UNAVAILABLE')
    // (the queued one is admitted once the first ends: maybe already)
    assert.deepEqual(events.slice(0, 2).map((event) => event.event), ['queued', 'rejected'])
    assert.deepEqual(events[1], {
      bulkhead: dialect.name,
      dialect: dialect.name,
      event: 'rejected',
      depth: 1,
      running: 1,
      queued: 1,
      capacity: 1,
      queueBound: 1,
    })
    assert.equal((await first).statusCode, 200)
    assert.equal((await second).statusCode, 200)
    // Cheap statements never queue.
    assert.equal((await app.inject('/items/1')).statusCode, 200)
    // The metrics read the same events (issue 41 item 3): one rejection, the queue empty again.
    const metrics = (await app.inject('/metrics')).body
    assert.match(metrics, new RegExp(`^fastify_viewsets_heavy_rejections_total\\{dialect="${dialect.name}"\\} 1$`, 'm'))
    assert.match(metrics, new RegExp(`^fastify_viewsets_heavy_queue_depth\\{dialect="${dialect.name}"\\} 0$`, 'm'))
  })
}

/** Holds one of the pool's connections until `release` is called. */
async function holdConnection (db: Kysely<any>): Promise<() => void> {
  let release = (): void => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  await new Promise<void>((resolve) => {
    void db.connection().execute(async () => {
      resolve()
      await held
    })
  })
  return release
}

for (const dialect of dialects.filter((each) => each.name !== 'sqlite')) {
  test(`${dialect.name}: a heavy statement takes a connection only when no key lookup waits for one`, async (t) => {
    const { url, db: setup } = await testDatabase(t, dialect)
    await seed(setup)
    // Two heavy slots of two connections: only the pool's free connections hold the heavy statements back.
    const db = createDatabase<any>(url, { poolSize: 2, heavyConnections: 2 })
    t.after(() => db.destroy())
    const app = testApp(t)
    await app.register(createViewset({
      db, table: 'cost_b_bulk_items', schema: Item, filterFields: { title: ['contains'] }, methods: ['LIST', 'GET'],
    }), { prefix: '/items' })
    await app.ready()
    assert.equal((await app.inject('/items/7')).statusCode, 200)
    const events = bulkheadEvents(t)
    const releases = [await holdConnection(db), await holdConnection(db)]
    const order: string[] = []
    // Both connections busy: the heavy request waits in the bulkhead (one of its two slots free), not in the pool.
    const heavyRequest = app.inject(heavy).then((response) => { order.push('heavy'); return response })
    await published(events, 'queued', 1)
    assert.deepEqual(events.map(({ event, running, capacity }) => ({ event, running, capacity })),
      [{ event: 'queued', running: 0, capacity: 2 }])
    const lookupRequest = app.inject('/items/7').then((response) => { order.push('lookup'); return response })
    // Let the lookup reach the pool's queue, then free one connection: the lookup gets it, then the heavy one.
    await new Promise((resolve) => setTimeout(resolve, 50))
    releases[0]?.()
    const lookup = await lookupRequest
    assert.equal(lookup.statusCode, 200)
    assert.deepEqual(lookup.json(), { id: 7, title: 'title 00006' })
    const answered = await heavyRequest
    assert.equal(answered.statusCode, 200)
    assert.deepEqual(answered.json(), [])
    assert.deepEqual(order, ['lookup', 'heavy'])
    assert.equal(events.at(-1)?.event, 'admitted')
    releases[1]?.()
    const stored = await db.selectFrom('cost_b_bulk_items').select('title').where('id', '=', 7).execute()
    assert.deepEqual(stored, [{ title: 'title 00006' }])
  })
}

for (const dialect of dialects.filter((each) => each.name === 'postgres')) {
  test(`${dialect.name}: a heavy request whose client hangs up leaves the queue at once`, async (t) => {
    const app = await bulkheadApp(t, dialect)
    const events = bulkheadEvents(t)
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    const first = fetch(`${address}${heavy}`)
    const aborted = new AbortController()
    const second = fetch(`${address}${heavy}`, { signal: aborted.signal }).catch((error: unknown) => error)
    await published(events, 'queued', 1)
    aborted.abort()
    await published(events, 'abandoned', 1)
    assert.equal(events.at(-1)?.queued, 0)
    assert.ok(await second instanceof Error)
    assert.equal((await first).status, 200)
  })
}
