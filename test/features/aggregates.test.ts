import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset, viewsetDocs, viewsetIndexReport } from 'fastify-viewsets'
import type { FastifyRequest } from 'fastify'
import type { Kysely, KyselyPlugin } from 'kysely'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

// GET {prefix}/aggregate (issue 37 item 6): groups of the rows LIST would serve (same filters, search and rules),
// counted, summed and averaged, exact for DECIMAL and BIGINT fields served as strings, on every dialect. Two tenants
// (alice and bob, their bearer tokens) own their books and authors: a tenant never sees another's sums.

const Author = Type.Object({ id: Type.Integer(), name: Type.String(), owner: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  status: Type.String(),
  price: Type.String(),
  stock: Type.Integer(),
  big: Type.String(),
  owner: Type.String(),
  author_id: Type.Union([Type.Integer(), Type.Null()]),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
})

const past53 = '9007199254740993' // 2^53 + 1: a float would read 2^53

const tenantRule = (eb: any, { token }: { token: { sub?: string } | null }) => eb('owner', '=', token?.sub ?? '')
const authenticate = (request: FastifyRequest) => ({ sub: String(request.headers.authorization).slice(7) })
const alice = { authorization: 'Bearer alice' }
const bob = { authorization: 'Bearer bob' }

async function booksApp (
  t: TestContext,
  dialect: TestDialect,
  options: Record<string, unknown> = {},
  authorOptions: Record<string, unknown> = {},
  viewsetDb: (db: Kysely<any>) => Kysely<any> = (db) => db
) {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema.createTable('authors').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull())
    .addColumn('owner', 'varchar(64)', (column) => column.notNull()).execute()
  await db.schema.createTable('books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('status', 'varchar(16)', (column) => column.notNull())
    .addColumn('price', 'decimal(12, 2)', (column) => column.notNull())
    .addColumn('stock', 'integer', (column) => column.notNull())
    .addColumn('big', 'bigint', (column) => column.notNull())
    .addColumn('owner', 'varchar(64)', (column) => column.notNull())
    .addColumn('author_id', 'integer').execute()
  await db.insertInto('authors').values([
    { name: 'Le Guin', owner: 'alice' }, { name: 'Banks', owner: 'alice' }, { name: 'Le Guin', owner: 'bob' },
  ]).execute()
  await db.insertInto('books').values([
    { title: 'a1', status: 'open', price: '0.10', stock: 1, big: past53, owner: 'alice', author_id: 1 },
    { title: 'a2', status: 'open', price: '0.10', stock: 2, big: '1', owner: 'alice', author_id: 1 },
    { title: 'a3', status: 'open', price: '0.10', stock: 4, big: '2', owner: 'alice', author_id: 1 },
    { title: 'a4', status: 'sold', price: '5.25', stock: 0, big: '3', owner: 'alice', author_id: 2 },
    { title: 'a5', status: 'sold', price: '1.00', stock: 7, big: '4', owner: 'alice', author_id: null },
    { title: 'b1', status: 'open', price: '100.00', stock: 50, big: '1000', owner: 'bob', author_id: 3 },
    { title: 'b2', status: 'open', price: '200.00', stock: 60, big: '2000', owner: 'bob', author_id: 1 },
  ]).execute()
  const app = testApp(t)
  await app.register(viewsetDocs)
  const common = { db: viewsetDb(db), scope: tenantRule, authenticate, protectedMethods: ['LIST', 'GET'] }
  await app.register(createViewset({ ...common, table: 'authors', schema: Author, methods: ['LIST', 'GET'], ...authorOptions } as any),
    { prefix: '/authors' })
  await app.register(createViewset({
    ...common,
    table: 'books',
    schema: Book,
    methods: ['LIST', 'GET', 'AGGREGATE'],
    relatedConfig: { selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } } },
    filterFields: { status: ['eq'], stock: ['gte'] },
    searchFields: ['title'],
    groupByFields: ['status', 'author.name', 'author_id'],
    aggregateFields: { price: ['sum', 'avg', 'min', 'max'], stock: ['sum', 'avg'], big: ['sum', 'max'] },
    ...options,
  } as any), { prefix: '/books' })
  await app.ready()
  return { app, ...database }
}

