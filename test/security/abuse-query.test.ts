import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { createViewset, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

// One request must cost a bounded amount: search terms, offsets (issue 12). Relation fan-out is in
// abuse-relations.test.ts.

type ItemOptions = Partial<ViewsetOptions<ItemsDB, 'items', typeof Item>>

const searching: ItemOptions = {
  searchFields: ['name', 'description'],
  filterFields: { name: ['contains'], description: ['contains'], id: ['gt'] },
  orderingFields: ['name'],
}

async function itemsApp (t: TestContext, dialect: TestDialect, options: ItemOptions = searching, rows = 3) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  if (rows > 0) {
    await database.db
      .insertInto('items')
      .values(Array.from({ length: rows }, (_, i) => ({ name: `item ${String(i + 1).padStart(3, '0')}` })))
      .execute()
  }
  const app = testApp(t)
  await app.register(viewsetDocs, { title: 'Abuse' })
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, ...options }), { prefix: '/items' })
  await app.ready()
  return { app, ...database }
}

/** Asserts a 400 FST_VIEWSET_VALIDATION that names `parameter` in its detail and its field errors. */
function assertNamesParameter (
  response: { statusCode: number; body: string; headers: Record<string, unknown>; json: () => any },
  parameter: string
) {
  assert.equal(response.statusCode, 400, response.body)
  const body = problemOf(response)
  assert.equal(body.code, 'FST_VIEWSET_VALIDATION')
  assert.match(body.detail, new RegExp(`\\b${parameter} must`))
  assert.deepEqual(
    body.errors?.map((error) => [error.in, error.field]),
    [['querystring', parameter]]
  )
  return body
}

/** The `rel` → URL map of a Link header. */
function links (header: unknown): Record<string, string> {
  if (header === undefined) return {}
  return Object.fromEntries(
    String(header)
      .split(', ')
      .map((link) => {
        const match = /^<([^>]*)>; rel="(\w+)"$/.exec(link)
        assert.ok(match, `malformed link ${link}`)
        return [match[2], match[1]]
      })
  )
}

