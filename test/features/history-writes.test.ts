import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createViewset } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// How a PATCH records its history (issue 43): the entry stores the row as a read of it stores it (the row the UPDATE
// read back, every column in the table's order, is not read again), in the write's own transaction (a failing INSERT
// of the entry leaves neither the entry nor the update), in 5 statements where it took 6 (SQLite) or 7 (PostgreSQL:
// the advisory lock is taken by the INSERT), and on SQLite with the history alone as one synchronous transaction
// on the connection rather than Kysely's.

const Gauge = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  note: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  level: Type.Integer(),
})

async function gaugesApp (t: TestContext, dialect: TestDialect, options: Record<string, unknown> = {}) {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [type, key] = autoIncrement(dialect.name)
  await db.schema.createTable('gauges').addColumn('id', type as 'integer', key)
    .addColumn('title', 'varchar(100)', (column) => column.notNull())
    .addColumn('note', 'varchar(100)')
    .addColumn('level', 'integer', (column) => column.notNull())
    .execute()
  await db.insertInto('gauges').values({ title: 'g', level: 1 }).execute()
  const app = testApp(t)
  const given = { db, table: 'gauges', schema: Gauge, methods: ['GET', 'PATCH'], history: { createTable: true }, ...options }
  await app.register(createViewset(given as unknown as ViewsetOptions<any, 'gauges', typeof Gauge>), { prefix: '/gauges' })
  await app.ready()
  return { ...database, app }
}

/** The entries of the gauges, as stored (the row texts unparsed). */
async function stored (db: Kysely<any>) {
  return await db.selectFrom('viewset_history').select(['operation', 'before', 'after'])
    .where('table_name', '=', 'gauges').orderBy('position').execute()
}

/** Makes the history's INSERT fail for an entry whose row after has `level` 13. */
async function refuseLevel13 (db: Kysely<any>, dialect: TestDialect['name']) {
  if (dialect === 'sqlite') {
    await sql`create trigger refuse13 before insert on viewset_history when new."after" like '%"level":13%'
      begin select raise(abort, 'level 13 refused'); end`.execute(db)
  } else if (dialect === 'postgres') {
    await sql`create function refuse13() returns trigger language plpgsql as $$ begin
      if new."after" like '%"level":13%' then raise exception 'level 13 refused'; end if; return new; end $$`.execute(db)
    await sql`create trigger refuse13 before insert on viewset_history for each row execute function refuse13()`
      .execute(db)
  } else {
    await sql`create trigger refuse13 before insert on viewset_history for each row
      begin if new.\`after\` like '%"level":13%' then signal sqlstate '45000' set message_text = 'level 13 refused';
      end if; end`.execute(db)
  }
}

