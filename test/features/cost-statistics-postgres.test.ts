import { strict as assert } from 'node:assert'
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from '../../lib/index.js'
import { declareCost } from '../../lib/execution/cost-class.js'
import { planRowsRead } from '../../lib/dialect/postgres/postgres-statistics.js'
import { testApp } from '../helpers/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { bulkheadEvents, published } from '../helpers/bulkhead-events.js'

// Issue 43 on PostgreSQL: a page filtered by an indexed equality and sorted in an order no index gives, an OR of
// such equalities, and AGGREGATE are heavy, and waited in the bulkhead of heavy statements, unless pg_stats says the
// equality finds few rows: then they run beside the key lookups. A value that pg_stats knows to hold many rows keeps
// its column's statements in the bulkhead (issue 36's attack: a heavy request may not hold up a key lookup); so does
// a table never analyzed. Here the bulkhead's one slot is held by a statement waiting for a lock: a request that
// answers meanwhile passed it, one that queues waited in it.

const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  owner: Type.Integer(),
  genre: Type.Integer(),
  year: Type.Integer(),
  tenant: Type.String(),
})

/** 20,000 items: four per owner (5,000 owners); genre 0 holds 15,000 of them, the other 5,000 genres one each. */
async function seed (db: Kysely<any>, analyze: boolean): Promise<void> {
  await sql`create table cost_p_items (id integer primary key, owner integer not null, genre integer not null,
    year integer not null, tenant text not null)`.execute(db)
  await sql`create index cost_p_items_owner on cost_p_items (owner)`.execute(db)
  await sql`create index cost_p_items_genre on cost_p_items (genre)`.execute(db)
  await sql`insert into cost_p_items (id, owner, genre, year, tenant)
    select i, (i - 1) / 4, case when i % 4 = 0 then i / 4 else 0 end, 1900 + i % 97,
      case when i % 2 = 0 then 'a' else 'b' end from generate_series(1, 20000) i`.execute(db)
  if (analyze) await sql`analyze cost_p_items`.execute(db)
}

/** `unruled`: the same table served again under `/all-items` without a rule, for PATCH by filter. */
async function itemsApp (t: TestContext, dialect: TestDialect, analyze: boolean, unruled = false) {
  const { url, db: setup } = await testDatabase(t, dialect)
  await seed(setup, analyze)
  const db = createDatabase<any>(url, { poolSize: 4, heavyConnections: 1 })
  t.after(() => db.destroy())
  const app = testApp(t)
  await app.register(createViewset({
    db,
    table: 'cost_p_items',
    schema: Item,
    filterFields: { owner: ['eq', 'in'], genre: ['eq'] },
    orderingFields: ['year', 'id'],
    methods: ['LIST', 'GET', 'AGGREGATE'],
    groupByFields: ['year'],
    aggregateFields: { genre: ['sum'] },
    withoutTokens: true,
    // Two tenants: each request names its own, and every statement keeps to it, lifted or not.
    scope: (eb, { request }) => {
      const tenant = request.headers['x-tenant']
      return typeof tenant === 'string' ? eb('tenant', '=', tenant) : undefined
    },
  }), { prefix: '/items' })
  // Without a rule, a PATCH by filter is one bounded UPDATE (data/bulk-update.ts).
  if (unruled) {
    await app.register(createViewset({
      db,
      table: 'cost_p_items',
      schema: Item,
      filterFields: { owner: ['eq'], genre: ['eq'] },
      methods: ['PATCH_MANY'],
      withoutTokens: true,
    }), { prefix: '/all-items' })
  }
  await app.ready()
  return { app, db, setup }
}

/**
 * Holds the bulkhead's one slot with a statement waiting for an advisory lock; the function given back frees it
 * (once: the test's end frees it too, should an assertion fail first).
 */
async function holdHeavySlot (t: TestContext, db: Kysely<any>, setup: Kysely<any>): Promise<() => Promise<void>> {
  let release = (): void => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  let locked = (): void => {}
  const holding = new Promise<void>((resolve) => { locked = resolve })
  const holder = setup.connection().execute(async (connection) => {
    await sql`select pg_advisory_lock(4343)`.execute(connection)
    locked()
    await released
    await sql`select pg_advisory_unlock(4343)`.execute(connection)
  })
  await holding
  const waiting = db.executeQuery(declareCost(sql`select pg_advisory_lock(4343)`.compile(db), 'heavy'))
  let freed: Promise<void> | undefined
  const free = async (): Promise<void> => {
    freed ??= (async () => {
      release()
      await holder
      await waiting
      await db.executeQuery(sql`select pg_advisory_unlock(4343)`.compile(db))
    })()
    await freed
  }
  t.after(free)
  return free
}