for (const dialect of dialects) {
  describe(`bounded search terms on ${dialect.name}`, () => {
    test('a search of 101 characters is a 400 naming search; 100 characters is a 200', async (t) => {
      const { app, queries } = await itemsApp(t, dialect)
      queries.length = 0
      const long = await app.inject(`/items?search=${'a'.repeat(101)}`)
      const body = assertNamesParameter(long, 'search')
      assert.match(body.detail, /more than 100 characters/)
      assert.deepEqual(queries, [], 'refused before any statement')
      const fits = await app.inject(`/items?search=${'a'.repeat(100)}`)
      assert.equal(fits.statusCode, 200)
      assert.deepEqual(fits.json(), [])
      assert.equal((await app.inject(`/items?search=${'M'.repeat(3)}`)).statusCode, 200)
    })

    test('the length counts characters (code points) after URL decoding, not bytes or UTF-16 units', async (t) => {
      const { app } = await itemsApp(t, dialect)
      // 100 × "é" is 200 bytes of UTF-8 (600 characters percent-encoded); 100 × 🍞 is 200 UTF-16 units.
      for (const char of ['é', '🍞', '%', '_']) {
        const fits = await app.inject(`/items?search=${encodeURIComponent(char.repeat(100))}`)
        assert.equal(fits.statusCode, 200, `${char}: ${fits.body}`)
        assert.deepEqual(fits.json(), [])
        assertNamesParameter(await app.inject(`/items?search=${encodeURIComponent(char.repeat(101))}`), 'search')
      }
    })

    test('a __contains value past maxSearchLength is a 400 naming the parameter', async (t) => {
      const { app } = await itemsApp(t, dialect)
      assertNamesParameter(await app.inject(`/items?name__contains=${'b'.repeat(101)}`), 'name__contains')
      assertNamesParameter(
        await app.inject(`/items?description__contains=${encodeURIComponent('ü'.repeat(101))}`),
        'description__contains'
      )
      const fits = await app.inject(`/items?name__contains=${'item'.repeat(25)}`)
      assert.equal(fits.statusCode, 200)
      const found = await app.inject('/items?name__contains=ITEM%20002')
      assert.deepEqual(
        found.json().map((row: { name: string }) => row.name),
        ['item 002']
      )
    })

    test('maxSearchLength sets the bound, and OpenAPI documents it as maxLength', async (t) => {
      const { app } = await itemsApp(t, dialect, { ...searching, maxSearchLength: 8 })
      assert.equal((await app.inject('/items?search=item%20001')).statusCode, 200)
      assert.deepEqual(
        (await app.inject('/items?search=item%20001')).json().map((row: { name: string }) => row.name),
        ['item 001']
      )
      assertNamesParameter(await app.inject('/items?search=item%200001'), 'search')
      assertNamesParameter(await app.inject('/items?name__contains=item%200001'), 'name__contains')
      const document = (await app.inject('/docs/json')).json()
      const parameters: Array<{ name: string; schema: { maxLength?: number } }> =
        document.paths['/items'].get.parameters
      const maxLength = (name: string) => parameters.find((parameter) => parameter.name === name)?.schema.maxLength
      assert.equal(maxLength('search'), 8)
      assert.equal(maxLength('name__contains'), 8)
      assert.equal(maxLength('description__contains'), 8)
    })

    test('a listQuery that redefines search without maxLength keeps the bound', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      await database.db.insertInto('items').values({ name: '🍞 bread' }).execute()
      class Items extends Viewset<ItemsDB, 'items', typeof Item> {
        static override listQuery = Type.Object({ search: Type.Optional(Type.String({ description: 'Find items' })) })
      }
      const app = testApp(t)
      await app.register(
        new Items({ db: database.db, table: 'items', schema: Item, ...searching, maxSearchLength: 3 }).register(),
        { prefix: '/items' }
      )
      assertNamesParameter(await app.inject(`/items?search=${encodeURIComponent('🍞 br')}`), 'search')
      const fits = await app.inject(`/items?search=${encodeURIComponent('🍞 b')}`)
      assert.deepEqual(
        fits.json().map((row: { name: string }) => row.name),
        ['🍞 bread']
      )
    })

    test('matching is unchanged: case-insensitive, with %, _, ! and \\ matching themselves', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const names = ['50% off', '50 percent', 'snake_case', 'snakeXcase', 'wow!', 'back\\slash', 'BREAD roll']
      await database.db
        .insertInto('items')
        .values(names.map((name) => ({ name })))
        .execute()
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item, ...searching }), {
        prefix: '/items',
      })
      const found = async (url: string) => (await app.inject(url)).json().map((row: { name: string }) => row.name)
      assert.deepEqual(await found('/items?search=50%25'), ['50% off'])
      assert.deepEqual(await found('/items?search=e_c'), ['snake_case'])
      assert.deepEqual(await found('/items?search=w!'), ['wow!'])
      assert.deepEqual(await found('/items?search=k%5Cs'), ['back\\slash'])
      assert.deepEqual(await found('/items?name__contains=bread%20R'), ['BREAD roll'])
      // The same statement runs again with other values (a prepared statement's generic plan on PostgreSQL).
      for (let i = 0; i < 7; i++) {
        assert.deepEqual(
          await found(`/items?search=${i % 2 === 0 ? 'SNAKE_' : '50%25'}`),
          i % 2 === 0 ? ['snake_case'] : ['50% off']
        )
      }
    })

    if (dialect.name === 'postgres') {
      test('on PostgreSQL the pattern is folded once per statement, not per row, even under a generic plan', async (t) => {
        const { app, db, queries } = await itemsApp(t, dialect)
        queries.length = 0
        assert.equal((await app.inject('/items?search=Item&name__contains=0')).statusCode, 200)
        const statement = queries.find((text) => / like /i.test(text))
        assert.ok(statement !== undefined, queries.join('\n'))
        const plan = await db.connection().execute(async (connection) => {
          await sql.raw('set plan_cache_mode = force_generic_plan').execute(connection)
          await sql.raw(`prepare viewset_search as ${statement}`).execute(connection)
          const { rows } = await sql
            .raw<{ 'QUERY PLAN': string }>(
              "explain (verbose, costs off) execute viewset_search('%item%', '%item%', '%0%', 20, 0)"
            )
            .execute(connection)
          await sql.raw('deallocate viewset_search').execute(connection)
          await sql.raw('reset plan_cache_mode').execute(connection)
          return rows.map((row) => row['QUERY PLAN'])
        })
        const filter = plan.filter((line) => line.trim().startsWith('Filter:')).join('\n')
        assert.match(filter, /lower\(/, plan.join('\n'))
        // Per row: only the column is lower-cased; the pattern is an InitPlan's result.
        assert.doesNotMatch(filter, /lower\(\$|like_escape|~~\*/, plan.join('\n'))
        assert.ok(
          plan.some((line) => line.includes('InitPlan')),
          plan.join('\n')
        )
      })
    }
  })

  describe(`bounded offsets on ${dialect.name}`, () => {
    test('an offset past maxOffset (default 10,000) is a 400 naming offset that points to cursor pagination', async (t) => {
      const { app, queries } = await itemsApp(t, dialect)
      queries.length = 0
      for (const url of [
        '/items?offset=10001',
        '/items?offset=10001&search=item',
        `/items?offset=${Number.MAX_SAFE_INTEGER}`,
      ]) {
        const body = assertNamesParameter(await app.inject(url), 'offset')
        assert.match(body.detail, /at most 10000/)
        assert.match(body.detail, /cursor pagination/)
      }
      assert.deepEqual(queries, [], 'refused before any statement')
      const last = await app.inject('/items?offset=10000')
      assert.equal(last.statusCode, 200)
      assert.deepEqual(last.json(), [])
    })

    test('maxOffset sets the bound, and Link omits next when its offset would pass it', async (t) => {
      const { app } = await itemsApp(t, dialect, { ...searching, maxOffset: 20 }, 40)
      const first = await app.inject('/items?limit=10&offset=10')
      assert.equal(first.statusCode, 200)
      assert.deepEqual(links(first.headers.link), {
        next: '/items?limit=10&offset=20',
        prev: '/items?limit=10&offset=0',
      })
      const lastAllowed = await app.inject('/items?limit=10&offset=20&search=item')
      assert.equal(lastAllowed.statusCode, 200)
      assert.equal(lastAllowed.json().length, 10)
      assert.deepEqual(
        links(lastAllowed.headers.link),
        { prev: '/items?search=item&limit=10&offset=10' },
        'rows remain, but offset 30 would pass maxOffset'
      )
      const odd = await app.inject('/items?limit=15&offset=5')
      assert.deepEqual(links(odd.headers.link), { next: '/items?limit=15&offset=20', prev: '/items?limit=15&offset=0' })
      const past = assertNamesParameter(await app.inject('/items?limit=10&offset=21'), 'offset')
      assert.match(past.detail, /at most 20/)
    })

    test('maxOffset and maxSearchLength must be positive integers', async (t) => {
      const { db } = await testDatabase(t, dialect)
      for (const value of [0, -1, 1.5, '100', Number.POSITIVE_INFINITY]) {
        assert.throws(() => createViewset({ db, table: 'items', schema: Item, maxOffset: value as never }), {
          code: 'FST_VIEWSET_INVALID_OPTION',
          message: /maxOffset: expected a positive integer/,
        })
        assert.throws(() => createViewset({ db, table: 'items', schema: Item, maxSearchLength: value as never }), {
          code: 'FST_VIEWSET_INVALID_OPTION',
          message: /maxSearchLength: expected a positive integer/,
        })
      }
    })
  })
}
