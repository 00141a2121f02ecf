// Issue 37 item 4: filter, order and select by a path inside a JSON column (`meta->color`), declared in the options
// and typed by the column's schema, on every dialect: each scalar type, nested keys, missing keys and JSON null,
// OR groups, count, cursors, `?fields=`, two tenants, field rules, bad values, undeclared paths, startup errors.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import { createViewset, viewsetDocs, viewsetIndexReport } from 'fastify-viewsets'
import { costOf } from '../../lib/execution/cost-class.js'
import { sqliteDialect } from '../../lib/dialect/sqlite/sqlite-dialect.js'
import { postgresDialect } from '../../lib/dialect/postgres/postgres-dialect.js'
import { mysqlDialect } from '../../lib/dialect/mysql/mysql-dialect.js'
import { autoIncrement, compileOnlySqlite, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { secret } from '../helpers/tenants.js'

const Size = Type.Object({ width: Type.Optional(Type.Number()), unit: Type.Optional(Type.String()) })
const Meta = Type.Object({
  color: Type.Optional(Type.String()),
  rank: Type.Optional(Type.Number()),
  stock: Type.Optional(Type.Integer()),
  active: Type.Optional(Type.Boolean()),
  size: Type.Optional(Size),
  tags: Type.Optional(Type.Array(Type.String())),
})
const Gadget = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  owner: Type.Optional(Type.String({ readOnly: true })),
  meta: Type.Union([Meta, Type.Null()]),
})

type MetaValue = Record<string, unknown> | null
// alice owns 1, 2, 4 and 6; bob 3 and 5. Gadget 4 has none of the keys, gadget 5 a NULL document.
const seed: Array<{ name: string, owner: string, meta: MetaValue }> = [
  { name: 'a', owner: 'alice', meta: { color: 'red', rank: 2.5, stock: 3, active: true, size: { width: 10, unit: 'cm' } } },
  { name: 'b', owner: 'alice', meta: { color: 'blue', rank: 1, stock: 0, active: false, size: { width: 2.5 } } },
  { name: 'c', owner: 'bob', meta: { color: 'red', rank: 7, stock: 5, active: true, size: { width: 50, unit: 'cm' } } },
  { name: 'd', owner: 'alice', meta: {} },
  { name: 'e', owner: 'bob', meta: null },
  { name: 'f', owner: 'alice', meta: { color: 'green', rank: -1, stock: 10, active: false, size: { width: 30, unit: 'mm' } } },
]

const filterFields = {
  'meta->color': ['eq', 'ne', 'in', 'contains', 'isnull'],
  'meta->rank': ['gt', 'lte', 'isnull'],
  'meta->stock': ['gte', 'in'],
  'meta->active': ['eq'],
  'meta->size->width': ['gt'],
  'meta->size->unit': ['eq'],
  name: ['eq'],
}
const orderingFields = ['meta->rank', 'meta->color', 'meta->size->width', 'name']

interface JsonApp extends TestDatabase {
  app: ReturnType<typeof testApp>
  alice: { authorization: string }
  bob: { authorization: string }
}

async function createTable (database: TestDatabase, column: string): Promise<void> {
  const [idType, id] = autoIncrement(database.dialect)
  await database.db.schema.createTable('gadgets').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (c) => c.notNull())
    .addColumn('owner', 'varchar(64)', (c) => c.notNull())
    .addColumn('meta', column as 'json')
    .execute()
  for (const row of seed) {
    await database.db.insertInto('gadgets')
      .values({ ...row, meta: row.meta === null ? null : JSON.stringify(row.meta) })
      .execute()
  }
}

const jsonType = (dialect: TestDialect['name']): string => (dialect === 'postgres' ? 'jsonb' : 'json')