for (const dialect of dialects) {
  describe(`a PATCH's history entry (${dialect.name})`, () => {
    test('stores the row after as a read of it does: its text is the next entry\'s before, in column order',
      async (t) => {
        const { app, db } = await gaugesApp(t, dialect)
        for (const level of [2, 3]) {
          const response = await app.inject({ method: 'PATCH', url: '/gauges/1', payload: { level } })
          assert.equal(response.statusCode, 200, response.body)
          assert.deepEqual(response.json(), { id: 1, title: 'g', note: null, level })
        }
        const [first, second] = await stored(db)
        assert.equal(first?.before, '{"id":1,"title":"g","note":null,"level":1}')
        assert.equal(first?.after, '{"id":1,"title":"g","note":null,"level":2}')
        assert.equal(second?.before, first?.after, 'the row read before the second PATCH is stored as the first stored it')
        assert.equal(second?.after, '{"id":1,"title":"g","note":null,"level":3}')
      })

    test('runs 5 statements: the row read, the UPDATE and the entry\'s INSERT in one transaction', async (t) => {
      const { app, queries } = await gaugesApp(t, dialect)
      queries.length = 0
      const response = await app.inject({ method: 'PATCH', url: '/gauges/1', payload: { level: 2 } })
      assert.equal(response.statusCode, 200, response.body)
      const words = queries.map((text) => text.trim().split(/\s+/).slice(0, 2).join(' ').toLowerCase())
      const expected: Record<TestDialect['name'], string[]> = {
        sqlite: ['begin immediate', 'select *', 'update "gauges"', 'insert into', 'commit'],
        postgres: ['begin', 'select *', 'update "gauges"', 'insert into', 'commit'],
        mysql: ['begin', 'select *', 'update `gauges`', 'select `id`,', 'select `table_name`', 'insert into', 'commit'],
      }
      assert.deepEqual(words, expected[dialect.name], queries.join('\n'))
      if (dialect.name === 'postgres') assert.match(queries[3] ?? '', /pg_advisory_xact_lock/)
    })

    test('a failing INSERT of the entry leaves neither the entry nor the update', async (t) => {
      const { app, db } = await gaugesApp(t, dialect)
      await refuseLevel13(db, dialect.name)
      const refused = await app.inject({ method: 'PATCH', url: '/gauges/1', payload: { level: 13 } })
      assert.equal(refused.statusCode, 500, refused.body)
      assert.deepEqual(await db.selectFrom('gauges').select(['title', 'level']).execute(), [{ title: 'g', level: 1 }])
      assert.deepEqual(await stored(db), [])
      // The connection is usable, out of any transaction: the next PATCH commits with its entry.
      const next = await app.inject({ method: 'PATCH', url: '/gauges/1', payload: { level: 4 } })
      assert.equal(next.statusCode, 200, next.body)
      assert.deepEqual((await stored(db)).map((entry) => entry.operation), ['update'])
      assert.deepEqual(await db.selectFrom('gauges').select('level').execute(), [{ level: 4 }])
    })

    test('with the history alone, not in a transaction of Kysely\'s on SQLite; with an afterWrite, in one',
      async (t) => {
        for (const afterWrite of [undefined, async () => {}]) {
          const { app, db } = await gaugesApp(t, dialect, afterWrite === undefined ? {} : { afterWrite })
          let transactions = 0
          const transaction = db.transaction.bind(db)
          db.transaction = () => { transactions += 1; return transaction() }
          const response = await app.inject({ method: 'PATCH', url: '/gauges/1', payload: { level: 2 } })
          assert.equal(response.statusCode, 200, response.body)
          assert.equal(transactions, dialect.name === 'sqlite' && afterWrite === undefined ? 0 : 1)
          assert.deepEqual((await stored(db)).map((entry) => entry.operation), ['update'])
        }
      })

    test('two tenants: a PATCH of the other tenant\'s row changes nothing and records nothing', async (t) => {
      // The rule is checked in the UPDATE itself: on SQLite the write takes the synchronous transaction.
      const { app, db } = await gaugesApp(t, dialect, {
        withoutTokens: true,
        scope: (eb: any, { request }: { request: { headers: Record<string, unknown> } }) =>
          eb('title', '=', String(request.headers['x-tenant'] ?? '')),
      })
      await db.insertInto('gauges').values({ title: 'h', level: 5 }).execute()
      const other = await app.inject({ method: 'PATCH', url: '/gauges/2', headers: { 'x-tenant': 'g' }, payload: { level: 9 } })
      assert.equal(other.statusCode, 404)
      assert.deepEqual(await stored(db), [])
      assert.deepEqual((await db.selectFrom('gauges').select(['id', 'level']).orderBy('id').execute())
        .map((row) => [Number(row.id), Number(row.level)]), [[1, 1], [2, 5]])
      const own = await app.inject({ method: 'PATCH', url: '/gauges/1', headers: { 'x-tenant': 'g' }, payload: { level: 9 } })
      assert.equal(own.statusCode, 200)
      assert.equal(own.json().level, 9)
      const entries = await stored(db)
      assert.deepEqual(entries.map((entry) => entry.operation), ['update'])
      assert.ok(String(entries[0]?.after).includes('"level":9') && !String(entries[0]?.after).includes('"title":"h"'))
    })
  })
}
