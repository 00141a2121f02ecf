import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import Database from 'better-sqlite3'
import { Kysely, sql, SqliteDialect } from 'kysely'
import { createDatabase, createViewset, withPreparedStatements } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { TestContext } from 'node:test'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import type { Compilable, QueryResult } from 'kysely'

// Reads compiled at registration run straight on SQLite connections and as named statements on
// PostgreSQL (lib/db-statements.ts). Neither may change what a client sees.

async function itemsApp (t: TestContext, database: TestDatabase | { db: Kysely<any> }) {
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, orderingFields: ['price'] }), {
    prefix: '/items',
  })
  return app
}

async function seeded (t: TestContext, dialect: TestDialect, options: { poolSize?: number } = {}) {
  const database = await testDatabase(t, dialect, options)
  await createItemsTable(database)
  await database.db
    .insertInto('items')
    .values([
      { name: 'Bread', price: 2 },
      { name: 'Milk', price: 1 },
    ])
    .execute()
  return database
}

/**
 * Runs compiled statements with db.executeQuery (the direct path where there is one), puts the two seeded rows
 * back, and runs them again inside a transaction (Kysely's own driver): both results, in order.
 */
async function directAndInTransaction (
  db: Kysely<any>,
  statements: ReadonlyArray<Compilable<unknown>>
): Promise<[Array<QueryResult<unknown>>, Array<QueryResult<unknown>>]> {
  const direct = []
  for (const statement of statements) direct.push(await db.executeQuery(statement.compile()))
  await db.deleteFrom('items').execute()
  await db
    .insertInto('items')
    .values([
      { name: 'Bread', price: 2 },
      { name: 'Milk', price: 1 },
    ])
    .execute()
  const driver = await db.transaction().execute(async (trx) => {
    const results = []
    for (const statement of statements) results.push(await trx.executeQuery(statement.compile()))
    return results
  })
  return [direct, driver]
}

