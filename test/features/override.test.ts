import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { Kysely } from 'kysely'
import { build } from '../../examples/override/app.js'
import type { DB } from '../../examples/override/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf } from '../helpers/app.js'

async function exampleApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  const app = await build({ db: database.db as Kysely<DB> })
  t.after(() => app.close())
  return { app, ...database }
}

const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const names = (response: { json: () => any }): string[] => response.json().map((row: { name: string }) => row.name)

for (const dialect of dialects) {
  describe(`examples/override on ${dialect.name}`, () => {
    test('POST ignores id and created_at, strips the name and returns the row as stored', async (t) => {
      const { app } = await exampleApp(t, dialect)
      const response = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { id: 999, name: '  Bread  ', created_at: '2000-01-01T00:00:00.000Z' },
      })
      assert.equal(response.statusCode, 201)
      const body = response.json()
      assert.notEqual(body.id, 999)
      assert.equal(response.headers.location, `/items/${body.id}`)
      assert.deepEqual(Object.keys(body).sort(), ['created_at', 'description', 'id', 'name'])
      assert.equal(body.name, 'Bread')
      assert.equal(body.description, null, 'a field that was not sent takes its default')
      assert.match(body.created_at, iso, 'the database default, as an ISO string')
      assert.notEqual(body.created_at, '2000-01-01T00:00:00.000Z')
      assert.ok(Math.abs(Date.parse(body.created_at) - Date.now()) < 60_000, 'created now, in UTC')
      const stored = await app.inject(`/items/${body.id}`)
      assert.deepEqual(stored.json(), body)

      const blank = await app.inject({ method: 'POST', url: '/items', payload: { name: '   ' } })
      assert.equal(blank.statusCode, 400)
      assert.deepEqual(
        problemOf(blank).errors?.map((error) => error.field),
        ['name']
      )
      const long = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'x', description: 'd'.repeat(1025) },
      })
      assert.equal(long.statusCode, 400)
    })

    test('a duplicate name is a 409 that says so, and nothing is written', async (t) => {
      const { app } = await exampleApp(t, dialect)
      assert.equal((await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread' } })).statusCode, 201)
      const duplicate = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: ' Bread ', description: 'again' },
      })
      assert.equal(duplicate.statusCode, 409)
      const problem = problemOf(duplicate)
      assert.equal(problem.code, 'FST_VIEWSET_CONFLICT')
      assert.equal(problem.detail, 'an item with that name already exists')
      const other = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Butter' } })
      const renamed = await app.inject({
        method: 'PATCH',
        url: `/items/${other.json().id}`,
        payload: { name: 'Bread  ' },
      })
      assert.equal(renamed.statusCode, 409)
      assert.equal(problemOf(renamed).detail, 'an item with that name already exists')
      assert.deepEqual(names(await app.inject('/items?order_by=name')), ['Bread', 'Butter'])
      const stats = await app.inject('/items/stats')
      assert.equal(stats.json().count, 2)
    })

    test('LIST takes its own limit, offset, search and order_by, newest first by default', async (t) => {
      const { app } = await exampleApp(t, dialect)
      for (const name of ['apple', 'banana', 'cherry', 'date', 'elderberry', 'fig']) {
        assert.equal((await app.inject({ method: 'POST', url: '/items', payload: { name } })).statusCode, 201)
        // PostgreSQL keeps microseconds, which the answer's milliseconds hide: two rows of one millisecond are no tie
        // there, so the order below could not be told from the answers. SQLite and MariaDB tie at the millisecond.
        if (dialect.name === 'postgres') await new Promise((resolve) => setTimeout(resolve, 2))
      }
      // Lower-case names: string order is the same under every collation the suite meets.
      // Rows created in the same millisecond tie on created_at: the id breaks the tie.
      const all = (await app.inject('/items?order_by=created_at&limit=100')).json()
      assert.deepEqual(
        all.map((row: { name: string }) => row.name),
        ['apple', 'banana', 'cherry', 'date', 'elderberry', 'fig']
      )
      const newest = await app.inject('/items')
      assert.equal(newest.statusCode, 200)
      assert.equal(newest.json().length, 6)
      const byDate = [...all].sort((a, b) =>
        a.created_at === b.created_at ? a.id - b.id : a.created_at < b.created_at ? 1 : -1
      )
      assert.deepEqual(
        names(newest),
        byDate.map((row: { name: string }) => row.name),
        'default -created_at, then id'
      )
      assert.ok(newest.json().every((row: { created_at: string }) => iso.test(row.created_at)))

      assert.deepEqual(names(await app.inject('/items?search=ERR&order_by=name')), ['cherry', 'elderberry'])
      assert.deepEqual(names(await app.inject('/items?search=%25')), [], '% matches itself')
      assert.deepEqual(names(await app.inject('/items?order_by=-name&limit=2&offset=1')), ['elderberry', 'date'])
      const pages = []
      for (let offset = 0; offset < 6; offset += 4) {
        pages.push(...names(await app.inject(`/items?order_by=created_at&limit=4&offset=${offset}`)))
      }
      assert.deepEqual(
        pages,
        all.map((row: { name: string }) => row.name)
      )
    })

    test('its parameters are validated: bad values, an unsupported ordering and unknown parameters are 400s', async (t) => {
      const { app } = await exampleApp(t, dialect)
      for (const [url, field] of [
        ['/items?limit=abc', 'limit'],
        ['/items?limit=0', 'limit'],
        ['/items?limit=101', 'limit'],
        ['/items?offset=-1', 'offset'],
        ['/items?count=true', 'count'],
        ['/items?fields=id', 'fields'],
        ['/items?colour=red', 'colour'],
      ] as const) {
        const response = await app.inject(url)
        assert.equal(response.statusCode, 400, url)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
        assert.deepEqual(
          problem.errors?.map((error) => error.field),
          [field],
          url
        )
      }
      for (const orderBy of ['id', 'description', '-name,price', "name'; drop table items; --"]) {
        const response = await app.inject({ method: 'GET', url: '/items', query: { order_by: orderBy } })
        assert.equal(response.statusCode, 400, orderBy)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_UNSUPPORTED_ORDERING')
        assert.match(problem.detail, /^Unsupported ordering .*: the allowed fields are name, created_at/)
      }
      const hostile = await app.inject({ method: 'GET', url: '/items', query: { search: "'; drop table items; --" } })
      assert.equal(hostile.statusCode, 200)
      assert.deepEqual(hostile.json(), [])
      assert.equal((await app.inject('/items/stats')).statusCode, 200, 'the table is still there')
    })

    test('GET /items/stats sits next to the CRUD routes', async (t) => {
      const { app } = await exampleApp(t, dialect)
      assert.deepEqual((await app.inject('/items/stats')).json(), { count: 0, newest: null })
      const created = (await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread' } })).json()
      const stats = await app.inject('/items/stats')
      assert.equal(stats.statusCode, 200)
      assert.deepEqual(stats.json(), { count: 1, newest: created.created_at })
    })

    test("/docs shows the override's parameters with their defaults, and the custom route", async (t) => {
      const { app } = await exampleApp(t, dialect)
      const document = (await app.inject('/docs/json')).json()
      const list = document.paths['/items'].get
      const parameters = Object.fromEntries(
        list.parameters.map((parameter: { name: string; schema: Record<string, unknown> }) => [
          parameter.name,
          parameter.schema,
        ])
      )
      assert.deepEqual(Object.keys(parameters).sort(), ['limit', 'offset', 'order_by', 'search'])
      assert.equal(parameters.limit?.type, 'integer')
      assert.equal(parameters.limit?.default, 20)
      assert.equal(parameters.offset?.default, 0)
      assert.equal(parameters.order_by?.default, '-created_at')
      assert.equal(parameters.search?.type, 'string')
      assert.equal(document.paths['/items/stats'].get.operationId, 'itemStats')
      assert.ok(document.paths['/items'].post.responses['409'], 'POST documents its conflict answer')
      assert.equal(document.components.schemas.Items.properties.created_at.readOnly, true)
    })
  })
}
