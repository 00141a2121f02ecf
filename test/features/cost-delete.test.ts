import { strict as assert } from 'node:assert'
import diagnosticsChannel from 'node:diagnostics_channel'
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from '../../lib/index.js'
import type { BulkheadEvent } from '../../lib/observability/channels.js'
import { testApp, problemOf } from '../helpers/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'

// Issue 43 on PostgreSQL and MariaDB: a DELETE by key was heavy by its shape ("it may cascade") and waited in the
// bulkhead with the scans, which halved DELETE's throughput. A table whose foreign keys from other tables neither
// cascade nor lack an index deletes a row as cheaply as it updates one; one that cascades stays heavy.

const Row = Type.Object({ id: Type.Integer(), tenant: Type.String() })
const Item = Type.Object({ id: Type.Integer(), title: Type.String() })

/** 100,000 items to scan; authors whose books restrict (indexed), owners whose pets cascade; two rows of each. */
async function seed (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('cost_d_digits').addColumn('d', 'integer').execute()
  await db.insertInto('cost_d_digits').values([...Array(10).keys()].map((d) => ({ d }))).execute()
  await db.schema.createTable('cost_d_items')
    .addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .execute()
  await sql`insert into cost_d_items (id, title)
    select a.d * 10000 + b.d * 1000 + c.d * 100 + e.d * 10 + f.d + 1, concat('title ', a.d, b.d, c.d, e.d, f.d)
    from cost_d_digits a cross join cost_d_digits b cross join cost_d_digits c
      cross join cost_d_digits e cross join cost_d_digits f`.execute(db)
  for (const [parent, child, onDelete] of [['cost_d_authors', 'cost_d_books', 'restrict'], ['cost_d_owners', 'cost_d_pets', 'cascade']] as const) {
    await db.schema.createTable(parent)
      .addColumn('id', 'integer', (column) => column.primaryKey())
      .addColumn('tenant', 'varchar(8)', (column) => column.notNull())
      .execute()
    await db.schema.createTable(child)
      .addColumn('id', 'integer', (column) => column.primaryKey())
      .addColumn('parent_id', 'integer', (column) => column.notNull().references(`${parent}.id`).onDelete(onDelete))
      .execute()
    await db.schema.createIndex(`${child}_parent`).on(child).column('parent_id').execute()
    await db.insertInto(parent).values([{ id: 1, tenant: 'a' }, { id: 2, tenant: 'b' }, { id: 3, tenant: 'a' }]).execute()
    await db.insertInto(child).values([{ id: 1, parent_id: 3 }]).execute()
  }
}

/**
 * An app on a pool of two connections (one for heavy statements), a heavy queue of one; `scoped`, each request names
 * its tenant (MariaDB then deletes in a transaction, which holds its connection from the start: no bulkhead).
 */
async function deleteApp (t: TestContext, dialect: TestDialect, scoped: boolean) {
  const { url, db: setup } = await testDatabase(t, dialect)
  await seed(setup)
  const db = createDatabase<any>(url, { poolSize: 2, heavyQueue: 1 })
  t.after(() => db.destroy())
  const app = testApp(t)
  await app.register(createViewset({
    db, table: 'cost_d_items', schema: Item, filterFields: { title: ['contains'] }, methods: ['LIST'],
  }), { prefix: '/items' })
  const scope = (eb: any, { request }: { request: { headers: Record<string, unknown> } }) =>
    eb('tenant', '=', String(request.headers['x-tenant']))
  for (const [table, prefix] of [['cost_d_authors', '/authors'], ['cost_d_owners', '/owners']] as const) {
    const options = { db, table, schema: Row, methods: ['DELETE' as const], withoutTokens: true }
    await app.register(createViewset(scoped ? { ...options, scope } : options), { prefix })
  }
  await app.ready()
  return { app, db: setup }
}

/** Whether each DELETE was classed heavy, as the statement channel tells it. */
function deletesSeen (t: TestContext): Array<{ table: string, heavy: boolean }> {
  const seen: Array<{ table: string, heavy: boolean }> = []
  const channel = diagnosticsChannel.tracingChannel('fastify-viewsets:statement')
  const subscriber = {
    end () {},
    asyncStart () {},
    asyncEnd () {},
    error () {},
    start (context: any) {
      if (context.operation === 'delete') seen.push({ table: context.table, heavy: context.heavy })
    },
  }
  channel.subscribe(subscriber)
  t.after(() => channel.unsubscribe(subscriber))
  return seen
}

async function ids (db: Kysely<any>, table: string): Promise<number[]> {
  return (await db.selectFrom(table).select('id').orderBy('id').execute()).map((row) => Number(row.id))
}