for (const dialect of dialects) {
  describe(`prepared reads on ${dialect.name}`, () => {
    test('GET and LIST answer the rows a Kysely query reads, and every read reaches the log', async (t) => {
      const database = await seeded(t, dialect)
      const app = await itemsApp(t, database)
      const expected = await database.db
        .selectFrom('items')
        .select(['id', 'name', 'description', 'price', 'in_stock'])
        .orderBy('id')
        .execute()
      database.queries.length = 0
      for (let round = 0; round < 2; round++) {
        const list = await app.inject({ url: '/items' })
        assert.equal(list.statusCode, 200)
        assert.deepEqual(
          list.json().map((row: any) => row.name),
          expected.map((row) => row.name)
        )
        const one = await app.inject({ url: `/items/${expected[1]?.id as number}` })
        assert.equal(one.statusCode, 200)
        assert.equal(one.json().name, 'Milk')
        assert.equal((await app.inject({ url: '/items/999999' })).statusCode, 404)
      }
      assert.equal(database.queries.filter((query) => /^select/i.test(query)).length, 6, database.queries.join('\n'))
    })

    test("a LIST page's LIMIT is written into its SQL on SQLite (a bound one is planned again on every step), and bound elsewhere", async (t) => {
      const database = await seeded(t, dialect)
      await database.db
        .insertInto('items')
        .values([
          { name: 'Salt', price: 3 },
          { name: 'Tea', price: 4 },
        ])
        .execute()
      const app = testApp(t)
      await app.register(
        createViewset({
          db: database.db,
          table: 'items',
          schema: Item,
          orderingFields: ['price'],
          pagination: 'cursor',
        }),
        { prefix: '/cursor' }
      )
      const offsetApp = await itemsApp(t, database)
      database.queries.length = 0
      const pages = [
        await offsetApp.inject({ url: '/items?limit=2' }),
        await offsetApp.inject({ url: '/items?limit=3' }),
        await offsetApp.inject({ url: '/items?limit=2&order_by=-price' }),
        await app.inject({ url: '/cursor?limit=3&order_by=price' }),
      ]
      assert.deepEqual(
        pages.map((page) => page.json().map((row: { name: string }) => row.name)),
        [
          ['Bread', 'Milk'],
          ['Bread', 'Milk', 'Salt'],
          ['Tea', 'Salt'],
          ['Milk', 'Bread', 'Salt'],
        ]
      )
      const limits = database.queries
        .filter((text) => /limit/.test(text))
        .map((text) => /limit (\S+)/.exec(text.replaceAll('`', ''))?.[1])
      assert.deepEqual(
        limits,
        dialect.name === 'sqlite'
          ? ['2', '3', '2', '4']
          : dialect.name === 'postgres'
            ? ['$1', '$1', '$1', '$1']
            : ['?', '?', '?', '?'],
        database.queries.join('\n')
      )
    })

    // On SQLite a compiled write without RETURNING takes the direct path too (`.run()`): it answers what
    // Kysely's driver answers.
    test("db.executeQuery answers a write without RETURNING with its affected rows and insert id, as Kysely's driver does in a transaction", async (t) => {
      const { db } = await seeded(t, dialect)
      const [direct, driver] = await directAndInTransaction(db, [
        db.insertInto('items').values({ name: 'Salt', price: 3 }),
        db.updateTable('items').set({ price: 9 }).where('price', '>', 1),
        db.deleteFrom('items').where('price', '=', 9),
      ])
      assert.deepEqual(
        direct.map((result) => result.numAffectedRows),
        [1n, 2n, 2n]
      )
      assert.deepEqual(
        direct.map((result) => result.rows),
        [[], [], []]
      )
      const shape = (result: QueryResult<unknown>) => ({
        rows: result.rows,
        numAffectedRows: result.numAffectedRows,
        insertId: typeof result.insertId,
      })
      assert.deepEqual(direct.map(shape), driver.map(shape))
      if (dialect.name !== 'postgres') {
        // The id of the row inserted (PostgreSQL reports none without RETURNING).
        const sugar = await db.executeQuery(db.insertInto('items').values({ name: 'Sugar', price: 1 }).compile())
        const stored = await db.selectFrom('items').select('id').where('name', '=', 'Sugar').executeTakeFirstOrThrow()
        assert.equal(sugar.insertId, BigInt(stored.id))
      }
    })

    // PostgreSQL's direct path reads rows as arrays and makes them objects (lib/dialect/postgres/postgres-rows.ts): any
    // column name is a plain own property, and the last of two of one name wins, as in pg's own rows.
    if (dialect.name === 'postgres') {
      test("db.executeQuery answers columns of any name as Kysely's driver does: __proto__, quotes, one name twice", async (t) => {
        const { db } = await seeded(t, dialect)
        const odd = db.selectFrom('items')
          .select([sql<string>`name`.as('__proto__'), sql<number>`price`.as('a"b\\c'), 'name', sql<number>`price`.as('name')])
          .orderBy('id')
        const [direct, driver] = await directAndInTransaction(db, [odd, odd])
        assert.deepEqual(direct[0]?.rows, driver[0]?.rows)
        assert.deepEqual(direct[1]?.rows, direct[0]?.rows)
        const [first] = (direct[0]?.rows ?? []) as Array<Record<string, unknown>>
        assert.ok(first !== undefined)
        assert.equal(Object.getPrototypeOf(first), Object.prototype)
        assert.ok(Object.hasOwn(first, '__proto__'))
        assert.deepEqual(Object.keys(first), ['__proto__', 'a"b\\c', 'name'])
        assert.equal(Object.getOwnPropertyDescriptor(first, '__proto__')?.value, 'Bread')
        assert.equal(Number(first.name), 2)
      })
    }

    // MySQL has no UPDATE … RETURNING, and no direct path.
    if (dialect.name === 'mysql') return
    // A compiled write with RETURNING takes the direct path outside a transaction (SQLite, PostgreSQL): it may
    // drop neither a row nor a count.
    test("db.executeQuery answers a compiled write with every row it returns, as Kysely's driver does in a transaction", async (t) => {
      const { db } = await seeded(t, dialect)
      const [direct, driver] = await directAndInTransaction(db, [
        db.insertInto('items').values({ name: 'Salt', price: 3 }).returning('name'),
        db
          .insertInto('items')
          .values([
            { name: 'Tea', price: 4 },
            { name: 'Jam', price: 5 },
          ])
          .returning('name'),
        db.updateTable('items').set({ price: 9 }).where('price', '>', 2).returning('name'),
        db.deleteFrom('items').where('price', '=', 9).returning('name'),
      ])
      const names = (result: { rows: unknown[] }) => result.rows.map((row) => (row as { name: string }).name).sort()
      assert.deepEqual(direct.map(names), [['Salt'], ['Jam', 'Tea'], ['Jam', 'Salt', 'Tea'], ['Jam', 'Salt', 'Tea']])
      assert.deepEqual(driver.map(names), direct.map(names))
      assert.deepEqual(
        driver.map((result) => result.numAffectedRows),
        direct.map((result) => result.numAffectedRows)
      )
    })
  })
}