/** Close to `expected`: SQLite keeps DECIMAL as a binary float (README "Aggregates"). */
function decimal (dialect: TestDialect, actual: unknown, expected: string): void {
  assert.equal(typeof actual, 'string')
  if (dialect.name === 'sqlite') assert.ok(Math.abs(Number(actual) - Number(expected)) < 1e-9, String(actual))
  else assert.equal(actual, expected)
}

for (const dialect of dialects) {
  describe(`aggregates on ${dialect.name}`, () => {
    test('groups by a field and a to-one path: count, sum, avg, min, max; NULL relation is "author": null',
      async (t) => {
        const { app, db } = await booksApp(t, dialect)
        const before = await db.selectFrom('books').selectAll().orderBy('id').execute()
        const response = await app.inject({
          url: '/books/aggregate?group_by=status,author.name&count=true&sum=price,stock&avg=price,stock&max=big',
          headers: alice,
        })
        assert.equal(response.statusCode, 200, response.body)
        assert.match(String(response.headers['content-type']), /^application\/json/)
        const groups = response.json()
        assert.equal(groups.length, 3)
        const [open, soldBanks, soldNone] = groups
        assert.deepEqual(Object.keys(open), ['status', 'author', 'count', 'sum', 'avg', 'max'])
        assert.deepEqual(open.author, { name: 'Le Guin' })
        assert.equal(open.status, 'open')
        assert.equal(open.count, 3)
        decimal(dialect, open.sum.price, '0.30')
        assert.equal(open.sum.stock, 7)
        assert.equal(open.avg.price, 0.1)
        assert.equal(open.avg.stock, 2.333333)
        assert.equal(open.max.big, past53)
        assert.deepEqual(soldBanks.author, { name: 'Banks' })
        assert.equal(soldBanks.count, 1)
        assert.deepEqual(soldNone.author, null)
        assert.equal(soldNone.status, 'sold')
        assert.equal(soldNone.count, 1)
        assert.deepEqual(await db.selectFrom('books').selectAll().orderBy('id').execute(), before, 'nothing changed')
      })

    test('a tenant never sees another tenant\'s rows or related rows', async (t) => {
      const { app } = await booksApp(t, dialect)
      const all = await app.inject({ url: '/books/aggregate?count=true&sum=stock,big', headers: alice })
      assert.equal(all.statusCode, 200, all.body)
      assert.deepEqual(all.json(), [{ count: 5, sum: { stock: 14, big: '9007199254741003' } }])
      const theirs = await app.inject({ url: '/books/aggregate?count=true&sum=stock,big', headers: bob })
      assert.deepEqual(theirs.json(), [{ count: 2, sum: { stock: 110, big: '3000' } }])
      // bob's book b2 points at alice's author 1: bob's rule on authors hides it, so that group's author is null.
      const byAuthor = await app.inject({ url: '/books/aggregate?group_by=author.name&count=true', headers: bob })
      assert.deepEqual(byAuthor.json(), [{ author: { name: 'Le Guin' }, count: 1 }, { author: null, count: 1 }])
      const nobody = await app.inject({ url: '/books/aggregate?count=true&sum=stock' })
      assert.equal(nobody.statusCode, 401, 'AGGREGATE is protected with its base, LIST')
      const stranger = await app.inject({ url: '/books/aggregate?count=true&sum=stock', headers: { authorization: 'Bearer eve' } })
      assert.deepEqual(stranger.json(), [{ count: 0, sum: { stock: null } }])
    })

    test('filters and search apply as on LIST', async (t) => {
      const { app } = await booksApp(t, dialect)
      const open = await app.inject({ url: '/books/aggregate?status=open&stock__gte=2&count=true&sum=stock', headers: alice })
      assert.deepEqual(open.json(), [{ count: 2, sum: { stock: 6 } }])
      const searched = await app.inject({ url: '/books/aggregate?search=a4&count=true&min=price', headers: alice })
      assert.equal(searched.json()[0].count, 1)
      decimal(dialect, searched.json()[0].min.price, '5.25')
    })

    test('orders by metrics and group keys, ties by the group keys; pages by offset with Link', async (t) => {
      const { app } = await booksApp(t, dialect)
      const bySum = await app.inject({ url: '/books/aggregate?group_by=author_id&order_by=-sum.stock&count=true', headers: alice })
      assert.deepEqual(bySum.json().map((group: any) => group.author_id), [1, null, 2])
      const byCount = await app.inject({ url: '/books/aggregate?group_by=status,author_id&order_by=-count,-status', headers: alice })
      assert.equal(byCount.statusCode, 400, 'order_by alone asks for nothing')
      const tied = await app.inject({ url: '/books/aggregate?group_by=author_id&order_by=count&count=true', headers: alice })
      assert.deepEqual(tied.json().map((group: any) => group.author_id), [2, null, 1].sort((a, b) => {
        // count 1 ties (author 2, no author) ordered by the key ascending, NULL last.
        const rank = (v: number | null) => (v === 1 ? 3 : v === null ? 2 : 1)
        return rank(a) - rank(b)
      }))
      const page = await app.inject({ url: '/books/aggregate?group_by=author_id&count=true&limit=1&offset=1', headers: alice })
      assert.equal(page.statusCode, 200)
      assert.deepEqual(page.json(), [{ author_id: 2, count: 1 }])
      assert.match(String(page.headers.link), /offset=2>; rel="next"/)
      assert.match(String(page.headers.link), /offset=0>; rel="prev"/)
    })

    test('pages by cursor when the viewset does', async (t) => {
      const { app } = await booksApp(t, dialect, { pagination: 'cursor' })
      const seen: unknown[] = []
      let url: string | undefined = '/books/aggregate?group_by=author_id&order_by=-count&count=true&limit=1'
      while (url !== undefined) {
        const response: { statusCode: number; body: string; json: () => any; headers: Record<string, unknown> } =
          await app.inject({ url, headers: alice })
        assert.equal(response.statusCode, 200, response.body)
        seen.push(...response.json())
        const next = /<([^>]+)>; rel="next"/.exec(String(response.headers.link ?? ''))
        url = next?.[1]
      }
      assert.deepEqual(seen, [{ author_id: 1, count: 3 }, { author_id: 2, count: 1 }, { author_id: null, count: 1 }])
      const other = await app.inject({ url: '/books/aggregate?group_by=author_id&order_by=count&count=true&limit=1', headers: alice })
      const cursor = /cursor=([^&>]+)/.exec(String(other.headers.link))?.[1]
      const mixed = await app.inject({
        url: `/books/aggregate?group_by=author_id&order_by=-count&count=true&limit=1&cursor=${cursor}`, headers: alice,
      })
      assert.equal(mixed.statusCode, 400)
      assert.equal(problemOf(mixed).code, 'FST_VIEWSET_INVALID_CURSOR')
    })

    test('each shape is compiled once; later requests bind their own values, rules and pages', async (t) => {
      // Counts the compiles of AGGREGATE statements: a plugin of the viewset's Kysely sees every compile.
      let compiles = 0
      const paged: boolean[] = []
      const spy: KyselyPlugin = {
        transformQuery: (args) => {
          const text = JSON.stringify(args.node)
          // A page of groups (it has a LIMIT; the grouped rows under a relation's page are a node of their own).
          if (text.includes('viewset_count') && 'limit' in args.node && args.node.limit !== undefined) {
            compiles++
            // A page of groups by columns is ordered and paged by the grouped SELECT itself, without a SELECT over it.
            paged.push(!text.includes('viewset_groups'))
          }
          return args.node
        },
        transformResult: async (args) => args.result,
      }
      const { app } = await booksApp(t, dialect, {}, {}, (db) => db.withPlugin(spy))
      const get = async (url: string, headers: Record<string, string>) => {
        const response = await app.inject({ url: `/books/aggregate?${url}`, headers })
        assert.equal(response.statusCode, 200, response.body)
        return response.json()
      }
      const byStatus = 'group_by=status&count=true&sum=stock'
      assert.deepEqual(await get(byStatus, alice), [{ status: 'open', count: 3, sum: { stock: 7 } },
        { status: 'sold', count: 2, sum: { stock: 7 } }])
      const once = compiles
      assert.equal(once, 1)
      // The same shape for bob (his rule's value) and at another offset: no compile.
      assert.deepEqual(await get(byStatus, bob), [{ status: 'open', count: 2, sum: { stock: 110 } }])
      assert.deepEqual(await get(`${byStatus}&offset=1`, alice), [{ status: 'sold', count: 2, sum: { stock: 7 } }])
      assert.equal(compiles, once, 'the rule value and the offset bind into the compiled statement')
      assert.deepEqual(await get('group_by=status&count=true&sum=stock&stock__gte=5', alice),
        [{ status: 'sold', count: 1, sum: { stock: 7 } }])
      const filtered = compiles
      assert.deepEqual(await get('group_by=status&count=true&sum=stock&stock__gte=1', bob),
        [{ status: 'open', count: 2, sum: { stock: 110 } }])
      assert.equal(compiles, filtered, 'a filter value binds into the compiled statement')
      // A group key through a relation under the related table's rules: alice's shape, then bob's values.
      const byAuthor = 'group_by=author.name&count=true'
      assert.deepEqual(await get(byAuthor, alice), [{ author: { name: 'Banks' }, count: 1 },
        { author: { name: 'Le Guin' }, count: 3 }, { author: null, count: 1 }])
      const related = compiles
      assert.deepEqual(await get(byAuthor, bob), [{ author: { name: 'Le Guin' }, count: 1 }, { author: null, count: 1 }])
      assert.equal(compiles, related, "bob's rule values bind into the statement alice's request compiled")
      assert.deepEqual(paged, [true, true, false], 'by columns in place; through a relation, over the grouped rows')
    })

    test('every mistake is a 400 before any SQL', async (t) => {
      const { app } = await booksApp(t, dialect)
      const bad = [
        '/books/aggregate',
        '/books/aggregate?group_by=status',
        '/books/aggregate?group_by=title&count=true',
        '/books/aggregate?group_by=status,status&count=true',
        '/books/aggregate?sum=title',
        '/books/aggregate?avg=big',
        '/books/aggregate?sum=price,price',
        '/books/aggregate?count=true&order_by=status',
        '/books/aggregate?count=true&order_by=sum.title',
        '/books/aggregate?count=true&fields=id',
        '/books/aggregate?count=true&title=a1',
        '/books/aggregate?count=true&limit=0',
      ]
      for (const url of bad) {
        const response = await app.inject({ url, headers: alice })
        assert.equal(response.statusCode, 400, `${url}: ${response.body}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION', url)
        assert.doesNotMatch(response.body, /select|syntax/i)
      }
    })

    test('a field the caller may not read is an unknown name in group_by, metrics and order_by', async (t) => {
      const fieldAccess = ({ token, method }: { token: { sub?: string } | null; method: string }) =>
        token?.sub === 'bob' && method === 'LIST' ? { hidden: ['price', 'status'] } : {}
      const { app } = await booksApp(t, dialect, { fieldAccess })
      for (const url of ['/books/aggregate?sum=price', '/books/aggregate?group_by=status&count=true',
        '/books/aggregate?count=true&order_by=sum.price', '/books/aggregate?count=true&status=open']) {
        const hidden = await app.inject({ url, headers: bob })
        assert.equal(hidden.statusCode, 400, `${url}: ${hidden.body}`)
        const shown = await app.inject({ url, headers: alice })
        assert.equal(shown.statusCode, 200, `${url}: ${shown.body}`)
      }
      const stock = await app.inject({ url: '/books/aggregate?sum=stock', headers: bob })
      assert.deepEqual(stock.json(), [{ sum: { stock: 110 } }])
    })

    test('a related table\'s field rule hides its field in a group_by path', async (t) => {
      const fieldAccess = ({ token }: { token: { sub?: string } | null }) => (token?.sub === 'bob' ? { hidden: ['name'] } : {})
      const { app } = await booksApp(t, dialect, {}, { fieldAccess })
      const hidden = await app.inject({ url: '/books/aggregate?group_by=author.name&count=true', headers: bob })
      assert.equal(hidden.statusCode, 400, hidden.body)
      assert.equal(problemOf(hidden).code, 'FST_VIEWSET_VALIDATION')
      const shown = await app.inject({ url: '/books/aggregate?group_by=author.name&count=true', headers: alice })
      assert.equal(shown.statusCode, 200, shown.body)
    })

    test('the static /aggregate wins over a string key "aggregate"', async (t) => {
      const { db } = await testDatabase(t, dialect)
      await db.schema.createTable('codes').addColumn('code', 'varchar(32)', (column) => column.primaryKey())
        .addColumn('label', 'varchar(32)', (column) => column.notNull()).execute()
      await db.insertInto('codes').values([{ code: 'aggregate', label: 'a' }, { code: 'x', label: 'b' }]).execute()
      const app = testApp(t)
      const Code = Type.Object({ code: Type.String(), label: Type.String() })
      await app.register(createViewset({ db, table: 'codes', schema: Code, primaryKey: 'code', methods: ['GET', 'AGGREGATE'] }),
        { prefix: '/codes' })
      assert.deepEqual((await app.inject('/codes/aggregate?count=true')).json(), [{ count: 2 }])
      assert.equal((await app.inject('/codes/aggregate')).statusCode, 400, 'the aggregate route, not the row')
      assert.deepEqual((await app.inject('/codes/x')).json(), { code: 'x', label: 'b' })
      const posted = await app.inject({ method: 'POST', url: '/codes/aggregate', payload: {} })
      assert.equal(posted.statusCode, 405, posted.body)
      assert.equal(posted.headers.allow, 'GET, HEAD, OPTIONS')
    })

    test('OpenAPI documents the route, its parameters and its groups', async (t) => {
      const { app } = await booksApp(t, dialect)
      const document = app.swagger() as any
      const operation = document.paths['/books/aggregate'].get
      assert.equal(operation.operationId, 'aggregateBooks')
      const parameters = operation.parameters.map((parameter: any) => parameter.name)
      for (const name of ['group_by', 'count', 'sum', 'avg', 'min', 'max', 'order_by', 'status', 'search', 'limit']) {
        assert.ok(parameters.includes(name), name)
      }
      assert.ok(!parameters.includes('fields'))
      const groups = operation.responses['200'].content['application/json'].schema
      assert.equal(groups.type, 'array')
      assert.deepEqual(Object.keys(groups.items.properties), ['status', 'author_id', 'author', 'count', 'sum', 'avg', 'min', 'max'])
      assert.ok(operation.responses['200'].headers.link)
    })

    test('the index report lists group keys no index serves', async (t) => {
      const { app } = await booksApp(t, dialect)
      const groups = viewsetIndexReport(app).filter((entry) => entry.use === 'group').map((entry) => entry.field)
      assert.deepEqual(groups, ['status', 'author.name', 'author_id'])
    })

    test('startup fails naming a wrong option', async (t) => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ aggregateFields: { title: ['sum'] } }, /aggregateFields.*"title" is not numeric/],
        [{ aggregateFields: { stock: ['median'] } }, /aggregateFields.*unknown function "median"/],
        [{ groupByFields: ['nope'] }, /groupByFields.*"nope" is not a scalar column/],
        [{ groupByFields: ['author.nope'] }, /groupByFields/],
        [{ methods: ['LIST'], protectedMethods: ['LIST'] }, /groupByFields.*methods does not list 'AGGREGATE'/],
      ]
      for (const [options, message] of cases) {
        await assert.rejects(booksApp(t, dialect, options), message)
      }
    })
  })
}
