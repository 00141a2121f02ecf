import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { promisify } from 'node:util'
import { Type } from '@sinclair/typebox'
import type { FastifyReply } from 'fastify'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset, Viewset } from 'fastify-viewsets'
import type { CreateRequest, ListRequest, ViewsetToken } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

// MySQL and MariaDB answer writes without RETURNING, so the dialect writes and reads back in one
// transaction. These tests pin what that must look like from the outside, and the values mysql2
// hands back (0/1, DECIMAL strings, MariaDB JSON text) answered like the other dialects.
const mysql = dialects.filter((dialect) => dialect.name === 'mysql')

/** The items viewset over `database` (whose items table exists), or over a new database with one. */
async function itemsApp (t: TestContext, dialect: TestDialect, database?: TestDatabase) {
  let db = database
  if (db === undefined) {
    db = await testDatabase(t, dialect)
    await createItemsTable(db)
  }
  const app = testApp(t)
  await app.register(createViewset({ db: db.db as Kysely<ItemsDB>, table: 'items', schema: Item }), {
    prefix: '/items',
  })
  return { app, ...db }
}

for (const dialect of mysql) {
  describe(`MySQL writes on ${dialect.name}`, () => {
    test('POST, PUT and PATCH answer the row as stored, read back in the same transaction', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      // The server changes what it stores: a response built from the request would not show it.
      await sql`create trigger items_insert before insert on items for each row set new.name = upper(new.name)`.execute(
        database.db
      )
      await sql`create trigger items_update before update on items for each row set new.description = concat(coalesce(new.description, ''), '!')`.execute(
        database.db
      )
      const { app, queries } = await itemsApp(t, dialect, database)

      queries.length = 0
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'bread', in_stock: false } })
      assert.equal(created.statusCode, 201)
      const body = created.json()
      assert.deepEqual(body, { id: body.id, name: 'BREAD', description: null, price: 0, in_stock: false })
      assert.equal(created.headers.location, `/items/${body.id}`)
      // The read follows the write inside one transaction.
      assert.deepEqual(
        queries.map((text) => text.split(' ')[0]?.toLowerCase()),
        ['begin', 'insert', 'select', 'commit']
      )

      const patched = await app.inject({ method: 'PATCH', url: `/items/${body.id}`, payload: { price: 2.5 } })
      assert.equal(patched.statusCode, 200)
      assert.deepEqual(patched.json(), { id: body.id, name: 'BREAD', description: '!', price: 2.5, in_stock: false })

      const put = await app.inject({
        method: 'PUT',
        url: `/items/${body.id}`,
        payload: { name: 'rye', description: 'dark', in_stock: true },
      })
      assert.equal(put.statusCode, 200)
      assert.deepEqual(put.json(), { id: body.id, name: 'rye', description: 'dark!', price: 2.5, in_stock: true })

      const got = await app.inject(`/items/${body.id}`)
      assert.deepEqual(got.json(), put.json())
    })

    test('PATCH with the values already stored answers 200, and a missing id 404 without writing', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const { id } = (await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread', price: 1 } })).json()
      // MySQL reports 0 affected rows for an update that changes nothing: the read decides, not the count.
      const same = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { price: 1 } })
      assert.equal(same.statusCode, 200)
      assert.deepEqual(same.json(), { id, name: 'Bread', description: null, price: 1, in_stock: true })
      const empty = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: {} })
      assert.equal(empty.statusCode, 200)
      assert.deepEqual(empty.json(), same.json())

      const missing = await app.inject({ method: 'PATCH', url: `/items/${id + 1}`, payload: { name: 'Ghost' } })
      assert.equal(missing.statusCode, 404)
      assert.equal(problemOf(missing).code, 'FST_VIEWSET_NOT_FOUND')
      const put = await app.inject({ method: 'PUT', url: `/items/${id + 1}`, payload: { name: 'Ghost' } })
      assert.equal(put.statusCode, 404)
      assert.deepEqual(
        (await db.selectFrom('items').select('name').execute()).map((row) => row.name),
        ['Bread']
      )
    })

    test('duplicate keys and foreign keys answer the same 409 problems as on the other dialects', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const [idType, id] = autoIncrement(dialect.name)
      await database.db.schema
        .createTable('reviews')
        .addColumn('id', idType as 'integer', id)
        .addColumn('item_id', 'integer', (column) => column.notNull().references('items.id'))
        .addColumn('stars', 'integer', (column) => column.notNull())
        .execute()
      const Review = Type.Object({
        id: Type.Optional(Type.Integer({ readOnly: true })),
        item_id: Type.Integer(),
        stars: Type.Integer(),
      })
      const { app } = await itemsApp(t, dialect, database)
      await app.register(createViewset({ db: database.db, table: 'reviews', schema: Review }), { prefix: '/reviews' })

      const bread = (await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread' } })).json()
      const cake = (await app.inject({ method: 'POST', url: '/items', payload: { name: 'Cake' } })).json()
      for (const request of [
        { method: 'POST' as const, url: '/items', payload: { name: 'Bread' } },
        { method: 'PATCH' as const, url: `/items/${cake.id}`, payload: { name: 'Bread' } },
      ]) {
        const response = await app.inject(request)
        assert.equal(response.statusCode, 409, `${request.method}: ${response.body}`)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_CONFLICT')
        assert.equal(problem.detail, 'A row with the same name already exists')
      }

      const orphan = await app.inject({ method: 'POST', url: '/reviews', payload: { item_id: 999, stars: 5 } })
      assert.equal(orphan.statusCode, 409)
      assert.equal(problemOf(orphan).code, 'FST_VIEWSET_CONFLICT')
      assert.doesNotMatch(orphan.body, /CONSTRAINT|REFERENCES|`/, 'no SQL in the body')

      assert.equal(
        (await app.inject({ method: 'POST', url: '/reviews', payload: { item_id: bread.id, stars: 5 } })).statusCode,
        201
      )
      const referenced = await app.inject({ method: 'DELETE', url: `/items/${bread.id}` })
      assert.equal(referenced.statusCode, 409)
      assert.equal(problemOf(referenced).code, 'FST_VIEWSET_CONFLICT')
      assert.equal((await app.inject(`/items/${bread.id}`)).statusCode, 200, 'the row is still there')
    })

    test('values the column cannot hold answer 400 problems, not 500', async (t) => {
      const database = await testDatabase(t, dialect)
      await database.db.schema
        .createTable('notes')
        .addColumn('id', 'integer', (column) => column.primaryKey().autoIncrement())
        .addColumn('title', 'varchar(5)', (column) => column.notNull())
        .addColumn('rank', 'smallint', (column) => column.notNull().defaultTo(0))
        .execute()
      // The schema is looser than the table on purpose: the database has the last word.
      const Note = Type.Object({
        id: Type.Optional(Type.Integer()),
        title: Type.String(),
        rank: Type.Optional(Type.Number()),
      })
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'notes', schema: Note }), { prefix: '/notes' })
      const long = await app.inject({ method: 'POST', url: '/notes', payload: { title: 'far too long' } })
      assert.equal(long.statusCode, 400)
      assert.equal(problemOf(long).code, 'FST_VIEWSET_INVALID_VALUE')
      assert.equal(problemOf(long).detail, 'A value cannot be stored: a string is longer than the column allows')
      const outOfRange = await app.inject({ method: 'POST', url: '/notes', payload: { title: 'ok', rank: 1e9 } })
      assert.equal(outOfRange.statusCode, 400)
      assert.equal(problemOf(outOfRange).code, 'FST_VIEWSET_INVALID_VALUE')
      assert.deepEqual(await database.db.selectFrom('notes').selectAll().execute(), [])
    })

    test('RFC 3339 dates with an offset are stored in UTC, and defaults come back in UTC', async (t) => {
      const database = await testDatabase(t, dialect)
      await database.db.schema
        .createTable('events')
        .addColumn('id', 'bigint', (column) => column.primaryKey().autoIncrement())
        .addColumn('happened_at', 'datetime(3)', (column) => column.notNull())
        .addColumn('logged_at', 'timestamp(3)', (column) => column.notNull().defaultTo(sql`current_timestamp(3)`))
        .addColumn('amount', 'decimal(10, 2)', (column) => column.notNull().defaultTo('1.50'))
        .addColumn('data', 'json')
        .execute()
      const Event = Type.Object({
        id: Type.Optional(Type.Integer({ readOnly: true })),
        happened_at: Type.String({ format: 'date-time' }),
        logged_at: Type.Optional(Type.String({ format: 'date-time', readOnly: true })),
        amount: Type.Optional(Type.Number()),
        data: Type.Optional(Type.Union([Type.Object({ tags: Type.Array(Type.String()) }), Type.Null()])),
      })
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'events', schema: Event }), { prefix: '/events' })

      const before = Date.now()
      const created = await app.inject({
        method: 'POST',
        url: '/events',
        payload: { happened_at: '2024-01-02T05:04:05.678+02:00', data: { tags: ['a', 'b'] } },
      })
      assert.equal(created.statusCode, 201, created.body)
      const body = created.json()
      assert.equal(typeof body.id, 'number', 'BIGINT keys are numbers while they are exact')
      assert.equal(body.happened_at, '2024-01-02T03:04:05.678Z')
      assert.equal(body.amount, 1.5, 'DECIMAL is served as the schema says')
      assert.deepEqual(body.data, { tags: ['a', 'b'] }, 'MariaDB JSON comes back parsed')
      // A session in another time zone would be off by whole hours.
      assert.ok(Math.abs(Date.parse(body.logged_at) - before) < 60_000, `${body.logged_at} is now, in UTC`)

      const patched = await app.inject({
        method: 'PATCH',
        url: `/events/${body.id}`,
        payload: { happened_at: '2024-06-30T23:30:00Z', data: null, amount: 2.25 },
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.deepEqual(patched.json(), { ...body, happened_at: '2024-06-30T23:30:00.000Z', data: null, amount: 2.25 })
      const stored = await sql<{ text: string }>`select cast(happened_at as char) as text from events`.execute(
        database.db
      )
      assert.equal(stored.rows[0]?.text, '2024-06-30 23:30:00.000')
    })

    test('overrides can write through this.insert inside their own transaction', async (t) => {
      class AuditedViewset extends Viewset<ItemsDB, 'items', typeof Item> {
        override async createElement (
          request: CreateRequest<typeof Item>,
          _reply: FastifyReply,
          _token: ViewsetToken | null
        ) {
          return await this.transaction(async (trx) => {
            const row = await this.insert(this.writable(request.body), trx)
            if (row.name === 'Forbidden') throw new Error('rolled back')
            return row
          })
        }
      }
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(
        new AuditedViewset({ db: database.db as Kysely<ItemsDB>, table: 'items', schema: Item }).register(),
        { prefix: '/items' }
      )
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread' } })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json().name, 'Bread')
      const failed = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Forbidden' } })
      assert.equal(failed.statusCode, 500)
      assert.deepEqual(
        (await database.db.selectFrom('items').select('name').execute()).map((row) => row.name),
        ['Bread']
      )
    })

    test('mariadb:// URLs reach the same server', async (t) => {
      const database = await testDatabase(t, dialect)
      const db = createDatabase<any>(database.url.replace(/^mysql:/, 'mariadb:'))
      t.after(() => db.destroy())
      const { rows } = await sql<{ name: string }>`select database() as name`.execute(db)
      assert.equal(rows[0]?.name, new URL(database.url).pathname.slice(1))
    })
  })
}

// Pools: the connection timeout bounds the wait for a pooled connection, on every pooled dialect.
for (const dialect of dialects.filter((dialect) => dialect.name !== 'sqlite')) {
  describe(`connection pool on ${dialect.name}`, () => {
    test('an exhausted pool answers 503 with Retry-After after connectionTimeout, then recovers', async (t) => {
      const database = await testDatabase(t, dialect, { poolSize: 1, connectionTimeout: 200 })
      await createItemsTable(database)
      const { app, db } = await itemsApp(t, dialect, database)
      await app.ready()
      let held!: () => void
      const holding = new Promise<void>((resolve) => {
        held = resolve
      })
      let release!: () => void
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      // The only connection is busy until the request below has given up.
      const busy = db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx)
        held()
        await released
      })
      await holding
      const response = await app.inject('/items')
      release()
      await busy
      assert.equal(response.statusCode, 503)
      assert.equal(response.headers['retry-after'], '1')
      assert.equal(problemOf(response).code, 'FST_VIEWSET_UNAVAILABLE')
      assert.equal((await app.inject('/items')).statusCode, 200)
    })
  })
}

// Searching the same rows must find the same ones everywhere: case folded, accents kept, and `%`,
// `_`, `!`, `\` and quotes matched as themselves.
const rows = [
  'Café au lait',
  'CAFE NOIR',
  'cafeteria',
  '100% juice',
  '100 apples',
  'snake_case',
  'snakescase',
  'back\\slash',
  'bang!',
  "O'Brien",
]
const searches: Array<[string, string[]]> = [
  ['cafe', ['CAFE NOIR', 'cafeteria']],
  ['CaFe', ['CAFE NOIR', 'cafeteria']],
  ['café', ['Café au lait']],
  ['100%', ['100% juice']],
  ['e_c', ['snake_case']],
  ['\\', ['back\\slash']],
  ['!', ['bang!']],
  ["o'b", ["O'Brien"]],
  ['%', ['100% juice']],
  ['_', ['snake_case']],
]

class SearchViewset extends Viewset<ItemsDB, 'items', typeof Item> {
  static override listQuery = Type.Object({ q: Type.String() })
  override async list (request: ListRequest<{ q: string }>) {
    return await this.query()
      .where((eb) => this.contains(eb.ref('name'), request.query.q))
      .orderBy('id')
      .execute()
  }
}

for (const dialect of dialects) {
  describe(`case-insensitive matching on ${dialect.name}`, () => {
    test('contains() finds the same rows on every dialect', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      await database.db
        .insertInto('items')
        .values(rows.map((name) => ({ name })))
        .execute()
      const app = testApp(t)
      await app.register(
        new SearchViewset({ db: database.db as Kysely<ItemsDB>, table: 'items', schema: Item }).register(),
        { prefix: '/items' }
      )
      for (const [term, expected] of searches) {
        const response = await app.inject({ url: '/items', query: { q: term } })
        assert.equal(response.statusCode, 200)
        assert.deepEqual(
          response.json().map((row: { name: string }) => row.name),
          expected,
          `search ${JSON.stringify(term)}`
        )
      }
      // SQLite's lower() folds ASCII letters only; PostgreSQL and MySQL fold the rest of Unicode too.
      const unicode = await app.inject({ url: '/items', query: { q: 'CAFÉ' } })
      assert.deepEqual(
        unicode.json().map((row: { name: string }) => row.name),
        dialect.name === 'sqlite' ? [] : ['Café au lait']
      )
    })
  })
}

// mysql2 and pg are optional peers: a SQLite user must not need them, so nothing may load them early.
describe('drivers load on demand', () => {
  test('a SQLite database loads neither pg nor mysql2', async () => {
    const script = `
      import { createRequire } from 'node:module'
      import { sql } from 'kysely'
      import { createDatabase, createViewset } from 'fastify-viewsets'
      const db = createDatabase('sqlite::memory:')
      await sql\`select 1\`.execute(db)
      await db.destroy()
      const loaded = Object.keys(createRequire(import.meta.url).cache)
      console.log(JSON.stringify(['better-sqlite3', 'pg', 'mysql2'].filter((name) => loaded.some((path) => path.includes('/node_modules/' + name + '/')))))
    `
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: process.cwd() }
    )
    // better-sqlite3 shows that the check sees drivers loaded through import().
    assert.deepEqual(JSON.parse(stdout), ['better-sqlite3'])
  })
})
