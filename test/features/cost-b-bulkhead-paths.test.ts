import { strict as assert } from 'node:assert'
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from '../../lib/index.js'
import { declareCost } from '../../lib/execution/cost-class.js'
import { testApp } from '../helpers/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { bulkheadEvents, published } from '../helpers/bulkhead-events.js'

// Issue 36 item 2, on every path a heavy statement takes: a page ordered by a to-one path (a correlated subquery
// per row) and a relation's batch read without an index were run past the bulkhead, through the connection
// provider of the request-transaction wrapper every viewset's database has; on the attack's 1,000,000 books they
// held every connection of the pool, and a key lookup answered 503 after 5 s. Here the one heavy slot is held by a
// statement that waits for a lock: a heavy request that queues behind it proves it passes the bulkhead.

const Author = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  author_id: Type.Integer(),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
})
const AuthorWithBooks = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  books: Type.Optional(Type.Array(Type.Object({ id: Type.Integer(), title: Type.String() }))),
})

async function seed (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('cost_paths_authors')
    .addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('name', 'varchar(64)', (column) => column.notNull())
    .execute()
  // No index on author_id: a page of each author's books sorts every one of them.
  await db.schema.createTable('cost_paths_books')
    .addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('author_id', 'integer', (column) => column.notNull())
    .execute()
  await db.insertInto('cost_paths_authors').values([{ id: 1, name: 'Le Guin' }, { id: 2, name: 'Atwood' }]).execute()
  await db.insertInto('cost_paths_books').values([
    { id: 1, title: 'A Wizard of Earthsea', author_id: 1 },
    { id: 2, title: 'The Handmaid\'s Tale', author_id: 2 },
    { id: 3, title: 'The Dispossessed', author_id: 1 },
  ]).execute()
}

async function pathsApp (t: TestContext, dialect: TestDialect) {
  const { url, db: setup } = await testDatabase(t, dialect)
  await seed(setup)
  const db = createDatabase<any>(url, { poolSize: 3, heavyConnections: 1 })
  t.after(() => db.destroy())
  const app = testApp(t)
  await app.register(createViewset({
    db,
    table: 'cost_paths_books',
    schema: Book,
    methods: ['LIST', 'GET'],
    orderingFields: ['author.name', 'id'],
    relatedConfig: { selectRelated: { author: { table: 'cost_paths_authors', foreignKey: 'author_id' } } },
  }), { prefix: '/books' })
  await app.register(createViewset({
    db,
    table: 'cost_paths_authors',
    schema: AuthorWithBooks,
    methods: ['LIST', 'GET'],
    relatedConfig: {
      prefetchRelated: { books: { table: 'cost_paths_books', foreignKey: 'author_id', orderBy: ['-id'], limit: 1 } },
    },
  }), { prefix: '/authors' })
  await app.ready()
  return { app, db, setup }
}

/**
 * Holds the bulkhead's one heavy slot with a statement that waits for a lock the test's own connection holds;
 * the returned function releases the lock and waits for the statement.
 */
async function holdHeavySlot (dialect: TestDialect, db: Kysely<any>, setup: Kysely<any>): Promise<() => Promise<void>> {
  const lockName = 'fastify_viewsets_cost_paths'
  const locking = dialect.name === 'postgres' ? sql`select pg_advisory_lock(4242)` : sql`select get_lock(${lockName}, 30)`
  const unlocking = dialect.name === 'postgres' ? sql`select pg_advisory_unlock(4242)` : sql`select release_lock(${lockName})`
  let release = (): void => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  let locked = (): void => {}
  const holding = new Promise<void>((resolve) => { locked = resolve })
  const holder = setup.connection().execute(async (connection) => {
    await locking.execute(connection)
    locked()
    await released
    await unlocking.execute(connection)
  })
  await holding
  // The heavy statement: waits for the lock, holding the slot.
  const waiting = db.executeQuery(declareCost(locking.compile(db), 'heavy'))
  return async () => {
    release()
    await holder
    await waiting
    await db.executeQuery(unlocking.compile(db))
  }
}

for (const dialect of dialects.filter((each) => each.name !== 'sqlite')) {
  const requests = [
    { path: '/books?order_by=author.name', body: [2, 1, 3] },
    ...(dialect.name === 'postgres' ? [{ path: '/authors/1', body: [3] }] : []),
  ]
  for (const { path, body } of requests) {
    const name = `${dialect.name}: ${path} waits in the bulkhead of heavy statements, and a key lookup passes it`
    // Past the bulkhead, the request would wait for the held connection's lock instead of queueing: a failure.
    test(name, { timeout: 30_000 }, async (t) => {
      const { app, db, setup } = await pathsApp(t, dialect)
      assert.equal((await app.inject('/books/1')).statusCode, 200)
      const events = bulkheadEvents(t)
      const release = await holdHeavySlot(dialect, db, setup)
      const order: string[] = []
      const heavy = app.inject(path).then((response) => { order.push('heavy'); return response })
      await published(events, 'queued', 1)
      assert.deepEqual(events.map(({ event, running, capacity }) => ({ event, running, capacity })),
        [{ event: 'queued', running: 1, capacity: 1 }])
      const lookup = await app.inject('/books/2')
      order.push('lookup')
      assert.equal(lookup.statusCode, 200)
      assert.equal(lookup.json().title, 'The Handmaid\'s Tale')
      await release()
      const answered = await heavy
      assert.equal(answered.statusCode, 200)
      const ids = path.startsWith('/books')
        ? answered.json().map((row: { id: number }) => row.id)
        : answered.json().books.map((row: { id: number }) => row.id)
      assert.deepEqual(ids, body)
      assert.deepEqual(order, ['lookup', 'heavy'])
    })
  }
}
