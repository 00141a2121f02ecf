import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import diagnosticsChannel from 'node:diagnostics_channel'
import { Worker } from 'node:worker_threads'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from '../../lib/index.js'
import { costOf } from '../../lib/execution/cost-class.js'
import { WorkerPool } from '../../lib/execution/worker-pool.js'
import { testApp, problemOf } from '../helpers/app.js'

// Issue 36 items 1 and 10 on SQLite: heavy SELECTs run on reader threads, so a key lookup is served while one
// runs; statementTimeout applies to them; relation loads and counts through readers answer as before. A SQLite
// file (a `:memory:` database has no readers), in a directory of its own.

const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  year: Type.Integer(),
  tenant: Type.String(),
})
const Publisher = Type.Object({ id: Type.Integer(), name: Type.String() })
const PublisherWithBooks = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  books: Type.Optional(Type.Array(Type.Object({ id: Type.Integer(), title: Type.String() }))),
})
const Book = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  publisher_id: Type.Union([Type.Integer(), Type.Null()]),
  publisher: Type.Optional(Type.Union([Publisher, Type.Null()])),
})

async function seed (db: Kysely<any>, items: number, books: number): Promise<void> {
  await sql`create table cost_b_items (id integer primary key, title text not null, year integer not null,
    tenant text not null)`.execute(db)
  await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${sql.lit(items)})
    insert into cost_b_items (id, title, year, tenant)
    select i, 'title ' || i, i % 100, case when i % 2 = 0 then 'a' else 'b' end from n`.execute(db)
  await sql`create table cost_b_publishers (id integer primary key, name text not null)`.execute(db)
  await sql`create table cost_b_books (id integer primary key, title text not null,
    publisher_id integer references cost_b_publishers (id))`.execute(db)
  // In the order of /publishers' books (title, then id): each parent's first `limit` are read through it.
  await sql`create index cost_b_books_publisher on cost_b_books (publisher_id, title, id)`.execute(db)
  await sql`insert into cost_b_publishers (id, name) values (1, 'Penguin'), (2, 'Vintage'), (3, 'Faber')`.execute(db)
  await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${sql.lit(books)})
    insert into cost_b_books (id, title, publisher_id)
    select i, 'book ' || (${sql.lit(books + 1)} - i), case when i % 4 = 0 then null else i % 3 + 1 end from n`.execute(db)
}

interface FileApp {
  app: ReturnType<typeof testApp>
  db: Kysely<any>
}

/** An app over a fresh SQLite file with `items` generated rows. */
async function fileApp (
  t: TestContext,
  options: { readWorkers?: number, statementTimeout?: number, items?: number, books?: number } = {}
): Promise<FileApp> {
  const directory = mkdtempSync(join(tmpdir(), 'cost-b-'))
  const { items = 20_000, books = 40, ...settings } = options
  const db = createDatabase<any>(`sqlite:${join(directory, 'heavy.db')}`, settings)
  t.after(async () => {
    await db.destroy()
    rmSync(directory, { recursive: true, force: true })
  })
  await seed(db, items, books)
  const app = testApp(t)
  await app.register(createViewset({
    db,
    table: 'cost_b_items',
    schema: Item,
    filterFields: { title: ['contains'], year: ['eq'] },
    orderingFields: ['title', 'id'],
    withoutTokens: true,
    // Two tenants: each request names its own, and every statement (a count on a reader too) keeps to it.
    scope: (eb, { request }) => {
      const tenant = request.headers['x-tenant']
      return typeof tenant === 'string' ? eb('tenant', '=', tenant) : undefined
    },
  }), { prefix: '/items' })
  await app.register(createViewset({
    db,
    table: 'cost_b_publishers',
    schema: PublisherWithBooks,
    relatedConfig: { prefetchRelated: { books: { table: 'cost_b_books', foreignKey: 'publisher_id', orderBy: 'title', limit: 20 } } },
  }), { prefix: '/publishers' })
  await app.register(createViewset({
    db,
    table: 'cost_b_publishers',
    schema: PublisherWithBooks,
    relatedConfig: { prefetchRelated: { books: { table: 'cost_b_books', foreignKey: 'publisher_id', orderBy: 'title', limit: false } } },
  }), { prefix: '/catalogues' })
  await app.register(createViewset({
    db,
    table: 'cost_b_books',
    schema: Book,
    filterFields: { 'publisher.name': ['contains', 'eq'], title: ['contains'] },
    orderingFields: ['publisher.name', 'title', 'id'],
    searchFields: ['title', 'publisher.name'],
    relatedConfig: { selectRelated: { publisher: { table: 'cost_b_publishers', foreignKey: 'publisher_id' } } },
  }), { prefix: '/books' })
  await app.ready()
  return { app, db }
}

