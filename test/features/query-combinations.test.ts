// Issue 37 item 1: `?or=`, `?and=`, `?not.or=`, `?not.and=` groups of filter terms, on every dialect.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { createViewset } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'
import { tenantsApp } from '../helpers/tenants.js'

type ItemOptions = Partial<ViewsetOptions<ItemsDB, 'items', typeof Item>>

const options: ItemOptions = {
  orderingFields: ['name', 'price'],
  defaultOrder: 'name',
  filterFields: {
    name: ['eq', 'ne', 'in', 'startswith', 'contains'],
    price: ['eq', 'lt', 'gte', 'in', 'nin'],
    description: ['eq', 'isnull'],
    in_stock: ['eq'],
  },
}

const shop = [
  { name: 'bread', price: 2, description: 'fresh' },
  { name: 'brown bread', price: 3, description: null },
  { name: 'butter', price: 5, description: 'salted' },
  { name: 'cheese', price: 10, description: 'dark' },
  { name: 'milk', price: 1, description: null },
  { name: 'rye bread', price: 3, description: 'dark' },
  { name: 'salt, "fine" (a)', price: 4, description: 'x' },
]

type ItemsApp = TestDatabase & { app: ReturnType<typeof testApp> }

async function itemsApp (t: TestContext, dialect: TestDialect, extra: ItemOptions = {}): Promise<ItemsApp> {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  await database.db.insertInto('items').values(shop).execute()
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, ...options, ...extra }), {
    prefix: '/items',
  })
  await app.ready()
  return { app, ...database }
}

const names = (response: { json: () => any }): string[] => response.json().map((row: { name: string }) => row.name)
const titles = (response: { json: () => any }): string[] => response.json().map((row: { title: string }) => row.title)

/** The names stored: a read changes none. */
async function stored (database: TestDatabase): Promise<string[]> {
  const rows = await database.db.selectFrom('items').select('name').orderBy('id').execute()
  return rows.map((row) => row.name)
}