/** Starts a stream, asks GET /items/2 while it is open, ends the stream: the read must then answer, not fail. */
async function readWhileStreaming (
  app: Awaited<ReturnType<typeof itemsApp>>,
  query: { stream: () => AsyncIterable<{ name?: unknown }> }
) {
  const stream = query.stream()[Symbol.asyncIterator]()
  assert.equal((await stream.next()).value?.name, 'Bread')
  const reading = app.inject({ url: '/items/2' })
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
  await stream.return?.()
  const response = await reading
  assert.equal(response.statusCode, 200)
  assert.equal(response.json().name, 'Milk')
}

/** A Kysely over a better-sqlite3 database in WAL mode, as a user opens one, wrapped. */
function ownWalKysely (file: string) {
  const database = new Database(file)
  database.pragma('journal_mode = WAL')
  return withPreparedStatements(new Kysely<any>({ dialect: new SqliteDialect({ database }) }), database)
}

const sqlite = dialects.find((dialect) => dialect.name === 'sqlite')
if (sqlite !== undefined) {
  describe('direct SQLite statements', () => {
    test("a read waits for another request's transaction and never sees its uncommitted rows", async (t) => {
      const database = await seeded(t, sqlite)
      const app = await itemsApp(t, database)
      let release: () => void = () => {}
      const hold = new Promise<void>((resolve) => {
        release = resolve
      })
      let inserted = 0
      const writer = database.db
        .transaction()
        .execute(async (trx) => {
          const row = await trx
            .insertInto('items')
            .values({ name: 'Uncommitted' })
            .returning('id')
            .executeTakeFirstOrThrow()
          inserted = row.id
          await hold
          throw new Error('roll back')
        })
        .catch(() => 'rolled back')
      // eslint-disable-next-line no-unmodified-loop-condition -- set by a callback while this loop awaits
      while (inserted === 0) await new Promise((resolve) => setImmediate(resolve))
      let answered = false
      const reading = app.inject({ url: `/items/${inserted}` }).then((response) => {
        answered = true
        return response
      })
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
      assert.equal(answered, false, 'the read waits while the transaction is open')
      release()
      assert.equal(await writer, 'rolled back')
      assert.equal((await reading).statusCode, 404)
    })

    test('a read answers while a stream is open on the connection', async (t) => {
      const database = await seeded(t, sqlite)
      const app = await itemsApp(t, database)
      await app.inject({ url: '/items/1' }) // the connection is open and the statement prepared
      await readWhileStreaming(app, database.db.selectFrom('items').select('name').orderBy('id'))
    })

    test('a read waits for a stream of its very statement instead of failing with "busy"', async (t) => {
      const database = await seeded(t, sqlite)
      const app = await itemsApp(t, database)
      assert.equal((await app.inject({ url: '/items/1' })).statusCode, 200)
      // The SQL text of GET, so the cached statement that GET runs is the one the stream iterates.
      await readWhileStreaming(
        app,
        database.db.selectFrom('items').select(['id', 'name', 'description', 'price', 'in_stock']).where('id', '=', 1)
      )
    })

    test('a write with RETURNING runs beside an open stream, as better-sqlite3 allows, and the stream goes on', async (t) => {
      const database = await seeded(t, sqlite)
      const app = await itemsApp(t, database)
      assert.equal(
        (await app.inject({ method: 'POST', url: '/items', payload: { name: 'Warm', price: 1 } })).statusCode,
        201
      )
      const stream = database.db.selectFrom('items').select('name').orderBy('id').stream()[Symbol.asyncIterator]()
      assert.equal((await stream.next()).value?.name, 'Bread')
      const response = await app.inject({ method: 'PATCH', url: '/items/2', payload: { price: 7 } })
      assert.equal(response.statusCode, 200)
      assert.equal(response.json().price, 7)
      assert.equal((await stream.next()).value?.name, 'Milk')
      await stream.return?.()
      const stored = await database.db.selectFrom('items').select('price').where('id', '=', 2).executeTakeFirstOrThrow()
      assert.equal(stored.price, 7)
    })

    test('a DELETE beside an open stream waits for it (better-sqlite3 runs no write without RETURNING beside one), then deletes', async (t) => {
      const database = await seeded(t, sqlite)
      const app = await itemsApp(t, database)
      // the DELETE is compiled and prepared
      assert.equal((await app.inject({ method: 'DELETE', url: '/items/404' })).statusCode, 404)
      const stream = database.db.selectFrom('items').select('name').orderBy('id').stream()[Symbol.asyncIterator]()
      assert.equal((await stream.next()).value?.name, 'Bread')
      let answered = false
      const deleting = app.inject({ method: 'DELETE', url: '/items/2' }).then((response) => {
        answered = true
        return response
      })
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
      assert.equal(answered, false, 'the DELETE waits while the stream is open')
      assert.equal((await stream.next()).value?.name, 'Milk')
      await stream.return?.()
      const response = await deleting
      assert.equal(response.statusCode, 204)
      const names = (await database.db.selectFrom('items').select('name').execute()).map((row) => row.name)
      assert.deepEqual(names, ['Bread'])
    })

    test("a write never joins another request's transaction: it waits, and outlives that transaction's rollback", async (t) => {
      const database = await seeded(t, sqlite)
      const app = await itemsApp(t, database)
      assert.equal(
        (await app.inject({ method: 'POST', url: '/items', payload: { name: 'Warm', price: 1 } })).statusCode,
        201
      )
      let release: () => void = () => {}
      const hold = new Promise<void>((resolve) => {
        release = resolve
      })
      let started = false
      const other = database.db
        .transaction()
        .execute(async (trx) => {
          await trx.insertInto('items').values({ name: 'Uncommitted' }).execute()
          started = true
          await hold
          throw new Error('roll back')
        })
        .catch(() => 'rolled back')
      // eslint-disable-next-line no-unmodified-loop-condition -- set by a callback while this loop awaits
      while (!started) await new Promise((resolve) => setImmediate(resolve))
      const writing = app.inject({ method: 'POST', url: '/items', payload: { name: 'Kept', price: 3 } })
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
      release()
      assert.equal(await other, 'rolled back')
      const response = await writing
      assert.equal(response.statusCode, 201)
      const names = (await database.db.selectFrom('items').select('name').orderBy('id').execute()).map(
        (row) => row.name
      )
      assert.deepEqual(names, ['Bread', 'Milk', 'Warm', 'Kept'])
    })

    // SQLite checkpoints its WAL (wal_autocheckpoint) only when a write statement runs to its end: a write
    // read with `.get()` and reset after its first row committed without it, and the WAL grew without bound.
    for (const setup of ['createDatabase', 'own Kysely, wrapped'] as const) {
      test(`writes with RETURNING keep the WAL checkpointed (${setup})`, async (t) => {
        const dir = mkdtempSync(join(tmpdir(), 'fastify-viewsets-wal-'))
        t.after(() => rmSync(dir, { recursive: true, force: true }))
        const file = join(dir, 'wal.db')
        const db = setup === 'createDatabase' ? createDatabase<any>(`sqlite:${file}`) : ownWalKysely(file)
        t.after(() => db.destroy())
        await createItemsTable({ db, dialect: 'sqlite', url: `sqlite:${file}`, queries: [] })
        await sql`pragma wal_autocheckpoint = 8`.execute(db)
        const app = await itemsApp(t, { db })
        const pageSize = Number((await sql<{ page_size: number }>`pragma page_size`.execute(db)).rows[0]?.page_size)
        // One kind of write at a time: a kind that never checkpoints cannot hide behind another that does.
        const walFrames = () => statSync(`${file}-wal`).size / (pageSize + 24)
        const ids: number[] = []
        for (let i = 0; i < 60; i++) {
          const created = await app.inject({ method: 'POST', url: '/items', payload: { name: `Item ${i}`, price: i } })
          assert.equal(created.statusCode, 201)
          ids.push(created.json().id as number)
        }
        const afterPost = walFrames()
        for (const [i, id] of ids.entries()) {
          const patched = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { price: i + 1 } })
          assert.equal(patched.statusCode, 200)
          assert.equal(patched.json().price, i + 1)
        }
        const afterPatch = walFrames()
        for (const id of ids) { assert.equal((await app.inject({ method: 'DELETE', url: `/items/${id}` })).statusCode, 204) }
        const frames = walFrames()
        // 60 commits of at least one page each per kind: without checkpoints the WAL holds them all.
        t.diagnostic(
          `WAL frames after 60 POST: ${Math.round(afterPost)}, 60 PATCH: ${Math.round(afterPatch)}, 60 DELETE: ${Math.round(frames)}`
        )
        for (const [kind, count] of [
          ['POST', afterPost],
          ['PATCH', afterPatch],
          ['DELETE', frames],
        ] as const) {
          assert.ok(
            count < 40,
            `the WAL holds ${Math.round(count)} frames after the ${kind} requests: it was not checkpointed`
          )
        }
        assert.equal((await app.inject({ url: '/items' })).json().length, 0)
      })
    }

    test('reads fail like Kysely once the database is destroyed', async (t) => {
      const db = createDatabase<any>('sqlite::memory:')
      await sql`create table items (id integer primary key, name text not null, description text, price real not null default 0, in_stock boolean not null default 1)`.execute(
        db
      )
      const app = await itemsApp(t, { db })
      assert.equal((await app.inject({ url: '/items/1' })).statusCode, 404)
      await db.destroy()
      assert.equal((await app.inject({ url: '/items/1' })).statusCode, 500)
    })
  })
}