const heavyList = '/items?title__contains=zzz&count=true&limit=5'

test('statements are classed by their shape', async (t) => {
  const db = createDatabase<any>('sqlite::memory:')
  t.after(() => db.destroy())
  const items = db.selectFrom('items').select(['id', 'title'])
  assert.equal(costOf(items.where('id', '=', 1).compile().query), 'cheap')
  assert.equal(costOf(items.orderBy('id').limit(10).offset(20).compile().query), 'cheap')
  assert.equal(costOf(items.where('title', 'like', '%a%').compile().query), 'heavy')
  assert.equal(costOf(db.selectFrom('items').select((eb) => eb.fn.countAll().as('count')).compile().query), 'heavy')
  const related = items.where((eb) => eb.exists(eb.selectFrom('tags').select('id').whereRef('tags.item_id', '=', 'items.id')))
  assert.equal(costOf(related.compile().query), 'heavy')
  assert.equal(costOf(items.where(sql<boolean>`lower(title) like lower(${'%a%'})`).compile().query), 'heavy')
  assert.equal(costOf(db.deleteFrom('items').where('id', '=', 1).compile().query), 'heavy')
  assert.equal(costOf(db.updateTable('items').set({ title: 'x' }).where('id', '=', 1).compile().query), 'cheap')
})

test('SQLite: a key lookup is answered while a heavy LIST runs on a reader thread', async (t) => {
  const { app } = await fileApp(t, { readWorkers: 1, items: 200_000 })
  // Warm: the reader thread started, both statements prepared.
  assert.equal((await app.inject(heavyList)).statusCode, 200)
  assert.equal((await app.inject('/items/5')).statusCode, 200)
  const order: string[] = []
  const heavy = app.inject(heavyList).then((response) => {
    order.push('heavy')
    return response
  })
  for (let round = 0; round < 5; round++) {
    const response = await app.inject('/items/5')
    assert.equal(response.statusCode, 200)
    assert.deepEqual(response.json(), { id: 5, title: 'title 5', year: 5, tenant: 'b' })
    order.push('cheap')
  }
  const answered = await heavy
  assert.equal(answered.statusCode, 200)
  assert.equal(answered.headers['x-total-count'], '0')
  // Five key lookups, one after another, all answered before the heavy LIST they were sent behind.
  assert.deepEqual(order, ['cheap', 'cheap', 'cheap', 'cheap', 'cheap', 'heavy'])
})

test('SQLite without readers (readWorkers: 0): the heavy LIST holds the event loop, as before', async (t) => {
  const { app } = await fileApp(t, { readWorkers: 0, items: 200_000 })
  assert.equal((await app.inject(heavyList)).statusCode, 200)
  const order: string[] = []
  const heavy = app.inject(heavyList).then(() => { order.push('heavy') })
  for (let round = 0; round < 5; round++) {
    await app.inject('/items/5')
    order.push('cheap')
  }
  await heavy
  // The statement ran on the event loop: the lookups sent behind it waited for it.
  assert.notEqual(order.at(-1), 'heavy')
})