/** GET /items?<query> (the query given unencoded, each value URL-encoded here). */
async function list (app: ItemsApp['app'], query: Array<[string, string]>, headers: Record<string, string> = {}) {
  const search = query.map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`).join('&')
  return await app.inject({ url: `/items?${search}`, headers })
}

for (const dialect of dialects) {
  describe(`filter groups (${dialect.name})`, () => {
    test('or, and, nesting, not, quoted values and in lists', async (t) => {
      const database = await itemsApp(t, dialect)
      const { app } = database
      const cases: Array<[Array<[string, string]>, string[]]> = [
        [[['or', '(price__lt.2,name__contains.cheese)']], ['cheese', 'milk']],
        [[['or', '(price__lt.2,and(price__gte.3,name__startswith.b))']], ['brown bread', 'butter', 'milk']],
        [[['and', '(price__gte.3,not.name__startswith.b)']], ['cheese', 'rye bread', 'salt, "fine" (a)']],
        // A bare `field.value` is eq; `not.` of a comparison with NULL stays unknown: NULL descriptions never match.
        [[['and', '(not.description.dark)']], ['bread', 'butter', 'salt, "fine" (a)']],
        [[['not.or', '(description.dark,description__isnull.true)']], ['bread', 'butter', 'salt, "fine" (a)']],
        // brown bread: price 3 and a NULL description, so the and() is unknown, and so is its negation.
        [[['not.and', '(price__gte.3,description.dark)']], ['bread', 'butter', 'milk', 'salt, "fine" (a)']],
        [[['or', '(name."salt, \\"fine\\" (a)",name.milk)']], ['milk', 'salt, "fine" (a)']],
        [[['or', '(price__in.(1,10),name__in.(butter,"salt, \\"fine\\" (a)"))']],
          ['butter', 'cheese', 'milk', 'salt, "fine" (a)']],
        [[['and', '(price__nin.(1,2,3),not.price.10)']], ['butter', 'salt, "fine" (a)']],
        // Several groups (repeated keys too) and plain filters are ANDed.
        [[['or', '(price__lt.4,name.cheese)'], ['or', '(name__contains.bread,name.cheese)'], ['price__gte', '3']],
          ['brown bread', 'cheese', 'rye bread']],
        [[['or', '(or(and(name.milk)))']], ['milk']],
      ]
      for (const [query, expected] of cases) {
        const response = await list(app, query)
        assert.equal(response.statusCode, 200, `${JSON.stringify(query)}: ${response.body}`)
        assert.match(String(response.headers['content-type']), /^application\/json/)
        assert.deepEqual(names(response), expected, JSON.stringify(query))
      }
      assert.deepEqual(await stored(database), shop.map((row) => row.name))
    })

    test('count=true counts the same set, and cursors page through any combination', async (t) => {
      const database = await itemsApp(t, dialect, { pagination: 'cursor', alwaysCount: false })
      const { app } = database
      const group: Array<[string, string]> = [['or', '(price__gte.3,description__isnull.true)'], ['not.and', '(name.butter)']]
      const counted = await list(app, [...group, ['count', 'true'], ['limit', '2']])
      assert.equal(counted.statusCode, 200)
      assert.equal(counted.headers['x-total-count'], '5')
      const seen: string[] = []
      let url: string | undefined = `/items?${new URLSearchParams([...group, ['limit', '2'], ['order_by', '-price']]).toString()}`
      while (url !== undefined) {
        const page: Awaited<ReturnType<typeof list>> = await app.inject({ url })
        assert.equal(page.statusCode, 200, page.body)
        seen.push(...names(page))
        const next = /<([^>]+)>; rel="next"/.exec(String(page.headers.link ?? ''))?.[1]
        url = next === undefined ? undefined : next.slice(next.indexOf('/items'))
      }
      assert.deepEqual(seen, ['cheese', 'salt, "fine" (a)', 'brown bread', 'rye bread', 'milk'])
      assert.deepEqual(await stored(database), shop.map((row) => row.name))
    })

    test('every bound and mistake is a 400 naming the parameter or the term, and changes nothing', async (t) => {
      const database = await itemsApp(t, dialect)
      const { app } = database
      const terms = (count: number) => Array.from({ length: count }, (_, i) => `price.${i}`).join(',')
      const cases: Array<[Array<[string, string]>, string, RegExp]> = [
        [[['or', `(${terms(21)})`]], 'or', /more than 20 terms/],
        [[['or', `(${terms(12)})`], ['and', `(${terms(9)})`]], 'and', /more than 20 terms/],
        [[['or', '(or(and(or(name.a))))']], 'or', /at most 3 levels/],
        [[['or', '()']], 'or', /empty group/],
        [[['and', '(name.a,or())']], 'and', /empty group/],
        [[['or', '(name.a']], 'or', /expected "\)"/],
        [[['or', 'name.a']], 'or', /expected "\("/],
        [[['or', '(name.a)x']], 'or', /unexpected text/],
        [[['or', '(name."a)']], 'or', /no closing "/],
        [[['or', '(bogus.1)']], 'bogus', /not a filter/],
        [[['or', '(price__gt.1)']], 'price__gt', /not a filter/],
        [[['or', '(secret.x)']], 'secret', /not a filter/],
        [[['or', '(price__lt.abc)']], 'price__lt', /number/],
        [[['not.or', '(price__in.(1,x))']], 'price__in', /value 2/],
        [[['or', '(price__in.1)']], 'price__in', /list in parentheses/],
        [[['or', `(name__contains.${'a'.repeat(101)})`]], 'name__contains', /100 characters/],
        [[['or', `(price__in.(${terms(101).replaceAll('price.', '')}))`]], 'price__in', /at most 100/],
        [[['or', `(${'a'.repeat(4001)})`]], 'or', /4000/],
      ]
      for (const [query, field, message] of cases) {
        const response = await list(app, query)
        assert.equal(response.statusCode, 400, JSON.stringify(query))
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_VALIDATION', JSON.stringify(query))
        assert.equal(problem.errors?.[0]?.field, field, `${JSON.stringify(query)}: ${response.body}`)
        assert.match(problem.errors?.[0]?.message ?? '', message, `${JSON.stringify(query)}: ${response.body}`)
        assert.doesNotMatch(response.body, /select|from "items"|at .*\.ts/i)
      }
      // 20 terms, 3 levels: the bounds themselves are accepted.
      const twenty = await list(app, [['or', `(${terms(19)},or(and(name.milk)))`]])
      assert.equal(twenty.statusCode, 200, twenty.body)
      assert.deepEqual(names(twenty), shop.map((row) => row.name).sort())
      assert.deepEqual(await stored(database), shop.map((row) => row.name))
    })

    test('relation terms: EXISTS under the related rules, NOT EXISTS when negated, one row per path in and()', async (t) => {
      const tasks = {
        filterFields: { title: ['eq', 'contains'], 'tags.name': ['eq', 'startswith'], 'project.name': ['eq'] },
        defaultOrder: 'id',
      }
      const { app, alice, bob, db } = await tenantsApp(t, dialect, { tasks })
      const get = async (query: string, headers: Record<string, string>) => {
        const response = await app.inject({ url: `/tasks?${query}`, headers })
        assert.equal(response.statusCode, 200, `${query}: ${response.body}`)
        return titles(response)
      }
      // Every task carries alice's a-tag and bob's b-tag: each tenant sees only its own tag through the relation.
      assert.deepEqual(await get('or=(tags.name.a-tag)', alice), ['a-task-1', 'a-task-2', 'a-task-5'])
      assert.deepEqual(await get('or=(tags.name.b-tag,title.a-task-1)', alice), ['a-task-1'])
      assert.deepEqual(await get('not.or=(tags.name.b-tag)', alice), ['a-task-1', 'a-task-2', 'a-task-5'])
      assert.deepEqual(await get('and=(not.tags.name.a-tag)', alice), [])
      assert.deepEqual(await get('or=(tags.name.a-tag)', bob), [])
      // Task 2 is alice's in bob's project: through the relation alice never sees b-proj.
      assert.deepEqual(await get('or=(project.name.b-proj,title.a-task-5)', alice), ['a-task-5'])
      assert.deepEqual(await get('or=(project.name.a-proj,project.name.b-proj)', bob), ['b-task-3'])
      // Inside and(), terms on one path hold for the same tag; inside or(), each on its own.
      assert.deepEqual(await get('and=(tags.name__startswith.a,tags.name.b-tag)', alice), [])
      await db.insertInto('tags').values({ name: 'a-two', owner: 'alice' }).execute()
      await db.insertInto('task_tags').values({ task_id: 1, tag_id: 3 }).execute()
      assert.deepEqual(await get('and=(tags.name__startswith.a,tags.name.a-two)', alice), ['a-task-1'])
      assert.deepEqual(await get('and=(tags.name.a-tag,not.tags.name.a-two)', alice), ['a-task-2', 'a-task-5'])
      const counted = await app.inject({ url: '/tasks?or=(tags.name.a-tag)&count=true', headers: alice })
      assert.equal(counted.headers['x-total-count'], '3')
      const rows = await db.selectFrom('tasks').select('id').execute()
      assert.equal(rows.length, 5)
    })
  })
}