async function jsonApp (
  t: TestContext,
  dialect: TestDialect,
  extra: Record<string, unknown> = {},
  column = jsonType(dialect.name)
): Promise<JsonApp> {
  const database = await testDatabase(t, dialect)
  await createTable(database, column)
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  await app.register(viewsetDocs)
  await app.register(createViewset({
    db: database.db,
    table: 'gadgets',
    schema: Gadget,
    filterFields,
    orderingFields,
    methods: ['LIST', 'GET'],
    protectedMethods: ['LIST', 'GET'],
    scope: (eb: any, { token }: { token: { sub?: string } | null }) => eb('owner', '=', token?.sub ?? ''),
    ...extra,
  } as any), { prefix: '/gadgets' })
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { ...database, app, alice: bearer('alice'), bob: bearer('bob') }
}

const ids = (response: { json: () => any }): number[] => response.json().map((row: { id: number }) => row.id)

async function list (app: JsonApp['app'], headers: Record<string, string>, query: string) {
  return await app.inject({ method: 'GET', url: `/gadgets?${query}`, headers })
}

async function listIds (json: JsonApp, query: string, who: 'alice' | 'bob' = 'alice'): Promise<number[]> {
  const response = await list(json.app, json[who], query)
  assert.equal(response.statusCode, 200, `${query}: ${response.body}`)
  return ids(response)
}

