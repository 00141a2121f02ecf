import type { EventEmitter } from 'node:events'
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import {
  DummyDriver, Kysely, MysqlDialect, PostgresDialect, sql, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler,
} from 'kysely'
import { createViewset, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

// Issue 36, items 5 and 7: `Prefer: count=estimated` (PostgREST's estimated count), `allowCount`, and a count=true
// LIST that holds one connection at a time.

type ItemOptions = Partial<ViewsetOptions<ItemsDB, 'items', typeof Item>>

const rowCount = 300

/** The items table with `rowCount` rows, its statistics fresh so that the planner's estimate is near the truth. */
async function seeded (t: TestContext, dialect: TestDialect): Promise<TestDatabase> {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  const rows = Array.from({ length: rowCount }, (_, i) => ({ name: `item ${i}`, price: i % 10 }))
  await database.db.insertInto('items').values(rows).execute()
  if (dialect.name === 'mysql') await sql`analyze table items`.execute(database.db)
  else await sql`analyze items`.execute(database.db)
  return database
}

async function itemsApp (t: TestContext, database: TestDatabase, options: ItemOptions = {}) {
  const app = testApp(t)
  const viewset = createViewset({ db: database.db, table: 'items', schema: Item, filterFields: { name: ['eq'] }, ...options })
  await app.register(viewset, { prefix: '/items' })
  await app.ready()
  return app
}

/** Whether the dialect answers estimates (SQLite has no planner statistics to read: it counts). */
function estimates (dialect: TestDialect): boolean {
  return dialect.name !== 'sqlite'
}

/** Asserts an estimated count where the dialect estimates, else the exact one, and returns the header's number. */
function assertCount (
  dialect: TestDialect,
  response: { statusCode: number; headers: Record<string, unknown> },
  exact: number
): void {
  assert.equal(response.statusCode, 200)
  const total = Number(response.headers['x-total-count'])
  if (estimates(dialect)) {
    assert.equal(response.headers['preference-applied'], 'count=estimated')
    assert.ok(Number.isSafeInteger(total) && total > 0, `an estimate is a positive integer, got ${String(total)}`)
  } else {
    assert.equal(response.headers['preference-applied'], 'count=exact')
    assert.equal(total, exact)
  }
}

for (const dialect of dialects) {
  describe(`counts [${dialect.name}]`, () => {
    test('Prefer: count=estimated answers the estimate above countEstimateThreshold, without count=true', async (t) => {
      const database = await seeded(t, dialect)
      const app = await itemsApp(t, database, { countEstimateThreshold: 10 })
      database.queries.length = 0
      const response = await app.inject({ url: '/items?limit=2', headers: { prefer: 'count=estimated' } })
      assertCount(dialect, response, rowCount)
      assert.equal(response.json().length, 2)
      // PostgreSQL and MySQL read the plan and never count; SQLite counts.
      const counted = database.queries.filter((text) => /count\(/i.test(text)).length
      assert.equal(counted, estimates(dialect) ? 0 : 1)
      assert.equal(database.queries.filter((text) => /^explain/i.test(text)).length, estimates(dialect) ? 1 : 0)
    })

    test('an estimate below the threshold is counted exactly, and says count=exact', async (t) => {
      const database = await seeded(t, dialect)
      const app = await itemsApp(t, database, { countEstimateThreshold: 10 })
      // The unique index on name: every planner expects one row, below 10.
      const one = await app.inject({ url: '/items?name=item%207', headers: { prefer: 'count=estimated' } })
      assert.equal(one.statusCode, 200)
      assert.equal(one.headers['x-total-count'], '1')
      assert.equal(one.headers['preference-applied'], 'count=exact')
      // The default threshold (100,000) is far above 300 rows: counted.
      const plain = await itemsApp(t, database)
      const all = await plain.inject({ url: '/items', headers: { prefer: 'count=estimated' } })
      assert.equal(all.headers['x-total-count'], String(rowCount))
      assert.equal(all.headers['preference-applied'], 'count=exact')
    })

    test('Prefer decides when count=true is sent as well; count=exact counts; other preferences are ignored', async (t) => {
      const database = await seeded(t, dialect)
      const app = await itemsApp(t, database, { countEstimateThreshold: 10 })
      assertCount(dialect, await app.inject({ url: '/items?count=true', headers: { prefer: 'count=estimated' } }), rowCount)
      const exact = await app.inject({ url: '/items?limit=1', headers: { prefer: 'return=minimal, count=exact' } })
      assert.equal(exact.headers['x-total-count'], String(rowCount))
      assert.equal(exact.headers['preference-applied'], 'count=exact')
      const plain = await app.inject('/items?count=true')
      assert.equal(plain.headers['x-total-count'], String(rowCount))
      assert.equal(plain.headers['preference-applied'], undefined, 'no Prefer, nothing to apply')
      const unknown = await app.inject({ url: '/items', headers: { prefer: 'count=planned' } })
      assert.equal(unknown.headers['x-total-count'], undefined)
      assert.equal(unknown.headers['preference-applied'], undefined)
    })

    test('a request a row rule restricts is counted, unless estimateWithRules', async (t) => {
      const database = await seeded(t, dialect)
      const scope = (eb: any) => eb('price', '<', 5)
      const ruled = await itemsApp(t, database, { countEstimateThreshold: 10, scope, withoutTokens: true })
      const counted = await ruled.inject({ url: '/items', headers: { prefer: 'count=estimated' } })
      assert.equal(counted.headers['x-total-count'], String(rowCount / 2))
      assert.equal(counted.headers['preference-applied'], 'count=exact')
      const estimated = await itemsApp(t, database, {
        countEstimateThreshold: 10, scope, estimateWithRules: true, withoutTokens: true,
      })
      assertCount(dialect, await estimated.inject({ url: '/items', headers: { prefer: 'count=estimated' } }), rowCount / 2)
    })

    test('cursor pagination counts the same way', async (t) => {
      const database = await seeded(t, dialect)
      const app = await itemsApp(t, database, { countEstimateThreshold: 10, pagination: 'cursor' })
      const response = await app.inject({ url: '/items?limit=5', headers: { prefer: 'count=estimated' } })
      assertCount(dialect, response, rowCount)
      assert.match(String(response.headers.link), /rel="next"/)
    })

    test('allowCount: false makes count=true and Prefer: count=… a 400 that names the option', async (t) => {
      const database = await seeded(t, dialect)
      const app = await itemsApp(t, database, { allowCount: false })
      const asked = await app.inject('/items?count=true')
      assert.equal(asked.statusCode, 400)
      const problem = problemOf(asked)
      assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
      assert.match(problem.detail, /count is not offered by this list \(allowCount: false\)/)
      for (const prefer of ['count=exact', 'count=estimated']) {
        const response = await app.inject({ url: '/items', headers: { prefer } })
        assert.equal(response.statusCode, 400, prefer)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_BAD_REQUEST')
        assert.match(problemOf(response).detail, /allowCount: false/)
      }
      const fine = await app.inject('/items?count=false&limit=1')
      assert.equal(fine.statusCode, 200)
      assert.equal(fine.headers['x-total-count'], undefined)
    })

    test("allowCount: 'estimated' answers count=true with an estimate, and refuses Prefer: count=exact", async (t) => {
      const database = await seeded(t, dialect)
      const app = await itemsApp(t, database, { allowCount: 'estimated', countEstimateThreshold: 10 })
      assertCount(dialect, await app.inject('/items?count=true'), rowCount)
      const exact = await app.inject({ url: '/items', headers: { prefer: 'count=exact' } })
      assert.equal(exact.statusCode, 400)
      assert.match(problemOf(exact).detail, /allowCount: 'estimated'/)
      const always = await itemsApp(t, database, { allowCount: 'estimated', alwaysCount: true, countEstimateThreshold: 10 })
      assertCount(dialect, await always.inject('/items'), rowCount)
    })

    test('OpenAPI documents the Prefer header and Preference-Applied', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(viewsetDocs)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item, allowCount: false }), {
        prefix: '/closed',
      })
      await app.ready()
      const document = app.swagger() as any
      const list = document.paths['/items'].get
      const prefer = list.parameters.find((parameter: any) => parameter.in === 'header' && parameter.name === 'prefer')
      assert.match(prefer.description, /count=estimated/)
      assert.ok(list.responses[200].headers['preference-applied'])
      const closed = document.paths['/closed'].get
      assert.equal(closed.parameters.find((parameter: any) => parameter.in === 'header'), undefined)
      assert.equal(closed.responses[200].headers['x-total-count'], undefined)
      assert.match(closed.parameters.find((parameter: any) => parameter.name === 'count').description, /allowCount/)
    })
  })
}

