import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { compileErrors, validate } from '@readme/openapi-parser'
import { Type } from '@sinclair/typebox'
import { createViewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase, timestamp } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

type ItemOptions = Partial<ViewsetOptions<ItemsDB, 'items', typeof Item>>

/** The options of the README's example, over the items fixture. */
const querying: ItemOptions = {
  searchFields: ['name', 'description'],
  orderingFields: ['name', 'price', 'description'],
  filterFields: {
    id: ['in'],
    name: ['eq', 'ne', 'contains', 'in'],
    price: ['gt', 'gte', 'lt', 'lte', 'in'],
    in_stock: ['eq'],
    description: ['contains', 'isnull'],
  },
}

interface Seed {
  name: string
  price?: number
  description?: string | null
  in_stock?: boolean
}

async function seed (database: TestDatabase, rows: Seed[]): Promise<void> {
  // better-sqlite3 binds no booleans; SQLite stores them as 1 and 0.
  const flag = (value: boolean) => (database.dialect === 'sqlite' ? Number(value) : value)
  await database.db
    .insertInto('items')
    .values(
      rows.map((row) => ({
        name: row.name,
        price: row.price ?? 0,
        description: row.description ?? null,
        in_stock: flag(row.in_stock ?? true),
      }))
    )
    .execute()
}

// Lower-case ASCII names: string order is the same under every collation the suite meets.
const shop: Seed[] = [
  { name: 'bread', price: 2, description: 'Fresh every morning' },
  { name: 'brown bread', price: 3, description: null },
  { name: 'butter', price: 5, description: 'salted', in_stock: false },
  { name: 'cheese', price: 10, description: 'Aged BREAD companion' },
  { name: 'milk', price: 1, description: null },
  { name: 'rye bread', price: 3, description: 'dark' },
]

async function itemsApp (t: TestContext, dialect: TestDialect, options: ItemOptions = querying, rows: Seed[] = shop) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  await seed(database, rows)
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item, ...options }), { prefix: '/items' })
  await app.ready()
  database.queries.length = 0
  return { app, ...database }
}