test('SQLite: a heavy statement past statementTimeout answers 503 FST_VIEWSET_TIMEOUT, the next request succeeds',
  async (t) => {
    // 1 ms: starting or reaching a reader alone takes longer, so the heavy statement always goes past it.
    const { app } = await fileApp(t, { readWorkers: 1, statementTimeout: 1 })
    const response = await app.inject(heavyList)
    assert.equal(response.statusCode, 503)
    assert.equal(response.headers['retry-after'], '1')
    const problem = problemOf(response)
    assert.equal(problem.code, 'FST_VIEWSET_TIMEOUT')
    assert.doesNotMatch(JSON.stringify(problem), /select|cost_b_items|like/i)
    // Cheap statements stay on the main thread, where no timeout applies: a key lookup and an index-served page.
    const found = await app.inject('/items/3')
    assert.equal(found.statusCode, 200)
    assert.equal(found.json().title, 'title 3')
    const page = await app.inject('/items?limit=2&offset=10')
    assert.equal(page.statusCode, 200)
    assert.deepEqual(page.json().map((row: { id: number }) => row.id), [11, 12])
    // Heavy by their shape or their plan: all run on readers, and all time out at 1 ms.
    for (const url of [
      '/items?year=5&limit=2', // an unindexed filter: the plan scans the table
      '/items?order_by=title&limit=2', // an unindexed ordering: a temporary b-tree
      '/books?publisher.name__contains=e', // a relation filter: a subquery per row
      '/books?order_by=publisher.name', // a relation ordering
      '/books?search=pen', // search: LIKE, and EXISTS through the relation
    ]) {
      const answer = await app.inject(url)
      assert.equal(answer.statusCode, 503, url)
      assert.equal(problemOf(answer).code, 'FST_VIEWSET_TIMEOUT', url)
    }
    // A to-many load whose children an index gives in order stays on the main thread.
    assert.equal((await app.inject('/publishers/1')).statusCode, 200)
    // A write stays on the writer connection.
    const created = await app.inject({ method: 'POST', url: '/items', payload: { title: 't', year: 1, tenant: 'a' } })
    assert.equal(created.statusCode, 201)
    assert.equal((await app.inject(`/items/${String(created.json().id)}`)).statusCode, 200)
  })

test('SQLite: relation loads, relation filters, search and counts through readers answer as without them',
  async (t) => {
    const [withReaders, without] = await Promise.all([
      fileApp(t, { readWorkers: 2, items: 2000 }),
      fileApp(t, { readWorkers: 0, items: 2000 }),
    ])
    const urls = [
      '/publishers',
      '/publishers/2',
      '/books?publisher.name__contains=ng&count=true&limit=7',
      '/books?publisher.name=Vintage&order_by=-title',
      '/books?order_by=publisher.name,id&limit=15&offset=3',
      '/books?search=VIN&count=true',
      '/books/8',
      '/items?title__contains=title 19&count=true&order_by=-id&limit=4',
      '/items?year=7&count=true&limit=3',
    ]
    for (const url of urls) {
      const [left, right] = await Promise.all([withReaders.app.inject(url), without.app.inject(url)])
      assert.equal(left.statusCode, 200, url)
      assert.deepEqual(left.json(), right.json(), url)
      assert.equal(left.headers['x-total-count'], right.headers['x-total-count'], url)
    }
    // Two tenants: a count and a substring match on a reader keep to each one's rows.
    for (const tenant of ['a', 'b']) {
      const response = await withReaders.app.inject({
        url: '/items?title__contains=title 1&count=true&limit=100',
        headers: { 'x-tenant': tenant },
      })
      const rows: Array<{ tenant: string }> = response.json()
      assert.ok(rows.length > 0)
      assert.ok(rows.every((row) => row.tenant === tenant))
      // 1, 10–19, 100–199, 1000–1999 hold "title 1": 1111 rows, 555 even (tenant a), 556 odd (tenant b).
      assert.equal(response.headers['x-total-count'], tenant === 'a' ? '555' : '556')
    }
  })

test('SQLite: a row written on the writer connection is read at once by a reader', async (t) => {
  const { app } = await fileApp(t, { readWorkers: 1, items: 100 })
  for (let round = 0; round < 3; round++) {
    const created = await app.inject({
      method: 'POST', url: '/items', payload: { title: `fresh zzz ${round}`, year: 1, tenant: 'a' },
    })
    assert.equal(created.statusCode, 201)
    const listed = await app.inject(heavyList)
    assert.equal(listed.headers['x-total-count'], String(round + 1))
  }
})

test('SQLite: no reader thread starts before the first heavy read, which starts one', async (t) => {
  // A reader costs its thread's memory (about 10 MiB): an app that never reads heavily never starts one.
  const started: Worker[] = []
  const onWorker = (worker: Worker): void => { started.push(worker) }
  process.on('worker', onWorker)
  t.after(() => { process.off('worker', onWorker) })
  const { app, db } = await fileApp(t, { readWorkers: 2, items: 2000 })
  assert.equal((await app.inject('/items/5')).json().title, 'title 5')
  const page = await app.inject('/items?limit=2&offset=10')
  assert.deepEqual(page.json().map((row: { id: number }) => row.id), [11, 12])
  const created = await app.inject({ method: 'POST', url: '/items', payload: { title: 'new', year: 1, tenant: 'a' } })
  assert.equal(created.statusCode, 201)
  const stored = await db.selectFrom('cost_b_items').select('title').where('id', '=', created.json().id).executeTakeFirst()
  assert.deepEqual(stored, { title: 'new' })
  assert.equal(started.length, 0)
  // 19, 190–199 and 1900–1999 hold "title 19".
  const heavy = await app.inject('/items?title__contains=title 19&count=true&order_by=id&limit=3')
  assert.equal(heavy.statusCode, 200)
  assert.deepEqual(heavy.json().map((row: { id: number }) => row.id), [19, 190, 191])
  assert.equal(heavy.headers['x-total-count'], '111')
  assert.equal(started.length, 1)
  assert.equal((await app.inject('/items?title__contains=title 19&count=true&limit=3')).statusCode, 200)
  assert.equal(started.length, 1)
})