const postgres = dialects.find((dialect) => dialect.name === 'postgres')
if (postgres !== undefined) {
  describe('named statements on PostgreSQL', () => {
    const prepared = async (db: Kysely<any>) =>
      (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)).rows.map(
        (row) => row.statement
      )

    test('the SQL compiled at registration is prepared once per connection', async (t) => {
      const database = await seeded(t, postgres, { poolSize: 1 })
      const app = await itemsApp(t, database)
      assert.equal((await app.inject({ url: '/items/1' })).statusCode, 200)
      assert.equal((await app.inject({ url: '/items/2' })).statusCode, 200)
      assert.equal((await app.inject({ url: '/items?limit=1' })).statusCode, 200)
      // LIST shapes compiled on first use are prepared too.
      assert.equal((await app.inject({ url: '/items?order_by=-price' })).statusCode, 200)
      assert.equal((await app.inject({ url: '/items?order_by=-price&limit=1' })).statusCode, 200)
      const statements = await prepared(database.db)
      assert.equal(statements.filter((text) => /order by "price" desc/.test(text)).length, 1, statements.join('\n'))
      assert.equal(
        statements.filter((text) => /from "items" where "id" = \$1/.test(text)).length,
        1,
        statements.join('\n')
      )
      assert.equal(
        statements.filter((text) => /from "items" order by "id" limit \$1 offset \$2/.test(text)).length,
        1,
        statements.join('\n')
      )
    })

    test("a transaction's compiled statements are prepared too, and its raw SQL never", async (t) => {
      const database = await seeded(t, postgres, { poolSize: 1 })
      const { db } = database
      // Shapes that run nowhere else: only the transaction's connection could have prepared them.
      const insert = (round: number) =>
        db.insertInto('items').values({ name: `in-trx-${round}`, price: 4 }).returning(['id', 'name']).compile()
      const update = (round: number) =>
        db.updateTable('items').set({ price: 5 }).where('name', '=', `in-trx-${round}`).returning('price').compile()
      for (let round = 0; round < 2; round++) {
        await db.transaction().execute(async (trx) => {
          await trx.executeQuery(insert(round))
          assert.deepEqual((await trx.executeQuery(update(round))).rows, [{ price: 5 }])
          await sql`select ${round} + 40 as "viewset_raw_probe"`.execute(trx)
        })
      }
      const statements = await prepared(db)
      assert.equal(statements.filter((text) => text === insert(0).sql).length, 1, statements.join('\n'))
      assert.equal(statements.filter((text) => text === update(0).sql).length, 1, statements.join('\n'))
      assert.equal(statements.some((text) => text.includes('viewset_raw_probe')), false, statements.join('\n'))
      const rows = await db.selectFrom('items').select(['price']).where('name', 'like', 'in-trx-%').execute()
      assert.deepEqual(rows, [{ price: 5 }, { price: 5 }])
    })

    test('reads fail like Kysely once the database is destroyed', async (t) => {
      const database = await seeded(t, postgres)
      const db = createDatabase<any>(database.url)
      const app = await itemsApp(t, { db })
      assert.equal((await app.inject({ url: '/items/1' })).statusCode, 200)
      await db.destroy()
      const response = await app.inject({ url: '/items/1' })
      assert.equal(response.statusCode >= 500, true, String(response.statusCode))
    })

    test('2,000 distinct LIST shapes leave at most 256 named statements on the connection', async (t) => {
      const database = await seeded(t, postgres, { poolSize: 1 })
      const app = testApp(t)
      await app.register(
        createViewset({
          db: database.db,
          table: 'items',
          schema: Item,
          orderingFields: ['name', 'price', 'description'],
          filterFields: {
            name: ['eq', 'ne', 'contains'],
            price: ['gt', 'gte', 'lt', 'lte'],
            in_stock: ['eq'],
            description: ['contains', 'isnull'],
          },
        }),
        { prefix: '/items' }
      )
      const names = ['id', 'name', 'description', 'price', 'in_stock']
      const fieldSets = Array.from({ length: 31 }, (_, mask) =>
        names.filter((_, bit) => ((mask + 1) & (1 << bit)) !== 0).join(',')
      )
      const orders = ['name', '-name', 'price', '-price', 'description', '-description']
      const filters = [
        '',
        'name=Bread',
        'name__ne=x',
        'name__contains=e',
        'price__gt=0',
        'price__gte=0',
        'price__lt=9',
        'price__lte=9',
        'in_stock=true',
        'description__contains=x',
        'description__isnull=true',
        'description__isnull=false',
      ]
      let sent = 0
      for (const fields of fieldSets) {
        for (const order of orders) {
          for (const filter of filters) {
            if (sent === 2000) break
            const response = await app.inject({
              url: `/items?fields=${fields}&order_by=${order}${filter === '' ? '' : `&${filter}`}`,
            })
            assert.equal(response.statusCode, 200, response.body)
            sent++
          }
        }
      }
      assert.equal(sent, 2000)
      const statements = await prepared(database.db)
      assert.ok(statements.length <= 256, `${statements.length} named statements on the connection`)
      // Still served after the evictions, and the evicted statements are deallocated, not leaked.
      assert.equal((await app.inject({ url: '/items?fields=name&order_by=name' })).statusCode, 200)
      assert.ok((await prepared(database.db)).length <= 256)
    })

    test('`__in` lists of any length share a few statements (padded to powers of two)', async (t) => {
      const database = await seeded(t, postgres, { poolSize: 1 })
      const app = testApp(t)
      await app.register(
        createViewset({ db: database.db, table: 'items', schema: Item, filterFields: { id: ['in'] } }),
        { prefix: '/items' }
      )
      for (let count = 1; count <= 100; count++) {
        const ids = Array.from({ length: count }, (_, index) => index + 1)
        const response = await app.inject({ url: `/items?id__in=${ids.join(',')}` })
        assert.equal(response.statusCode, 200)
        assert.deepEqual(
          response.json().map((item: { id: number }) => item.id),
          [1, 2].slice(0, count)
        )
      }
      const lists = (await prepared(database.db)).filter((text) => / in \(/.test(text) && /limit/.test(text))
      assert.equal(lists.length, 8, lists.join('\n')) // 1, 2, 4, 8, 16, 32, 64 and 128 values
    })

    test('preparedStatements: false sends every statement unnamed', async (t) => {
      const database = await seeded(t, postgres)
      const db = createDatabase<any>(database.url, { poolSize: 1, preparedStatements: false })
      t.after(() => db.destroy())
      const app = await itemsApp(t, { db })
      assert.equal((await app.inject({ url: '/items/1' })).statusCode, 200)
      assert.deepEqual(await prepared(db), [])
    })
  })
}