const names = (response: { json: () => any }): string[] => response.json().map((row: { name: string }) => row.name)

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
  describe(`querying LIST on ${dialect.name}`, () => {
    test('filters, search, ordering and pagination combine', async (t) => {
      const { app } = await itemsApp(t, dialect)
      const response = await app.inject(
        '/items?search=BREAD&price__gte=2&price__lt=10&in_stock=true&order_by=-price,name&limit=2&count=true'
      )
      assert.equal(response.statusCode, 200)
      assert.deepEqual(names(response), ['brown bread', 'rye bread'])
      assert.equal(response.headers['x-total-count'], '3')
      assert.deepEqual(links(response.headers.link), {
        next: '/items?search=BREAD&price__gte=2&price__lt=10&in_stock=true&order_by=-price,name&count=true&limit=2&offset=2',
      })
      const next = await app.inject(links(response.headers.link).next ?? '')
      assert.deepEqual(names(next), ['bread'])
      assert.equal(next.headers['x-total-count'], '3')
      assert.deepEqual(links(next.headers.link), {
        prev: '/items?search=BREAD&price__gte=2&price__lt=10&in_stock=true&order_by=-price,name&count=true&limit=2&offset=0',
      })

      // Every operator, one at a time.
      const cases: Array<[string, string[]]> = [
        ['name=milk', ['milk']],
        ['name__eq=milk', ['milk']],
        ['name__ne=milk', ['bread', 'brown bread', 'butter', 'cheese', 'rye bread']],
        ['name__in=milk,butter,nothing', ['butter', 'milk']],
        ['name__contains=READ', ['bread', 'brown bread', 'rye bread']],
        ['price__gt=3', ['butter', 'cheese']],
        ['price__gte=3', ['brown bread', 'butter', 'cheese', 'rye bread']],
        ['price__lt=3', ['bread', 'milk']],
        ['price__lte=2.5', ['bread', 'milk']],
        ['price__in=1,10', ['cheese', 'milk']],
        ['id__in=1,2', ['bread', 'brown bread']],
        ['in_stock=false', ['butter']],
        ['in_stock__eq=true&price__gte=5', ['cheese']],
        ['description__isnull=true', ['brown bread', 'milk']],
        ['description__isnull=false&description__contains=e', ['bread', 'butter', 'cheese']],
        ['search=bread&description__isnull=true', ['brown bread']],
        ['search=', ['bread', 'brown bread', 'butter', 'cheese', 'milk', 'rye bread']],
      ]
      for (const [query, expected] of cases) {
        const filtered = await app.inject(`/items?${query}&order_by=name`)
        assert.equal(filtered.statusCode, 200, `${query}: ${filtered.body}`)
        assert.deepEqual(names(filtered), expected, query)
      }
    })

    test('search is a case-insensitive substring match OR-ed across the search fields', async (t) => {
      const { app } = await itemsApp(t, dialect)
      assert.deepEqual(
        names(await app.inject('/items?search=bread&order_by=name')),
        ['bread', 'brown bread', 'cheese', 'rye bread'],
        'cheese matches by its description'
      )
      assert.deepEqual(names(await app.inject('/items?search=FRESH')), ['bread'])
      assert.deepEqual(names(await app.inject('/items?search=nothing-like-this')), [])
    })

    test('%, _, \\ and the escape character ! match themselves in search and contains', async (t) => {
      const { app } = await itemsApp(t, dialect, querying, [
        { name: 'a%b' },
        { name: 'a_b' },
        { name: 'a\\b' },
        { name: 'a!b' },
        { name: 'axb' },
        { name: 'ab' },
        { name: 'a!%b' },
      ])
      const cases: Array<[string, string[]]> = [
        ['%', ['a%b', 'a!%b']],
        ['_', ['a_b']],
        ['\\', ['a\\b']],
        ['!', ['a!b', 'a!%b']],
        ['!%', ['a!%b']],
        ['a%B', ['a%b']],
        ['a_b', ['a_b']],
        ['%%', []],
      ]
      for (const [term, expected] of cases) {
        for (const parameter of ['search', 'name__contains']) {
          const response = await app.inject({ method: 'GET', url: '/items', query: { [parameter]: term } })
          assert.equal(response.statusCode, 200)
          assert.deepEqual(names(response).sort(), [...expected].sort(), `${parameter}=${term}`)
        }
      }
    })

    test('pages sorted on repeated values neither overlap nor skip rows, in both directions', async (t) => {
      const rows: Seed[] = Array.from({ length: 23 }, (_, i) => ({
        name: `item${String(i).padStart(2, '0')}`,
        price: [3, 1, 2][i % 3] ?? 0,
        description: i % 4 === 0 ? null : i % 2 === 0 ? 'x' : 'y',
      }))
      const { app } = await itemsApp(t, dialect, querying, rows)
      const all = (await app.inject('/items?limit=100')).json() as Array<{
        id: number
        name: string
        price: number
        description: string | null
      }>
      assert.equal(all.length, 23)
      for (const orderBy of ['price', '-price', 'description,-price', '-description', 'price,-name']) {
        const seen: typeof all = []
        let url: string | undefined = `/items?order_by=${orderBy}&limit=4`
        let pages = 0
        while (url !== undefined) {
          const response: { statusCode: number; headers: Record<string, unknown>; json: () => any } =
            await app.inject(url)
          assert.equal(response.statusCode, 200)
          seen.push(...response.json())
          url = links(response.headers.link).next
          pages += 1
        }
        assert.equal(pages, 6, orderBy)
        assert.deepEqual(
          seen.map((row) => row.id).sort((a, b) => a - b),
          all.map((row) => row.id).sort((a, b) => a - b),
          `${orderBy}: every row exactly once`
        )
        // The expected order: the keys asked for, nulls after every value ascending, then the id.
        const keys = orderBy
          .split(',')
          .map((key) => ({
            field: key.replace(/^-/, '') as 'price' | 'description' | 'name',
            sign: key.startsWith('-') ? -1 : 1,
          }))
        const expected = [...all].sort((a, b) => {
          for (const { field, sign } of keys) {
            const [x, y] = [a[field], b[field]]
            if (x === y) continue
            if (x === null) return sign
            if (y === null) return -sign
            return (x < y ? -1 : 1) * sign
          }
          return a.id - b.id
        })
        assert.deepEqual(
          seen.map((row) => row.id),
          expected.map((row) => row.id),
          orderBy
        )
      }
    })

    test('defaultOrder applies when order_by is absent, and the primary key breaks its ties', async (t) => {
      const { app } = await itemsApp(t, dialect, { ...querying, defaultOrder: '-price' })
      assert.deepEqual(names(await app.inject('/items')), [
        'cheese',
        'butter',
        'brown bread',
        'rye bread',
        'bread',
        'milk',
      ])
      assert.deepEqual(names(await app.inject('/items?order_by=name&limit=2')), ['bread', 'brown bread'])
      const withoutOption = await itemsApp(t, dialect, { defaultOrder: 'name' })
      assert.deepEqual(
        names(await withoutOption.app.inject('/items?limit=3')),
        ['bread', 'brown bread', 'butter'],
        'defaultOrder needs no orderingFields'
      )
      const bad = await withoutOption.app.inject('/items?order_by=name')
      assert.equal(bad.statusCode, 400, 'order_by is not offered without orderingFields')
      assert.deepEqual(
        problemOf(bad).errors?.map((error) => error.field),
        ['order_by']
      )
    })

    test('every unknown parameter, field, operator or bad value is a 400 that names it', async (t) => {
      const { app, queries } = await itemsApp(t, dialect)
      const cases: Array<[string, string[]]> = [
        ['colour=red', ['colour']],
        ['secret=s3cr3t', ['secret']],
        ['secret__eq=s3cr3t', ['secret__eq']],
        ['name__gt=a', ['name__gt']],
        ['name__like=a', ['name__like']],
        ['price=3', ['price']],
        ['price__ne=3', ['price__ne']],
        ['in_stock__contains=t', ['in_stock__contains']],
        ['description=x', ['description']],
        [
          'price__gte=abc&in_stock=maybe&description__isnull=perhaps',
          ['description__isnull', 'in_stock', 'price__gte'],
        ],
        ['count=maybe', ['count']],
        ['limit=0', ['limit']],
        ['limit=abc', ['limit']],
        ['offset=-1', ['offset']],
        ['limit=1000', ['limit']],
        ['id__in=1,x', ['id__in']],
        ['id__in=', ['id__in']],
        ['id__in=1,,2', ['id__in']],
        ['price__in=1e400', ['price__in']],
        ['fields=id,secret', ['fields']],
        ['fields=', ['fields']],
        ['fields=name,,id', ['fields']],
        ['name=a&name=b', ['name']],
        ['search=a&search=b', ['search']],
      ]
      for (const [query, fields] of cases) {
        const response = await app.inject(`/items?${query}`)
        assert.equal(response.statusCode, 400, query)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_VALIDATION', query)
        assert.deepEqual(problem.errors?.map((error) => error.field).sort(), fields, query)
        for (const field of fields) assert.match(problem.detail, new RegExp(field), query)
      }
      const tooMany = await app.inject(`/items?id__in=${Array.from({ length: 101 }, (_, i) => i).join(',')}`)
      assert.equal(tooMany.statusCode, 400)
      assert.match(problemOf(tooMany).detail, /at most 100/)
      assert.deepEqual(queries, [], 'nothing reached the database')
    })

    test('an unsupported order_by is a 400 that says so and lists the allowed fields', async (t) => {
      const { app, queries } = await itemsApp(t, dialect)
      for (const orderBy of [
        'secret',
        'in_stock',
        '-id',
        'name,colour',
        'name desc',
        '+name',
        '--name',
        'name,',
        'name,-name',
        'name;drop table items',
      ]) {
        const response = await app.inject({ method: 'GET', url: '/items', query: { order_by: orderBy } })
        assert.equal(response.statusCode, 400, orderBy)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_UNSUPPORTED_ORDERING', orderBy)
        assert.match(
          problem.detail,
          /^Unsupported ordering .*: the allowed fields are name, price, description/,
          orderBy
        )
      }
      const empty = await app.inject('/items?order_by=')
      assert.equal(empty.statusCode, 400)
      assert.deepEqual(
        problemOf(empty).errors?.map((error) => error.field),
        ['order_by']
      )
      assert.deepEqual(queries, [])
    })

    test('SQL metacharacters in search, filter values and order_by change nothing', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const hostile = [
        "'",
        '"',
        "'; drop table items; --",
        "x' or '1'='1",
        '1) or (1=1',
        '`',
        '\\',
        '$1',
        '?',
        ':name',
        '/* */',
        '\u0000',
        '🍞',
        "é' --",
      ]
      for (const value of hostile) {
        for (const query of [
          { search: value },
          { name: value },
          { name__contains: value },
          { name__in: `${value},milk` },
          { description__contains: value },
        ]) {
          const response = await app.inject({ method: 'GET', url: '/items', query })
          assert.ok(
            response.statusCode === 200 || response.statusCode === 400,
            `${JSON.stringify(query)} → ${response.statusCode} ${response.body}`
          )
          // NUL: a 400 for search and contains everywhere; PostgreSQL cannot compare a string holding it either.
          if (response.statusCode === 400) {
            assert.ok(
              value === '\u0000' &&
                ['FST_VIEWSET_VALIDATION', 'FST_VIEWSET_INVALID_VALUE'].includes(problemOf(response).code),
              `${JSON.stringify(query)} → ${response.body}`
            )
          } else {
            assert.ok(
              names(response).every((name) => name === 'milk'),
              `${JSON.stringify(query)} matched ${response.body}`
            )
          }
        }
        for (const query of [{ order_by: value }, { price__gte: value }, { in_stock: value }, { fields: value }]) {
          const response = await app.inject({ method: 'GET', url: '/items', query })
          assert.equal(response.statusCode, 400, `${JSON.stringify(query)} → ${response.body}`)
        }
      }
      const count = await db
        .selectFrom('items')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
      assert.equal(Number(count.n), shop.length, 'the table is intact')
    })

    test('count=true adds X-Total-Count with the same filters in one extra query, and only then', async (t) => {
      const { app, queries } = await itemsApp(t, dialect)
      const counted = await app.inject('/items?search=bread&in_stock=true&limit=1&count=true')
      assert.equal(counted.statusCode, 200)
      assert.equal(counted.headers['x-total-count'], '4')
      assert.equal(counted.json().length, 1)
      assert.equal(queries.length, 2)
      assert.equal(queries.filter((text) => /count\(/i.test(text)).length, 1)

      queries.length = 0
      const none = await app.inject('/items?search=nothing&count=true')
      assert.equal(none.headers['x-total-count'], '0')

      queries.length = 0
      for (const url of [
        '/items?search=bread&in_stock=true&limit=1',
        '/items?count=false',
        '/items',
        '/items?limit=2&offset=2',
      ]) {
        const response = await app.inject(url)
        assert.equal(response.statusCode, 200)
        assert.equal(response.headers['x-total-count'], undefined, url)
      }
      assert.equal(queries.length, 4)
      assert.equal(queries.filter((text) => /count\(/i.test(text)).length, 0, 'no count query without count=true')
    })

    test('alwaysCount sends X-Total-Count on every page', async (t) => {
      const { app } = await itemsApp(t, dialect, { ...querying, alwaysCount: true })
      const response = await app.inject('/items?limit=2&price__gte=3')
      assert.equal(response.headers['x-total-count'], '4')
      assert.equal((await app.inject('/items')).headers['x-total-count'], String(shop.length))
    })

    test('Link has next and prev pages that keep the other parameters', async (t) => {
      const rows = Array.from({ length: 7 }, (_, i) => ({ name: `n${i}`, price: i }))
      const { app } = await itemsApp(t, dialect, querying, rows)
      const first = await app.inject('/items?limit=3')
      assert.deepEqual(links(first.headers.link), { next: '/items?limit=3&offset=3' }, 'no prev on the first page')
      const middle = await app.inject('/items?offset=3&price__gte=0&limit=3&search=n')
      assert.deepEqual(links(middle.headers.link), {
        next: '/items?price__gte=0&search=n&limit=3&offset=6',
        prev: '/items?price__gte=0&search=n&limit=3&offset=0',
      })
      const last = await app.inject('/items?limit=3&offset=6')
      assert.equal(last.json().length, 1)
      assert.deepEqual(links(last.headers.link), { prev: '/items?limit=3&offset=3' }, 'no next after a short page')
      const exact = await app.inject('/items?limit=7&count=true')
      assert.equal(exact.json().length, 7)
      assert.equal(exact.headers.link, undefined, 'with a count, no next at the end even on a full page')
      const full = await app.inject('/items?limit=7')
      assert.deepEqual(
        links(full.headers.link),
        { next: '/items?limit=7&offset=7' },
        'without a count a full page may have a next one'
      )
      const defaulted = await app.inject('/items?offset=4')
      assert.deepEqual(
        links(defaulted.headers.link),
        { prev: '/items?limit=20&offset=0' },
        'the default limit is spelled out'
      )
      const partial = await app.inject('/items?limit=3&offset=1')
      assert.equal(links(partial.headers.link).prev, '/items?limit=3&offset=0')
      const encoded = await app.inject('/items?search=a%26b%20c&limit=1&offset=1')
      assert.equal(
        links(encoded.headers.link).prev,
        '/items?search=a%26b%20c&limit=1&offset=0',
        'parameters stay encoded as sent'
      )
      const unicode = await app.inject({
        method: 'GET',
        url: '/items',
        query: { search: 'é<>"', limit: '1', offset: '1' },
      })
      assert.equal(unicode.statusCode, 200)
      assert.equal(links(unicode.headers.link).prev, '/items?search=%C3%A9%3C%3E%22&limit=1&offset=0')
      // Sent unescaped (as a raw HTTP client may): escaped in the links, pagination still replaced.
      const raw = await app.inject('/items?offset=1&search=n"<&limit=1')
      assert.equal(raw.statusCode, 200)
      assert.equal(links(raw.headers.link).prev, '/items?search=n%22%3C&limit=1&offset=0')
    })

    test('fields returns only the fields asked for, through a schema serializer', async (t) => {
      const { app, queries } = await itemsApp(t, dialect)
      const response = await app.inject('/items?fields=name,id&order_by=name&limit=2')
      assert.equal(response.statusCode, 200)
      assert.match(String(response.headers['content-type']), /^application\/json/)
      const body = response.json()
      assert.deepEqual(body, [
        { id: body[0].id, name: 'bread' },
        { id: body[1].id, name: 'brown bread' },
      ])
      assert.match(queries.at(-1) ?? '', /^select ["`]id["`], ["`]name["`] from/, 'only those columns are read')
      assert.equal(response.headers.link, '</items?fields=name,id&order_by=name&limit=2&offset=2>; rel="next"')

      const one = await app.inject('/items?fields=description&description__isnull=true&order_by=name')
      assert.deepEqual(one.json(), [{ description: null }, { description: null }])
      const price = await app.inject('/items?fields=price,in_stock,price&name=butter')
      assert.deepEqual(price.json(), [{ price: 5, in_stock: false }])
      const error = await app.inject('/items?fields=id,nope')
      assert.match(problemOf(error).detail, /unknown field "nope".*allowed: id, name, description, price, in_stock/)
      // Many field sets: the serializer cache is bounded and stays correct.
      const all = ['id', 'name', 'description', 'price', 'in_stock']
      for (let mask = 1; mask < 32; mask += 1) {
        const chosen = all.filter((_, bit) => (mask >> bit) & 1)
        const rows = (await app.inject(`/items?fields=${chosen.join(',')}&limit=1`)).json()
        assert.deepEqual(Object.keys(rows[0]).sort(), [...chosen].sort())
      }
    })

    test('a request with only limit and offset reads the precompiled page statement', async (t) => {
      const { app, queries } = await itemsApp(t, dialect)
      const response = await app.inject('/items?limit=2&offset=1')
      assert.deepEqual(names(response), ['brown bread', 'butter'])
      assert.deepEqual(links(response.headers.link), {
        next: '/items?limit=2&offset=3',
        prev: '/items?limit=2&offset=0',
      })
      assert.equal(queries.length, 1)
      assert.match(queries[0] ?? '', /order by ["`]id["`] limit/, 'the statement compiled at registration')
    })

    test('the statement of a query shape is reused with new values', async (t) => {
      const { app, queries } = await itemsApp(t, dialect)
      assert.deepEqual(names(await app.inject('/items?name__in=milk,bread&order_by=-name')), ['milk', 'bread'])
      assert.deepEqual(names(await app.inject('/items?name__in=cheese,butter&order_by=-name')), ['cheese', 'butter'])
      assert.deepEqual(names(await app.inject('/items?name__in=cheese&order_by=-name')), ['cheese'])
      assert.deepEqual(names(await app.inject('/items?in_stock=false')), ['butter'])
      assert.deepEqual(names(await app.inject('/items?in_stock=true&name__in=butter,milk')), ['milk'])
      assert.equal(queries.length, 5)
    })

    test('the query parameters are documented in OpenAPI with their types and allowed values', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(viewsetDocs)
      const Status = Type.Object({
        ...Item.properties,
        status: Type.Optional(Type.Union([Type.Literal('draft'), Type.Literal('published')])),
      })
      // NOT NULL: the field does not allow null (a nullable column fails startup).
      await database.db.schema
        .alterTable('items')
        .addColumn('status', 'varchar(16)', (column) => column.notNull().defaultTo('draft'))
        .execute()
      await app.register(
        createViewset({
          db: database.db,
          table: 'items',
          schema: Status,
          ...querying,
          filterFields: { ...querying.filterFields, status: ['eq', 'in'] },
        } as never),
        { prefix: '/items' }
      )
      const document = (await app.inject('/docs/json')).json()
      const result = await validate(structuredClone(document))
      assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
      const parameters = Object.fromEntries(
        document.paths['/items'].get.parameters
          // The one header LIST reads is Prefer (count=…, test/features/counts.test.ts).
          .filter((parameter: { in: string; name: string }) => parameter.in !== 'header' || parameter.name !== 'prefer')
          .map((parameter: { name: string; in: string; schema: Record<string, unknown>; description?: string }) => {
            assert.equal(parameter.in, 'query')
            return [parameter.name, parameter]
          })
      )
      assert.deepEqual(Object.keys(parameters).sort(), [
        'and',
        'count',
        'description__contains',
        'description__isnull',
        'fields',
        'id__in',
        'in_stock',
        'in_stock__eq',
        'limit',
        'name',
        'name__contains',
        'name__eq',
        'name__in',
        'name__ne',
        'not.and',
        'not.or',
        'offset',
        'or',
        'order_by',
        'price__gt',
        'price__gte',
        'price__in',
        'price__lt',
        'price__lte',
        'search',
        'status',
        'status__eq',
        'status__in',
      ])
      assert.equal(parameters.price__gte.schema.type, 'number')
      assert.equal(parameters.in_stock.schema.type, 'boolean')
      // The groups (issue 37): a pattern over the filter parameters, which admits what the server takes.
      const group = new RegExp(parameters.or.schema.pattern, 'u')
      assert.match('(price__gte.1.5,and(name.x,not.status.draft))', group)
      assert.doesNotMatch('(price__gte.abc)', group)
      assert.doesNotMatch('(secret.x)', group)
      assert.deepEqual(parameters['not.and'].schema.type, ['string', 'array'])
      assert.equal(parameters.description__isnull.schema.type, 'boolean')
      assert.equal(parameters.id__in.schema.type, 'string')
      assert.deepEqual(parameters.status.schema, { type: 'string', enum: ['draft', 'published'] })
      assert.match(parameters.status__in.description, /Allowed values: draft, published/)
      assert.match(JSON.stringify(parameters.order_by), /Allowed fields: name, price, description/)
      assert.match(JSON.stringify(parameters.fields), /Allowed: id, name, description, price, in_stock, status/)
      assert.match(JSON.stringify(parameters.search), /name or description/)
      const headers = document.paths['/items'].get.responses['200'].headers
      assert.equal(headers.link.schema.type, 'string')
      assert.equal(headers['x-total-count'].schema.type, 'integer')

      const bad = await app.inject('/items?status=archived')
      assert.equal(bad.statusCode, 400)
      await database.db
        .insertInto('items')
        .values([
          { name: 'a', status: 'draft' },
          { name: 'b', status: 'published' },
        ] as never)
        .execute()
      assert.deepEqual(names(await app.inject('/items?status=published')), ['b'])
      assert.deepEqual(names(await app.inject('/items?status__in=published,draft')), ['a', 'b'])
      const badIn = await app.inject('/items?status__in=draft,archived')
      assert.equal(badIn.statusCode, 400)
      assert.match(problemOf(badIn).detail, /status__in value 2 \("archived"\)/)
    })

    test('bad query options fail at registration with a message that names the mistake', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [
          { searchFields: ['nope'] },
          /searchFields: "nope" is not a string column of the schema; searchable fields: name, description/,
        ],
        [{ searchFields: ['price'] }, /searchFields: "price" is not a string column/],
        [{ searchFields: 'name' }, /searchFields: expected a non-empty array/],
        [{ searchFields: ['name', 'name'] }, /searchFields: "name" is listed twice/],
        [{ orderingFields: ['secret'] }, /orderingFields: "secret" is not a sortable column of the schema/],
        [{ orderingFields: [] }, /orderingFields: expected a non-empty array/],
        [{ defaultOrder: '-nope' }, /defaultOrder: "-nope" is not a sortable column/],
        [{ defaultOrder: 'name,,id' }, /defaultOrder: "" is not a sortable column/],
        [{ defaultOrder: '' }, /defaultOrder: expected a string/],
        [{ defaultOrder: 3 }, /defaultOrder: expected a string/],
        [
          { filterFields: { nope: ['eq'] } },
          /filterFields: "nope" is not a filterable column of the schema; scalar columns: id, name, description, price, in_stock/,
        ],
        [{ filterFields: { secret: ['eq'] } }, /filterFields: "secret" is not a filterable column/],
        [
          { filterFields: { name: ['like'] } },
          /filterFields: "name": unknown operator "like"; operators: eq, ne, gt, gte, lt, lte, in, nin, contains, startswith, endswith, isnull/,
        ],
        [
          { filterFields: { price: ['contains'] } },
          /filterFields: "price": operator "contains" does not apply to a number field/,
        ],
        [
          { filterFields: { in_stock: ['gt'] } },
          /filterFields: "in_stock": operator "gt" does not apply to a boolean field/,
        ],
        [{ filterFields: { name: [] } }, /filterFields: "name": expected a non-empty array of operators/],
        [{ filterFields: { name: ['eq', 'eq'] } }, /filterFields: "name": operator "eq" is listed twice/],
        [{ filterFields: ['name'] }, /filterFields: expected an object/],
        [{ alwaysCount: 'yes' }, /alwaysCount: expected a boolean/],
      ]
      for (const [options, message] of cases) {
        const app = testApp(t)
        await assert.rejects(
          async () => {
            await app.register(createViewset({ db: database.db, table: 'items', schema: Item, ...options } as never), {
              prefix: '/items',
            })
            await app.ready()
          },
          { code: 'FST_VIEWSET_INVALID_OPTION', message },
          JSON.stringify(options)
        )
      }
    })

    test('date-time filters compare instants, whatever offset the value is written with', async (t) => {
      const database = await testDatabase(t, dialect)
      const [idType, id] = autoIncrement(dialect.name)
      const [atType] = timestamp(dialect.name)
      await database.db.schema
        .createTable('events')
        .addColumn('id', idType as 'integer', id)
        .addColumn('name', 'varchar(20)', (column) => column.notNull())
        .addColumn('at', atType as 'text', (column) => column.notNull())
        .execute()
      const Event = Type.Object({
        id: Type.Optional(Type.Integer({ readOnly: true })),
        name: Type.String(),
        at: Type.String({ format: 'date-time' }),
      })
      const app = testApp(t)
      await app.register(
        createViewset({
          db: database.db,
          table: 'events',
          schema: Event,
          orderingFields: ['at'],
          filterFields: { at: ['eq', 'gte', 'lt', 'in'] },
        } as never),
        { prefix: '/events' }
      )
      for (const [name, at] of [
        ['a', '2026-01-01T00:00:00.000Z'],
        ['b', '2026-01-01T12:00:00.000Z'],
        ['c', '2026-01-02T00:00:00.000Z'],
      ]) {
        assert.equal((await app.inject({ method: 'POST', url: '/events', payload: { name, at } })).statusCode, 201)
      }
      const cases: Array<[Record<string, string>, string[]]> = [
        [{ at__gte: '2026-01-01T14:00:00+02:00' }, ['b', 'c']],
        [{ at__lt: '2026-01-01T12:00:00Z' }, ['a']],
        [{ at: '2026-01-02T01:00:00+01:00' }, ['c']],
        [{ at__in: '2026-01-01T00:00:00Z,2026-01-02T00:00:00.000Z' }, ['a', 'c']],
      ]
      for (const [query, expected] of cases) {
        const response = await app.inject({ method: 'GET', url: '/events', query: { ...query, order_by: 'at' } })
        assert.equal(response.statusCode, 200, response.body)
        assert.deepEqual(names(response), expected, JSON.stringify(query))
      }
      const selected = await app.inject('/events?fields=at,name&at__gte=2026-01-02T00:00:00Z')
      assert.deepEqual(
        selected.json(),
        [{ name: 'c', at: '2026-01-02T00:00:00.000Z' }],
        "dates serialize as ISO strings through the field set's serializer"
      )
      for (const query of [
        { at__gte: 'yesterday' },
        { at__gte: '2026-01-01' },
        { at__in: '2026-01-01T00:00:00Z,soon' },
      ]) {
        const response = await app.inject({ method: 'GET', url: '/events', query })
        assert.equal(response.statusCode, 400, JSON.stringify(query))
      }
    })

    test('a filter that would shadow another query parameter fails at registration', async (t) => {
      const database = await testDatabase(t, dialect)
      await database.db.schema
        .createTable('things')
        .addColumn('id', 'integer', (column) => column.primaryKey())
        .addColumn('search', 'varchar(20)', (column) => column.notNull())
        .execute()
      const Thing = Type.Object({ id: Type.Integer(), search: Type.String() })
      const app = testApp(t)
      await assert.rejects(
        async () => {
          await app.register(
            createViewset({
              db: database.db,
              table: 'things',
              schema: Thing,
              // No POST or BULK: the id is not AUTO_INCREMENT, so MySQL could not read a new row back.
              methods: ['LIST', 'GET'],
              searchFields: ['search'],
              filterFields: { search: ['eq'] },
            } as never),
            { prefix: '/things' }
          )
          await app.ready()
        },
        {
          code: 'FST_VIEWSET_INVALID_OPTION',
          message: /the filter parameter "search" collides with another query parameter/,
        }
      )
    })
  })
}