test('SQLite: a to-many load without a limit is cheap until a parent has more than 100 children, then heavy', async (t) => {
  // 3,000 books over three publishers: 750 each.
  const { app, db } = await fileApp(t, { readWorkers: 1, items: 10, books: 3000 })
  const events: Array<{ sql: string, heavy: boolean | undefined }> = []
  const channel = diagnosticsChannel.tracingChannel('fastify-viewsets:statement')
  const subscriber = {
    start () {},
    end () {},
    asyncStart () {},
    asyncEnd () {},
    error () {},
  }
  const start = (context: any) => { events.push({ sql: context.sql, heavy: context.heavy }) }
  channel.subscribe({ ...subscriber, start })
  t.after(() => channel.unsubscribe({ ...subscriber, start }))
  const children = (): Array<{ sql: string, heavy: boolean | undefined }> =>
    events.filter((event) => event.sql.includes('cost_b_books') && !event.sql.includes('row_number'))
  await sql`insert into cost_b_publishers (id, name) values (4, 'Tiny')`.execute(db)
  // The load of a publisher without books: cheap, on the main thread.
  assert.deepEqual((await app.inject('/catalogues/4')).json(), { id: 4, name: 'Tiny', books: [] })
  assert.deepEqual(children().map((event) => event.heavy), [false])
  // A publisher with 750 books: this run was on the main thread, and made the statement heavy.
  const large = await app.inject('/catalogues/2')
  assert.equal(large.statusCode, 200)
  assert.equal(large.json().books.length, 750)
  assert.deepEqual(children().map((event) => event.heavy), [false, false])
  // The same statement for any parent is heavy now: it runs on a reader, and answers the same.
  assert.deepEqual((await app.inject('/catalogues/4')).json(), { id: 4, name: 'Tiny', books: [] })
  assert.deepEqual(children().map((event) => event.heavy), [false, false, true])
  assert.deepEqual((await app.inject('/catalogues/2')).json(), large.json())
  assert.deepEqual(children().map((event) => event.heavy), [false, false, true, true])
})

/** A worker that spins forever on 'spin' and echoes anything else. */
function spinner (): Worker {
  return new Worker(`
    const { parentPort } = require('node:worker_threads')
    parentPort.on('message', (job) => {
      if (job === 'spin') for (;;) {}
      parentPort.postMessage({ ok: true, value: job })
    })`, { eval: true })
}

test('a worker past the timeout is terminated and replaced, never reused mid-job', async (t) => {
  const pool = new WorkerPool({ name: 'cost-b-test', size: 1, queueBound: 1, timeout: 2000, start: spinner })
  t.after(() => pool.close())
  assert.equal(await pool.run('hello'), 'hello')
  await assert.rejects(pool.run('spin'), (error: Error & { code?: string }) => error.code === 'FST_VIEWSET_TIMEOUT')
  // The only worker spins for ever: had it been kept, this job would time out too.
  assert.equal(await pool.run('again'), 'again')
  // Past the queue bound: 503 FST_VIEWSET_UNAVAILABLE at once.
  const spinning = pool.run('spin')
  // Handled from the start: it may time out in the queue while the test awaits the spinning job.
  const queued = pool.run('queued').catch(() => undefined)
  await assert.rejects(pool.run('refused'), (error: Error & { code?: string }) => error.code === 'FST_VIEWSET_UNAVAILABLE')
  await assert.rejects(spinning, (error: Error & { code?: string }) => error.code === 'FST_VIEWSET_TIMEOUT')
  // The queued job waited for the spinning one, its time counting meanwhile.
  await queued
  assert.equal(await pool.run('after'), 'after')
})