describe('count options are checked when the viewset is built', () => {
  // Never reached: phase 1 needs no database.
  const db = new Kysely<ItemsDB>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (kysely) => new SqliteIntrospector(kysely),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  })
  for (const [options, message] of [
    [{ allowCount: 'yes' }, /allowCount: expected true, false or 'estimated'/],
    [{ allowCount: false, alwaysCount: true }, /alwaysCount: cannot be true when allowCount is false/],
    [{ countEstimateThreshold: -1 }, /countEstimateThreshold: expected a non-negative integer/],
    [{ countEstimateThreshold: 1.5 }, /countEstimateThreshold: expected a non-negative integer/],
    [{ estimateWithRules: 'no' }, /estimateWithRules: expected a boolean/],
    [{ alwaysCount: 'yes' }, /alwaysCount: expected a boolean/],
  ] as const) {
    test(JSON.stringify(options), () => {
      assert.throws(() => new Viewset({ db, table: 'items', schema: Item, ...(options as object) }), (error: Error) => {
        assert.ok(error instanceof TypeError)
        assert.equal(Reflect.get(error, 'code'), 'FST_VIEWSET_INVALID_OPTION')
        assert.match(error.message, message)
        return true
      })
    })
  }
})

/** The most connections a pool had checked out at once, from its own events. */
function checkedOut (events: EventEmitter) {
  const seen = { now: 0, most: 0 }
  events.on('acquire', () => {
    seen.now++
    seen.most = Math.max(seen.most, seen.now)
  })
  events.on('release', () => {
    seen.now--
  })
  return seen
}