for (const dialect of dialects.filter((each) => each.name !== 'sqlite')) {
  test(`${dialect.name}: a DELETE whose foreign keys neither cascade nor scan passes the heavy statements`, async (t) => {
    const { app, db } = await deleteApp(t, dialect, false)
    const seen = deletesSeen(t)
    const events: BulkheadEvent[] = []
    const listener = (message: unknown) => { events.push(message as BulkheadEvent) }
    diagnosticsChannel.subscribe('fastify-viewsets:bulkhead', listener)
    t.after(() => diagnosticsChannel.unsubscribe('fastify-viewsets:bulkhead', listener))
    // The one heavy connection taken and its queue of one full.
    const scans = [app.inject('/items?title__contains=zzz'), app.inject('/items?title__contains=zzz')]
    while (!events.some((event) => event.event === 'queued')) await new Promise((resolve) => setImmediate(resolve))
    const [deleted, cascading] = await Promise.all([
      app.inject({ method: 'DELETE', url: '/authors/1' }),
      app.inject({ method: 'DELETE', url: '/owners/1' }),
    ])
    // The author's DELETE took no heavy slot; the owner's, which cascades, found none and no room to wait.
    assert.equal(deleted.statusCode, 204)
    assert.equal(deleted.body, '')
    assert.equal(cascading.statusCode, 503)
    assert.equal(cascading.headers['retry-after'], '1')
    assert.equal(problemOf(cascading).code, 'FST_VIEWSET_UNAVAILABLE')
    for (const scan of await Promise.all(scans)) assert.equal(scan.statusCode, 200)
    assert.deepEqual(seen, [{ table: 'cost_d_authors', heavy: false }])
    assert.deepEqual(await ids(db, 'cost_d_authors'), [2, 3])
    assert.deepEqual(await ids(db, 'cost_d_owners'), [1, 2, 3])
  })

  test(`${dialect.name}: cheap or heavy, a DELETE reaches its tenant's rows only and keeps its foreign keys`,
    async (t) => {
      const { app, db } = await deleteApp(t, dialect, true)
      const seen = deletesSeen(t)
      for (const prefix of ['/authors', '/owners']) {
        // Row 2 is tenant b's: a 404 for tenant a, as for a row that does not exist.
        const hidden = await app.inject({ method: 'DELETE', url: `${prefix}/2`, headers: { 'x-tenant': 'a' } })
        assert.equal(hidden.statusCode, 404)
        assert.equal(problemOf(hidden).code, 'FST_VIEWSET_NOT_FOUND')
        const own = await app.inject({ method: 'DELETE', url: `${prefix}/2`, headers: { 'x-tenant': 'b' } })
        assert.equal(own.statusCode, 204)
      }
      // Author 3 has a book, which restricts: 409, nothing deleted. Owner 3's pet goes with it.
      const restricted = await app.inject({ method: 'DELETE', url: '/authors/3', headers: { 'x-tenant': 'a' } })
      assert.equal(restricted.statusCode, 409)
      const cascaded = await app.inject({ method: 'DELETE', url: '/owners/3', headers: { 'x-tenant': 'a' } })
      assert.equal(cascaded.statusCode, 204)
      assert.deepEqual(await ids(db, 'cost_d_authors'), [1, 3])
      assert.deepEqual(await ids(db, 'cost_d_books'), [1])
      assert.deepEqual(await ids(db, 'cost_d_owners'), [1])
      assert.deepEqual(await ids(db, 'cost_d_pets'), [])
      assert.deepEqual(new Set(seen.map((each) => `${each.table} ${String(each.heavy)}`)),
        new Set(['cost_d_authors false', 'cost_d_owners true']))
    })
}

// PostgreSQL's pool shortcut runs a write without RETURNING too, so a DELETE counts the rows it removed rather than
// read back its key: no row to describe, send and parse for each DELETE.
for (const dialect of dialects.filter((each) => each.name === 'postgres')) {
  test(`${dialect.name}: a DELETE by key is one named statement without RETURNING, and a missing row is a 404`,
    async (t) => {
      const { url, db: setup } = await testDatabase(t, dialect)
      await seed(setup)
      // One connection: the statements it prepared are the ones pg_prepared_statements lists for it.
      const db = createDatabase<any>(url, { poolSize: 1 })
      t.after(() => db.destroy())
      const app = testApp(t)
      await app.register(createViewset({ db, table: 'cost_d_authors', schema: Row, methods: ['DELETE'] }),
        { prefix: '/authors' })
      await app.ready()
      const deleted = await app.inject({ method: 'DELETE', url: '/authors/1' })
      assert.equal(deleted.statusCode, 204)
      assert.equal(deleted.body, '')
      const missing = await app.inject({ method: 'DELETE', url: '/authors/1' })
      assert.equal(missing.statusCode, 404)
      assert.equal(problemOf(missing).code, 'FST_VIEWSET_NOT_FOUND')
      const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)
      const deletes = prepared.rows.map((row) => row.statement).filter((text) => text.startsWith('delete'))
      assert.deepEqual(deletes, ['delete from "cost_d_authors" where "id" = $1'])
      assert.deepEqual(await ids(setup, 'cost_d_authors'), [2, 3])
    })
}
