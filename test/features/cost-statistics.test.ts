import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import diagnosticsChannel from 'node:diagnostics_channel'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from '../../lib/index.js'
import { testApp } from '../helpers/app.js'

// Issue 43 on SQLite: a page filtered by an indexed equality and sorted (or grouped) in an order no index gives is
// heavy by its shape, and ran on a reader thread, unless the database's statistics (ANALYZE) say that the
// equality finds few rows: then it runs on the main thread, as the user's own Kysely runs it. A key the
// statistics know to hold many rows keeps its statements on readers; so does a table never analyzed.

const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  owner: Type.Integer(),
  genre: Type.Integer(),
  year: Type.Integer(),
  tenant: Type.String(),
})

/** 20,000 items: four per owner (5,000 owners); genre 0 holds 15,000 of them, the other 5,000 genres one each. */
async function seed (db: Kysely<any>): Promise<void> {
  await sql`create table cost_s_items (id integer primary key, owner integer not null, genre integer not null,
    year integer not null, tenant text not null)`.execute(db)
  await sql`create index cost_s_items_owner on cost_s_items (owner)`.execute(db)
  await sql`create index cost_s_items_genre on cost_s_items (genre)`.execute(db)
  await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
    insert into cost_s_items (id, owner, genre, year, tenant)
    select i, (i - 1) / 4, case when i % 4 = 0 then i / 4 else 0 end, 1900 + i % 97,
      case when i % 2 = 0 then 'a' else 'b' end from n`.execute(db)
}

/** Where each statement on cost_s_items ran: off the main thread (a reader) when its answer came as a promise. */
function statementsSeen (t: TestContext): () => boolean[] {
  const seen: boolean[] = []
  const channel = diagnosticsChannel.tracingChannel('fastify-viewsets:statement')
  const subscriber = {
    start () {},
    asyncStart () {},
    asyncEnd () {},
    error () {},
    end (context: any) {
      if (String(context.sql).includes('cost_s_items')) seen.push(context.pending === true)
    },
  }
  channel.subscribe(subscriber)
  t.after(() => channel.unsubscribe(subscriber))
  return () => seen.splice(0)
}

/** An app over a fresh SQLite file; `analyze` runs ANALYZE before the viewset serves anything. */
async function fileApp (t: TestContext, options: { analyze: boolean, readWorkers?: number }) {
  const directory = mkdtempSync(join(tmpdir(), 'cost-s-'))
  const db = createDatabase<any>(`sqlite:${join(directory, 'stats.db')}`, { readWorkers: options.readWorkers ?? 1 })
  t.after(async () => {
    await db.destroy()
    rmSync(directory, { recursive: true, force: true })
  })
  await seed(db)
  if (options.analyze) await sql`analyze`.execute(db)
  const app = testApp(t)
  await app.register(createViewset({
    db,
    table: 'cost_s_items',
    schema: Item,
    filterFields: { owner: ['eq'], genre: ['eq'] },
    orderingFields: ['year', 'id'],
    methods: ['LIST', 'GET', 'AGGREGATE'],
    groupByFields: ['year'],
    aggregateFields: { genre: ['sum'] },
    withoutTokens: true,
    // Two tenants: each request names its own, and every statement keeps to it, on either thread.
    scope: (eb, { request }) => {
      const tenant = request.headers['x-tenant']
      return typeof tenant === 'string' ? eb('tenant', '=', tenant) : undefined
    },
  }), { prefix: '/items' })
  await app.ready()
  return { app, db }
}

const byOwner = '/items?owner=7&order_by=-year,id&limit=3&count=true'
const byOwners = '/items?or=(owner.7,owner.9)&order_by=-year,id&limit=5'
const byGenre = '/items?genre=0&order_by=-year,id&limit=3&count=true'
const grouped = '/items/aggregate?owner=7&group_by=year&count=true&sum=genre'

test('SQLite: pages of an indexed equality that ANALYZE found few rows for run on the main thread', async (t) => {
  const [analyzed, plain, noReaders] = await Promise.all([
    fileApp(t, { analyze: true }),
    fileApp(t, { analyze: false }),
    fileApp(t, { analyze: false, readWorkers: 0 }),
  ])
  const seen = statementsSeen(t)
  // Never analyzed: heavy by their sort (and the count, the OR group, the aggregate by their shape), on a reader.
  for (const url of [byOwner, byOwners, grouped]) {
    assert.equal((await plain.app.inject(url)).statusCode, 200, url)
    assert.ok(seen().every((pending) => pending), url)
  }
  // Analyzed: four rows per owner. The page, its count, the OR of two owners and the groups run on the main thread.
  for (const url of [byOwner, byOwners, grouped]) {
    const [answer, expected] = await Promise.all([analyzed.app.inject(url), noReaders.app.inject(url)])
    assert.equal(answer.statusCode, 200, url)
    assert.deepEqual(answer.json(), expected.json(), url)
    assert.equal(answer.headers['x-total-count'], expected.headers['x-total-count'], url)
    const ran = seen()
    assert.ok(ran.length > 0 && ran.every((pending) => !pending), `${url}: ${JSON.stringify(ran)}`)
  }
  assert.deepEqual((await analyzed.app.inject(byOwner)).json().map((row: { id: number }) => row.id), [32, 31, 30])
  assert.equal((await analyzed.app.inject(byOwner)).headers['x-total-count'], '4')
  const groups: Array<{ count: number }> = (await analyzed.app.inject(grouped)).json()
  assert.deepEqual(groups.map((group) => group.count), [1, 1, 1, 1])
  seen()
  // Genre 0 holds 15,000 rows, which ANALYZE sampled: its statements stay on a reader however few the others hold.
  const crowded = await analyzed.app.inject(byGenre)
  assert.equal(crowded.statusCode, 200)
  assert.equal(crowded.headers['x-total-count'], '15000')
  const ran = seen()
  assert.ok(ran.length > 0 && ran.every((pending) => pending), JSON.stringify(ran))
  assert.deepEqual(crowded.json(), (await noReaders.app.inject(byGenre)).json())
})

test('SQLite: a page lifted to the main thread keeps each tenant to its rows', async (t) => {
  const { app, db } = await fileApp(t, { analyze: true })
  const seen = statementsSeen(t)
  for (const tenant of ['a', 'b']) {
    const response = await app.inject({ url: '/items?owner=7&order_by=-year&limit=10&count=true', headers: { 'x-tenant': tenant } })
    assert.equal(response.statusCode, 200)
    const rows: Array<{ id: number, tenant: string }> = response.json()
    // Owner 7 holds items 29 to 32: the even ones are tenant a's.
    assert.deepEqual(rows.map((row) => row.id).sort(), tenant === 'a' ? [30, 32] : [29, 31])
    assert.ok(rows.every((row) => row.tenant === tenant))
    assert.equal(response.headers['x-total-count'], '2')
  }
  assert.ok(seen().every((pending) => !pending))
  // Nothing was written: the table holds its 20,000 rows, owner 7 its four.
  const { rows } = await sql<{ n: number }>`select count(*) as n from cost_s_items where owner = 7`.execute(db)
  assert.equal(rows[0]?.n, 4)
})

test('SQLite: statistics gone stale: a lifted statement that holds the event loop past 50 ms goes back to a reader',
  async (t) => {
    const { app, db } = await fileApp(t, { analyze: true })
    // 1,500,000 more items of owner 7 after ANALYZE: the statistics still say four an owner.
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 1500000)
      insert into cost_s_items (id, owner, genre, year, tenant) select 100000 + i, 7, 1, 1800, 'a' from n`.execute(db)
    const seen = statementsSeen(t)
    const url = '/items?owner=7&order_by=-year,id&limit=3'
    const first = await app.inject(url)
    assert.equal(first.statusCode, 200)
    assert.deepEqual(first.json().map((row: { id: number }) => row.id), [32, 31, 30])
    // Its first run is not judged (it pays for a cold cache, whatever the statistics): a second one is.
    assert.deepEqual((await app.inject(url)).json(), first.json())
    assert.deepEqual(seen(), [false, false])
    // That run took longer than the statistics promised: the statement runs on a reader from now on.
    const second = await app.inject(url)
    assert.deepEqual(second.json(), first.json())
    assert.deepEqual(seen(), [true])
    // Other statements keep their place: owner 8's count, which the statistics still tell right, on the main thread.
    assert.equal((await app.inject('/items?owner=8&count=true&order_by=-year&limit=1')).headers['x-total-count'], '4')
    assert.deepEqual(seen(), [false, false])
  })