/** Serves each URL until its statements' statistics were read (the first runs stay heavy meanwhile). */
async function warm (app: Awaited<ReturnType<typeof itemsApp>>['app'], urls: readonly string[]): Promise<void> {
  for (let round = 0; round < 5; round++) {
    for (const url of urls) assert.equal((await app.inject({ url, headers: { 'x-tenant': 'a' } })).statusCode, 200, url)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const rare = [
  '/items?owner=7&order_by=-year,id&limit=3',
  '/items?or=(owner.7,owner.9)&order_by=-year,id&limit=5',
  '/items?owner__in=7,9&order_by=-year,id&limit=5',
  '/items/aggregate?owner=7&group_by=year&count=true&sum=genre',
]
const crowded = '/items?genre=0&order_by=-year,id&limit=3'

for (const dialect of dialects.filter((each) => each.name === 'postgres')) {
  test('postgres: statements pg_stats bounds to few rows pass the bulkhead; a crowded value\'s column waits in it',
    { timeout: 60_000 }, async (t) => {
      const { app, db, setup } = await itemsApp(t, dialect, true)
      await warm(app, [...rare, crowded])
      const events = bulkheadEvents(t)
      const release = await holdHeavySlot(t, db, setup)
      // Owner 7 holds items 29 to 32, tenant a's the even ones; owner 9 items 37 to 40.
      const answers = await Promise.all(rare.map(async (url) => await app.inject({ url, headers: { 'x-tenant': 'a' } })))
      assert.deepEqual(answers.map((answer) => answer.statusCode), [200, 200, 200, 200])
      assert.deepEqual(answers[0]?.json().map((row: { id: number }) => row.id), [32, 30])
      assert.deepEqual(answers[1]?.json().map((row: { id: number }) => row.id), [40, 38, 32, 30])
      assert.deepEqual(answers[2]?.json(), answers[1]?.json())
      assert.deepEqual(answers[3]?.json().map((group: { count: number }) => group.count), [1, 1])
      const other = await app.inject({ url: rare[0] ?? '', headers: { 'x-tenant': 'b' } })
      assert.deepEqual(other.json().map((row: { id: number, tenant: string }) => [row.id, row.tenant]), [[31, 'b'], [29, 'b']])
      assert.deepEqual(events, [])
      // Genre 0 holds 15,000 rows: its page waits for the slot, and a key lookup passes it meanwhile.
      const order: string[] = []
      const heavy = app.inject(crowded).then((response) => { order.push('heavy'); return response })
      await published(events, 'queued', 1)
      assert.equal((await app.inject('/items/5')).json().owner, 1)
      order.push('lookup')
      await release()
      const answered = await heavy
      assert.equal(answered.statusCode, 200)
      assert.deepEqual(answered.json().map((row: { id: number, genre: number }) => row.genre), [0, 0, 0])
      assert.deepEqual(order, ['lookup', 'heavy'])
    })

  test('postgres: a PATCH by filter of few rows by pg_stats passes the bulkhead; one of a crowded value waits in it',
    { timeout: 60_000 }, async (t) => {
      const { app, db, setup } = await itemsApp(t, dialect, true, true)
      const patch = async (url: string, year: number) =>
        await app.inject({ method: 'PATCH', url, payload: { year } })
      // Its first runs stay heavy while pg_stats is read.
      for (let round = 0; round < 5; round++) {
        assert.equal((await patch('/all-items?owner=8', 1990 + round)).statusCode, 200)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const events = bulkheadEvents(t)
      const release = await holdHeavySlot(t, db, setup)
      // Owner 7 holds four items: the UPDATE passes the held slot (queued, it would wait for the release below).
      const pending = patch('/all-items?owner=7', 2024)
      const state = { answered: false }
      void pending.then(() => { state.answered = true })
      while (!state.answered && events.length === 0) await new Promise((resolve) => setTimeout(resolve, 1))
      // Freed before failing: the app's pool, closed first at the test's end, waits for the held connections.
      if (events.length > 0) await release()
      assert.deepEqual(events, [])
      const rare = await pending
      assert.equal(rare.statusCode, 200)
      assert.deepEqual(rare.json(), { affected: 4 })
      // Genre 0 holds 15,000: its UPDATE waits for the slot, and answers past its bound (nothing written) after.
      const crowded = patch('/all-items?genre=0', 2025)
      await published(events, 'queued', 1)
      await release()
      assert.equal((await crowded).statusCode, 400)
      const { rows } = await sql<{ year: number, n: number }>`select year, count(*)::int as n from cost_p_items
        where owner = 7 or year in (2024, 2025) group by year`.execute(setup)
      assert.deepEqual(rows, [{ year: 2024, n: 4 }])
    })

  test('postgres: a table never analyzed keeps its sorted pages in the bulkhead', { timeout: 60_000 }, async (t) => {
    const { app, db, setup } = await itemsApp(t, dialect, false)
    await warm(app, [rare[0] ?? ''])
    const events = bulkheadEvents(t)
    const release = await holdHeavySlot(t, db, setup)
    const heavy = app.inject({ url: rare[0] ?? '', headers: { 'x-tenant': 'b' } })
    await published(events, 'queued', 1)
    await release()
    const answered = await heavy
    assert.equal(answered.statusCode, 200)
    assert.deepEqual(answered.json().map((row: { id: number }) => row.id), [31, 29])
  })

  test('postgres: statistics gone stale: a lifted page that reads many rows goes back to the bulkhead',
    { timeout: 120_000 }, async (t) => {
      const { app, db, setup } = await itemsApp(t, dialect, true)
      const url = '/items?owner=7&order_by=-year,id&limit=3'
      await warm(app, [url])
      // 1,200,000 more items of owner 7 after ANALYZE (autovacuum kept off it): pg_stats still says four an owner.
      await sql`alter table cost_p_items set (autovacuum_enabled = false)`.execute(setup)
      await sql`insert into cost_p_items (id, owner, genre, year, tenant)
        select 100000 + i, 7, 1, 1800 + i % 50, 'a' from generate_series(1, 1200000) i`.execute(setup)
      // The run sorts 1,200,004 rows (400,004 sorted in 35 ms on a warm server: not always past the 50 ms that starts
      // the check), slower than the statistics promised: run again under EXPLAIN (ANALYZE), it reads
      // more than 1,000 rows, and the statement waits in the bulkhead from then on.
      const slow = await app.inject({ url, headers: { 'x-tenant': 'a' } })
      assert.equal(slow.statusCode, 200)
      assert.deepEqual(slow.json().map((row: { id: number }) => row.id), [32, 30, 100049])
      const events = bulkheadEvents(t)
      // The check runs beside the requests: until it answers, the page still passes a held slot.
      for (let attempt = 0; ; attempt++) {
        assert.ok(attempt < 60, 'the page was never sent back to the bulkhead')
        events.length = 0
        const held = await holdHeavySlot(t, db, setup)
        const answer = app.inject({ url, headers: { 'x-tenant': 'a' } })
        const state = { answered: false }
        void answer.then(() => { state.answered = true })
        // Queued (it cannot answer while the slot is held), or answered past the bulkhead.
        while (!state.answered && !events.some((event) => event.event === 'queued')) {
          await new Promise((resolve) => setTimeout(resolve, 1))
        }
        const queued = !state.answered
        await held()
        assert.deepEqual((await answer).json(), slow.json())
        if (queued) break
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
    })
}

test('the rows an EXPLAIN (ANALYZE) plan read: the most of any node, its loops and filtered-out rows counted', () => {
  const plan = {
    'Node Type': 'Limit',
    'Actual Rows': 3,
    'Actual Loops': 1,
    Plans: [{
      'Node Type': 'Sort',
      'Actual Rows': 3,
      'Actual Loops': 1,
      Plans: [{ 'Node Type': 'Index Scan', 'Actual Rows': 400, 'Actual Loops': 2, 'Rows Removed by Filter': 200 }],
    }],
  }
  assert.equal(planRowsRead(plan), 1200)
  assert.equal(planRowsRead(undefined), 0)
})