for (const dialect of dialects.filter(({ name }) => name !== 'sqlite')) {
  test(`[${dialect.name}] a count=true LIST holds at most one pool connection at a time`, async (t) => {
    const database = await seeded(t, dialect)
    let db: Kysely<ItemsDB>
    let seen: { most: number }
    if (dialect.name === 'postgres') {
      const { default: pg } = await import('pg')
      const pool = new pg.Pool({ connectionString: database.url, max: 5 })
      seen = checkedOut(pool)
      db = new Kysely<ItemsDB>({ dialect: new PostgresDialect({ pool }) })
    } else {
      const mysql = await import('mysql2')
      const pool = mysql.createPool({ uri: database.url, connectionLimit: 5 })
      seen = checkedOut(pool)
      db = new Kysely<ItemsDB>({ dialect: new MysqlDialect({ pool }) })
    }
    t.after(() => db.destroy())
    const app = testApp(t)
    await app.register(createViewset({ db, table: 'items', schema: Item, searchFields: ['name'] }), { prefix: '/items' })
    await app.ready()
    seen.most = 0
    for (const url of ['/items?count=true&limit=3', '/items?count=true&search=item&limit=3']) {
      const response = await app.inject(url)
      assert.equal(response.statusCode, 200)
      assert.equal(response.headers['x-total-count'], String(rowCount))
    }
    const estimated = await app.inject({ url: '/items?search=item', headers: { prefer: 'count=estimated' } })
    assert.equal(estimated.statusCode, 200)
    assert.equal(seen.most, 1, 'the page and the count ran one after the other')
  })
}