for (const dialect of dialects) {
  describe(`JSON paths on ${dialect.name}`, () => {
    test('filters on each scalar type, nested keys and missing keys, within the caller\'s rows', async (t) => {
      const json = await jsonApp(t, dialect)
      const cases: Array<[string, number[], number[]]> = [
        // query, alice's ids, bob's ids
        ['meta->color=red', [1], [3]],
        ['meta->color__eq=blue', [2], []],
        ['meta->color__in=red,green', [1, 6], [3]],
        ['meta->color__ne=red', [2, 6], []],
        ['meta->color__contains=RE', [1, 6], [3]],
        ['meta->color__isnull=true', [4], [5]],
        ['meta->color__isnull=false', [1, 2, 6], [3]],
        ['meta->rank__gt=1', [1], [3]],
        ['meta->rank__lte=1', [2, 6], []],
        ['meta->rank__gt=-1.5', [1, 2, 6], [3]],
        ['meta->stock__gte=3', [1, 6], [3]],
        ['meta->stock__in=0,10', [2, 6], []],
        ['meta->active=true', [1], [3]],
        ['meta->active=false', [2, 6], []],
        ['meta->size->width__gt=5', [1, 6], [3]],
        ['meta->size->unit=cm', [1], [3]],
        ['meta->size->unit=cm&meta->color=red', [1], [3]],
        ['meta->color=red&name=a', [1], []],
      ]
      for (const [query, alice, bob] of cases) {
        assert.deepEqual(await listIds(json, query), alice, `alice ${query}`)
        assert.deepEqual(await listIds(json, query, 'bob'), bob, `bob ${query}`)
      }
      const counted = await list(json.app, json.alice, 'meta->rank__lte=1&count=true')
      assert.equal(counted.headers['x-total-count'], '2')
      const bobCounted = await list(json.app, json.bob, 'meta->color=red&count=true')
      assert.equal(bobCounted.headers['x-total-count'], '1', 'a tenant counts only its own rows')
      const rows = await json.db.selectFrom('gadgets').select('id').orderBy('id').execute()
      assert.equal(rows.length, 6, 'reads change nothing')
    })

    test('JSON paths as terms of OR/AND/NOT groups', async (t) => {
      const json = await jsonApp(t, dialect)
      assert.deepEqual(await listIds(json, 'or=(meta->color.red,meta->rank__lte.-1)'), [1, 6])
      assert.deepEqual(await listIds(json, 'or=(meta->color.red,meta->rank__lte.-1)', 'bob'), [3])
      assert.deepEqual(await listIds(json, 'or=(meta->active.true,and(meta->stock__gte.5,meta->size->unit.mm))'), [1, 6])
      assert.deepEqual(await listIds(json, 'not.or=(meta->color.red)'), [2, 6], 'NULL stays unknown under not.')
      assert.deepEqual(await listIds(json, 'or=(meta->stock__in.(0,3))&count=true'), [1, 2])
      const bad = await list(json.app, json.alice, 'or=(meta->rank__gt.abc,name.a)')
      assert.equal(bad.statusCode, 400)
      assert.equal(problemOf(bad).errors?.[0]?.field, 'meta->rank__gt')
    })

    test('orders by a JSON path, NULLs by the default rule or the nulls suffix, the key breaking ties', async (t) => {
      const json = await jsonApp(t, dialect)
      // alice's ranks: 1 → 2.5, 2 → 1, 4 → missing, 6 → -1.
      assert.deepEqual(await listIds(json, 'order_by=meta->rank'), [6, 2, 1, 4])
      assert.deepEqual(await listIds(json, 'order_by=-meta->rank'), [4, 1, 2, 6])
      assert.deepEqual(await listIds(json, 'order_by=-meta->rank.nullslast'), [1, 2, 6, 4])
      assert.deepEqual(await listIds(json, 'order_by=meta->rank.nullsfirst'), [4, 6, 2, 1])
      assert.deepEqual(await listIds(json, 'order_by=meta->color'), [2, 6, 1, 4])
      assert.deepEqual(await listIds(json, 'order_by=-meta->size->width,name'), [4, 6, 1, 2])
      assert.deepEqual(await listIds(json, 'order_by=-meta->rank&meta->active=false'), [2, 6])
      const bob = await listIds(json, 'order_by=meta->rank', 'bob')
      assert.deepEqual(bob, [3, 5], 'bob\'s rows only, the NULL document last')
    })

    test('cursor pages ordered by a JSON path, forwards and back, with a filter', async (t) => {
      const json = await jsonApp(t, dialect, { pagination: 'cursor' })
      for (const [query, expected] of [
        ['order_by=-meta->rank.nullslast', [1, 2, 6, 4]],
        ['order_by=-meta->rank', [4, 1, 2, 6]],
        ['order_by=meta->color', [2, 6, 1, 4]],
        ['order_by=meta->size->width&meta->color__isnull=false', [2, 1, 6]],
      ] as const) {
        const seen: number[] = []
        let url: string | undefined = `/gadgets?limit=1&${query}`
        let last = ''
        while (url !== undefined) {
          const page: Awaited<ReturnType<typeof list>> = await json.app.inject({ method: 'GET', url, headers: json.alice })
          assert.equal(page.statusCode, 200, page.body)
          seen.push(...ids(page))
          last = url
          url = /<([^>]+)>; rel="next"/.exec(String(page.headers.link ?? ''))?.[1]
        }
        assert.deepEqual(seen, expected, query)
        // Back from the last page to the first.
        const back: number[] = []
        let prev: string | undefined = last
        while (prev !== undefined) {
          const page: Awaited<ReturnType<typeof list>> = await json.app.inject({ method: 'GET', url: prev, headers: json.alice })
          back.unshift(...ids(page))
          prev = /<([^>]+)>; rel="prev"/.exec(String(page.headers.link ?? ''))?.[1]
        }
        assert.deepEqual(back, expected, `${query} backwards`)
        // A cursor made for one order is refused for another.
        const first = await json.app.inject({ method: 'GET', url: `/gadgets?limit=1&${query}`, headers: json.alice })
        const cursor = /cursor=([^&>]+)/.exec(String(first.headers.link ?? ''))?.[1] ?? ''
        const other = await list(json.app, json.alice, `limit=1&order_by=name&cursor=${cursor}`)
        assert.equal(other.statusCode, 400)
        assert.equal(problemOf(other).code, 'FST_VIEWSET_INVALID_CURSOR')
      }
    })

    test('?fields= answers a declared path inside its column\'s object', async (t) => {
      const json = await jsonApp(t, dialect)
      const color = await list(json.app, json.alice, 'fields=id,meta->color')
      assert.equal(color.statusCode, 200, color.body)
      assert.deepEqual(color.json(), [
        { id: 1, meta: { color: 'red' } },
        { id: 2, meta: { color: 'blue' } },
        { id: 4, meta: {} },
        { id: 6, meta: { color: 'green' } },
      ])
      const nested = await list(json.app, json.bob, 'fields=meta->size->width,id,meta->rank,name')
      assert.deepEqual(nested.json(), [
        { id: 3, name: 'c', meta: { rank: 7, size: { width: 50 } } },
        { id: 5, name: 'e', meta: null },
      ])
      const filtered = await list(json.app, json.alice, 'fields=id,meta->active&meta->active=false&order_by=-meta->rank')
      assert.deepEqual(filtered.json(), [{ id: 2, meta: { active: false } }, { id: 6, meta: { active: false } }])
    })

    test('?fields= paths on GET by id: the row\'s own, within the caller\'s rows, OpenAPI\'s pattern', async (t) => {
      const json = await jsonApp(t, dialect)
      const get = (id: number, fields: string, who: 'alice' | 'bob' = 'alice') =>
        json.app.inject({ method: 'GET', url: `/gadgets/${id}?fields=${encodeURIComponent(fields)}`, headers: json[who] })
      const color = await get(1, 'id,meta->color,meta->size->width')
      assert.equal(color.statusCode, 200, color.body)
      assert.deepEqual(color.json(), { id: 1, meta: { color: 'red', size: { width: 10 } } })
      assert.deepEqual((await get(4, 'meta->rank,name')).json(), { name: 'd', meta: {} }, 'a missing key is absent')
      assert.deepEqual((await get(5, 'id,meta->color', 'bob')).json(), { id: 5, meta: null })
      assert.deepEqual((await get(2, 'meta,meta->color')).json(), { meta: seed[1]?.meta }, 'the column names it all')
      assert.equal((await get(3, 'id,meta->color')).statusCode, 404, 'bob\'s row is not alice\'s')
      const unknown = await get(1, 'id,meta->tags')
      assert.equal(unknown.statusCode, 400)
      assert.equal(problemOf(unknown).code, 'FST_VIEWSET_VALIDATION')
      const document = (await json.app.inject('/docs/json')).json()
      const parameters: Array<{ name: string, in: string, schema: { pattern?: string } }> =
        document.paths['/gadgets/{id}'].get.parameters
      const fields = parameters.find((parameter) => parameter.name === 'fields' && parameter.in === 'query')
      assert.ok(new RegExp(fields?.schema.pattern ?? '^$').test('id,meta->color'), JSON.stringify(fields))
    })

    test('documents in writes and reads: stored as sent, answered parsed, found by their paths', async (t) => {
      const json = await jsonApp(t, dialect, {
        methods: ['LIST', 'GET', 'POST', 'PATCH'],
        protectedMethods: ['LIST', 'GET', 'POST', 'PATCH'],
        beforeWrite: (values: object, { token }: { token: { sub?: string } | null }) => ({ ...values, owner: token?.sub ?? '' }),
      })
      const meta = { color: 'teal', rank: 4.25, stock: 2, active: true, size: { width: 7, unit: 'in' }, tags: ['x'] }
      const created = await json.app.inject({ method: 'POST', url: '/gadgets', headers: json.bob, payload: { name: 'g', meta } })
      assert.equal(created.statusCode, 201, created.body)
      assert.deepEqual(created.json(), { id: 7, name: 'g', owner: 'bob', meta })
      const got = await json.app.inject({ method: 'GET', url: '/gadgets/7', headers: json.bob })
      assert.deepEqual(got.json().meta, meta)
      assert.deepEqual(await listIds(json, 'meta->color=teal&meta->size->unit=in', 'bob'), [7])
      assert.deepEqual(await listIds(json, 'meta->color=teal'), [], 'alice never sees bob\'s document')
      const patched = await json.app.inject({
        method: 'PATCH', url: '/gadgets/7', headers: json.bob, payload: { meta: { ...meta, color: 'navy' } },
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.deepEqual(await listIds(json, 'meta->color=navy&order_by=-meta->rank', 'bob'), [7])
      const stored = await json.db.selectFrom('gadgets').select('meta').where('id', '=', 7).executeTakeFirstOrThrow()
      const document = typeof stored.meta === 'string' ? JSON.parse(stored.meta) : stored.meta
      assert.deepEqual(document, { ...meta, color: 'navy' })
      const all = await list(json.app, json.alice, 'order_by=name')
      assert.deepEqual(all.json()[0], { id: 1, name: 'a', owner: 'alice', meta: seed[0]?.meta })
    })

    test('OpenAPI types each JSON path parameter by the column\'s schema', async (t) => {
      const json = await jsonApp(t, dialect)
      const document = (await json.app.inject('/docs/json')).json()
      const parameters: Array<{ name: string, schema: Record<string, unknown> }> = document.paths['/gadgets'].get.parameters
      const schemaOf = (name: string) => parameters.find((parameter) => parameter.name === name)?.schema
      assert.equal(schemaOf('meta->rank__gt')?.type, 'number')
      assert.equal(schemaOf('meta->stock__gte')?.type, 'integer')
      assert.equal(schemaOf('meta->active')?.type, 'boolean')
      assert.equal(schemaOf('meta->size->unit')?.type, 'string')
      const orderBy = new RegExp(String(schemaOf('order_by')?.pattern), 'u')
      assert.ok(orderBy.test('-meta->rank.nullslast,meta->size->width'))
      assert.ok(!orderBy.test('meta->stock'))
      const fields = new RegExp(String(schemaOf('fields')?.pattern), 'u')
      assert.ok(fields.test('id,meta->color,meta->size->width'))
      assert.ok(!fields.test('id,meta->secret'))
    })

    test('bad values and undeclared paths are 400s naming the parameter', async (t) => {
      const json = await jsonApp(t, dialect)
      for (const [query, field] of <Array<[string, string]>>[
        ['meta->rank__gt=abc', 'meta->rank__gt'],
        ['meta->active=maybe', 'meta->active'],
        ['meta->stock__gte=1.5', 'meta->stock__gte'],
        ['meta->stock__in=1,x', 'meta->stock__in'],
        ['meta->secret=x', 'meta->secret'],
        ['meta->color__gt=a', 'meta->color__gt'],
        ['meta->tags=a', 'meta->tags'],
      ]) {
        const response = await list(json.app, json.alice, query)
        assert.equal(response.statusCode, 400, query)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_VALIDATION', query)
        assert.ok(problem.errors?.some((error) => error.field === field), `${query}: ${response.body}`)
      }
      const ordering = await list(json.app, json.alice, 'order_by=meta->stock')
      assert.equal(ordering.statusCode, 400)
      assert.equal(problemOf(ordering).code, 'FST_VIEWSET_UNSUPPORTED_ORDERING')
      const fields = await list(json.app, json.alice, 'fields=id,meta->secret')
      assert.equal(fields.statusCode, 400)
      assert.equal(problemOf(fields).errors?.[0]?.field, 'fields')
    })

    test('a hidden JSON column\'s paths are unknown names for the caller', async (t) => {
      const json = await jsonApp(t, dialect, {
        fieldAccess: ({ token }: { token: { sub?: string } | null }) => (token?.sub === 'bob' ? { hidden: ['meta'] } : {}),
      })
      assert.deepEqual(await listIds(json, 'meta->color=red'), [1])
      for (const query of ['meta->color=red', 'order_by=meta->rank', 'fields=id,meta->color', 'or=(meta->color.red)']) {
        const response = await list(json.app, json.bob, query)
        assert.equal(response.statusCode, 400, `${query}: ${response.body}`)
      }
      // GET by id too: bob may not name the hidden column's paths; alice may.
      const got = await json.app.inject({ method: 'GET', url: '/gadgets/3?fields=id,meta->color', headers: json.bob })
      assert.equal(got.statusCode, 400, got.body)
      const hers = await json.app.inject({ method: 'GET', url: '/gadgets/1?fields=id,meta->color', headers: json.alice })
      assert.deepEqual(hers.json(), { id: 1, meta: { color: 'red' } })
      const plain = await list(json.app, json.bob, 'order_by=name')
      assert.equal(plain.statusCode, 200)
      assert.deepEqual(plain.json().map((row: object) => Object.keys(row).sort()), [['id', 'name', 'owner'], ['id', 'name', 'owner']])
    })

    test('the index report lists JSON paths, and their statements are heavy', async (t) => {
      const json = await jsonApp(t, dialect)
      const report = viewsetIndexReport(json.app).filter((entry) => entry.field.includes('->'))
      assert.deepEqual(
        report.map((entry) => `${entry.field} ${entry.use}`).sort(),
        [
          'meta->active filter', 'meta->color filter', 'meta->color ordering', 'meta->rank filter',
          'meta->rank ordering', 'meta->size->unit filter', 'meta->size->width filter', 'meta->size->width ordering',
          'meta->stock filter',
        ]
      )
      assert.ok(report.every((entry) => /JSON path/.test(entry.reason)), JSON.stringify(report))
    })

    test('startup fails naming a path that is undeclared in the schema or reaches no scalar', async (t) => {
      const database = await testDatabase(t, dialect)
      await createTable(database, jsonType(dialect.name))
      for (const [options, words] of [
        [{ filterFields: { 'meta->size': ['eq'] } }, /filterFields.*"meta->size" does not reach a scalar/],
        [{ filterFields: { 'meta->tags': ['eq'] } }, /"meta->tags" does not reach a scalar/],
        [{ filterFields: { 'meta->nope': ['eq'] } }, /"meta->nope": "nope" is not a key of the column/],
        [{ filterFields: { 'meta->color->x': ['eq'] } }, /"meta->color->x": "color" is not a JSON object/],
        [{ filterFields: { 'name->x': ['eq'] } }, /"name->x": "name" is not a column of the schema holding a JSON object/],
        [{ filterFields: { 'meta->': ['eq'] } }, /"meta->": a JSON path is a column and 1 to 4 keys/],
        [{ orderingFields: ['meta->a b'] }, /orderingFields.*"meta->a b": a JSON path is a column/],
        [{ orderingFields: ['meta->size'] }, /orderingFields.*"meta->size" does not reach a scalar/],
        [{ filterFields: { 'meta->active': ['gt'] } }, /"meta->active": operator "gt" does not apply to a boolean/],
      ] as const) {
        const app = testApp(t)
        await assert.rejects(async () => {
          await app.register(createViewset({ db: database.db, table: 'gadgets', schema: Gadget, ...options } as any))
          await app.ready()
        }, words)
      }
    })
  })
}

for (const dialect of dialects) {
  test(`${dialect.name}: a JSON document in a text column serves paths and rows as a JSON column does`, async (t) => {
    const json = await jsonApp(t, dialect, {}, 'text')
    assert.deepEqual(await listIds(json, 'meta->color=red&order_by=-meta->rank'), [1])
    assert.deepEqual(await listIds(json, 'meta->active=false&order_by=-meta->rank'), [2, 6])
    assert.deepEqual(await listIds(json, 'order_by=-meta->size->width.nullslast&meta->stock__gte=0'), [6, 1, 2])
    const fields = await list(json.app, json.alice, 'fields=id,meta->size->unit&meta->size->width__gt=5')
    assert.deepEqual(fields.json(), [{ id: 1, meta: { size: { unit: 'cm' } } }, { id: 6, meta: { size: { unit: 'mm' } } }])
    const whole = await list(json.app, json.alice, 'meta->color=blue')
    assert.deepEqual(whole.json(), [{ id: 2, name: 'b', owner: 'alice', meta: seed[1]?.meta }])
  })
}

test('a statement that reads a JSON path is heavy on every dialect, a plain comparison cheap', () => {
  const db = compileOnlySqlite<any>()
  for (const dialect of [sqliteDialect, postgresDialect, mysqlDialect]) {
    for (const type of ['string', 'number', 'integer', 'boolean'] as const) {
      const value = dialect.syntax.jsonScalar('meta', ['size', 'width'], type)
      const filtered = db.selectFrom('gadgets').selectAll().where((eb) => eb(value, '=', 1)).limit(10)
      assert.equal(costOf(filtered.compile().query), 'heavy', `${dialect.name} ${type} filter`)
      const ordered = db.selectFrom('gadgets').selectAll().orderBy(value).limit(10)
      assert.equal(costOf(ordered.compile().query), 'heavy', `${dialect.name} ${type} order`)
    }
  }
  assert.equal(costOf(db.selectFrom('gadgets').selectAll().where('name', '=', 'a').limit(10).compile().query), 'cheap')
})
