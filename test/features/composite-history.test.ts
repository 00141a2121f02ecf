import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createViewset, softDeleteMethods } from 'fastify-viewsets'
import type { ViewsetMethod, ViewsetOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

// Issue 39: a row's history and `?as_of=` on composite-keyed viewsets. ch_pairs (big, code): a BIGINT part past 2^53
// and a string part holding a comma and a slash (sent as %2C and %2F); ch_cells (sheet, big, seq): three parts. Every
// write kind is recorded under the whole key (POST, PATCH, PUT, DELETE, BULK, BULK_PATCH, PATCH_MANY, DELETE_MANY), the
// HISTORY route pages newest first under the caller's rules (bob gets 404 on alice's rows, deleted or not) and field
// rules (`secret` only for admins), and `?as_of=` answers the row as it was. Then the link rows of a many-to-many a
// nested write sets, through the composite-keyed viewset serving the link table: recorded, soft-deleted, restored,
// and only the caller's links touched.

const Pair = Type.Object({
  big: Type.String({ pattern: '^-?[0-9]{1,19}$' }),
  code: Type.String({ minLength: 1, maxLength: 100 }),
  tenant: Type.Optional(Type.String({ readOnly: true })),
  secret: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  note: Type.Optional(Type.Union([Type.String(), Type.Null()])),
})
const Cell = Type.Object({
  sheet: Type.String({ minLength: 1, maxLength: 100 }),
  big: Type.String({ pattern: '^-?[0-9]{1,19}$' }),
  seq: Type.Integer(),
  tenant: Type.Optional(Type.String({ readOnly: true })),
  secret: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  value: Type.Optional(Type.Union([Type.String(), Type.Null()])),
})
const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  tenant: Type.Optional(Type.String({ readOnly: true })),
  tags: Type.Optional(Type.Array(Tag)),
})
const BookTag = Type.Object({
  book_id: Type.Integer(),
  tag_id: Type.Integer(),
  tenant: Type.Optional(Type.String({ readOnly: true })),
})

const past53 = '9007199254740993'
const oddCode = 'a,b/c'
const oddPair = `/pairs/${past53},${encodeURIComponent(oddCode)}`
const oddSheet = 'x,y/z w'
const oddCell = `/cells/${encodeURIComponent(oddSheet)},-${past53},7`

const alice = { 'x-tenant': 'alice' }
const bob = { 'x-tenant': 'bob' }
const admin = { ...alice, 'x-admin': 'yes' }
const methods: ViewsetMethod[] = ['LIST', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'BULK', 'PATCH_MANY', 'BULK_PATCH',
  'DELETE_MANY', 'HISTORY']

/** Every method of the tenant's rows only; writes stamp the tenant; `secret` is the admins'; the actor the tenant. */
const rules = {
  withoutTokens: true,
  scope: (eb: any, { request }: any) => eb('tenant', '=', String(request.headers['x-tenant'] ?? 'none')),
  beforeWrite: (values: any, { request }: any) =>
    ({ ...values, tenant: String(request.headers['x-tenant'] ?? 'none') }),
  fieldAccess: ({ request }: any) => (request.headers['x-admin'] === 'yes' ? {} : { hidden: ['secret'] }),
  history: { createTable: true, actor: ({ request }: any) => String(request.headers['x-tenant'] ?? 'none') },
}

function timestampType (dialect: TestDatabase['dialect']): string {
  return dialect === 'postgres' ? 'timestamptz' : dialect === 'mysql' ? 'datetime(3)' : 'datetime'
}

async function createTables ({ db, dialect }: TestDatabase): Promise<void> {
  await db.schema.createTable('ch_pairs')
    .addColumn('big', 'bigint', (column) => column.notNull())
    .addColumn('code', 'varchar(100)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(20)', (column) => column.notNull())
    .addColumn('secret', 'varchar(50)')
    .addColumn('note', 'varchar(100)')
    .addPrimaryKeyConstraint('ch_pairs_pk', ['big', 'code'])
    .execute()
  await db.schema.createTable('ch_cells')
    .addColumn('sheet', 'varchar(100)', (column) => column.notNull())
    .addColumn('big', 'bigint', (column) => column.notNull())
    .addColumn('seq', 'integer', (column) => column.notNull())
    .addColumn('tenant', 'varchar(20)', (column) => column.notNull())
    .addColumn('secret', 'varchar(50)')
    .addColumn('value', 'varchar(100)')
    .addPrimaryKeyConstraint('ch_cells_pk', ['sheet', 'big', 'seq'])
    .execute()
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable('ch_books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(100)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(20)', (column) => column.notNull()).execute()
  await db.schema.createTable('ch_tags').addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('name', 'varchar(100)', (column) => column.notNull()).execute()
  await db.schema.createTable('ch_book_tags')
    .addColumn('book_id', 'integer', (column) => column.notNull().references('ch_books.id'))
    .addColumn('tag_id', 'integer', (column) => column.notNull().references('ch_tags.id'))
    .addColumn('tenant', 'varchar(20)', (column) => column.notNull())
    .addColumn('deleted_at', sql.raw(timestampType(dialect)))
    .addPrimaryKeyConstraint('ch_book_tags_pk', ['book_id', 'tag_id'])
    .execute()
  await db.insertInto('ch_tags').values([1, 2, 3, 4].map((tag) => ({ id: tag, name: `tag ${tag}` }))).execute()
}

interface Fixture extends TestDatabase {
  app: FastifyInstance
}

async function fixture (t: TestContext, dialect: TestDialect): Promise<Fixture> {
  const database = await testDatabase(t, dialect)
  await createTables(database)
  const { db } = database
  const app = testApp(t)
  const create = (options: object) => createViewset({ db, ...options } as ViewsetOptions<any, string, any>)
  await app.register(create({ table: 'ch_pairs', schema: Pair, methods, ...rules, filterFields: { code: ['eq'] } }),
    { prefix: '/pairs' })
  await app.register(create({ table: 'ch_cells', schema: Cell, methods, ...rules }), { prefix: '/cells' })
  await app.register(create({ table: 'ch_tags', schema: Tag, methods: ['LIST', 'GET'] }), { prefix: '/tags' })
  await app.register(create({
    table: 'ch_books',
    schema: Book,
    methods: ['LIST', 'GET', 'POST', 'PATCH'],
    withoutTokens: true,
    scope: rules.scope,
    beforeWrite: rules.beforeWrite,
    relatedConfig: {
      prefetchRelated: {
        tags: {
          table: 'ch_tags',
          through: { table: 'ch_book_tags', sourceKey: 'book_id', targetKey: 'tag_id' },
          orderBy: 'id',
          writable: true,
        },
      },
    },
  }), { prefix: '/books' })
  const { fieldAccess: _fieldAccess, ...linkRules } = rules
  await app.register(create({
    table: 'ch_book_tags',
    schema: BookTag,
    methods: [...methods, ...softDeleteMethods],
    softDelete: 'deleted_at',
    ...linkRules,
  }), { prefix: '/book-tags' })
  await app.ready()
  return { ...database, app }
}

interface Entry {
  table: string
  key: unknown
  operation: string
  actor: string | null
  before: any
  after: any
}

async function entries (db: Kysely<any>, table: string): Promise<Entry[]> {
  const rows = await db.selectFrom('viewset_history').selectAll().where('table_name', '=', table)
    .orderBy('position').execute()
  return rows.map((row) => ({
    table: row.table_name,
    key: JSON.parse(row.row_key),
    operation: row.operation,
    actor: row.actor,
    before: row.before === null ? null : JSON.parse(row.before),
    after: row.after === null ? null : JSON.parse(row.after),
  }))
}

async function inject (app: FastifyInstance, method: string, url: string, headers: object, payload?: unknown) {
  const sent = payload === undefined ? {} : { payload: payload as object }
  return await app.inject({ method: method as 'GET', url, headers: headers as Record<string, string>, ...sent })
}

for (const dialect of dialects) {
  describe(`history of composite-keyed rows (${dialect.name})`, () => {
    test('every write kind is recorded under the whole key (a BIGINT part, a string part with , and /)',
      async (t) => {
        const { app, db } = await fixture(t, dialect)
        const created = { big: past53, code: oddCode, note: 'v1', secret: 's' }
        let response = await inject(app, 'POST', '/pairs', admin, created)
        assert.equal(response.statusCode, 201, response.body)
        assert.equal(response.headers.location, `/pairs/${past53},a%2Cb%2Fc`)
        response = await inject(app, 'PATCH', oddPair, alice, { note: 'v2' })
        assert.equal(response.statusCode, 200, response.body)
        response = await inject(app, 'PUT', oddPair, alice, { big: past53, code: oddCode, note: 'v3' })
        assert.equal(response.statusCode, 200, response.body)
        response = await inject(app, 'POST', '/pairs/bulk', alice,
          [{ big: '1', code: 'x' }, { big: '-9223372036854775808', code: 'y,z' }])
        assert.equal(response.statusCode, 201, response.body)
        response = await inject(app, 'PATCH', '/pairs/bulk', alice, [{ big: '1', code: 'x', note: 'bp' }])
        assert.equal(response.statusCode, 200, response.body)
        response = await inject(app, 'PATCH', '/pairs?code=x', alice, { note: 'many' })
        assert.equal(response.statusCode, 200, response.body)
        response = await inject(app, 'DELETE', '/pairs/1,x', alice)
        assert.equal(response.statusCode, 204, response.body)
        response = await inject(app, 'DELETE', `/pairs?code=${encodeURIComponent('y,z')}`, alice)
        assert.equal(response.statusCode, 200, response.body)
        // Bob reaches none of alice's rows: nothing recorded for his attempts.
        assert.equal((await inject(app, 'PATCH', oddPair, bob, { note: 'spy' })).statusCode, 404)
        assert.equal((await inject(app, 'DELETE', oddPair, bob)).statusCode, 404)

        const recorded = await entries(db, 'ch_pairs')
        const odd = { big: past53, code: oddCode }
        const x = { big: '1', code: 'x' }
        const yz = { big: '-9223372036854775808', code: 'y,z' }
        assert.deepEqual(recorded.map((entry) => [entry.operation, entry.key]), [
          ['create', odd], ['update', odd], ['update', odd], ['create', x], ['create', yz],
          ['update', x], ['update', x], ['delete', x], ['delete', yz],
        ])
        assert.ok(recorded.every((entry) => entry.actor === 'alice'))
        // Every column as stored, the BIGINT part as its digits.
        assert.deepEqual(recorded[0]?.after, { big: past53, code: oddCode, tenant: 'alice', secret: 's', note: 'v1' })
        assert.equal(recorded[2]?.after.note, 'v3')
        assert.equal(recorded[7]?.before.note, 'many')
        assert.equal(recorded[7]?.after, null)
        const stored = await db.selectFrom('ch_pairs').select(['code', 'note']).execute()
        assert.deepEqual(stored, [{ code: oddCode, note: 'v3' }])
      })

    test('GET /{big},{code}/history: newest first, paged, rules and field rules, after a hard delete', async (t) => {
      const { app } = await fixture(t, dialect)
      assert.equal((await inject(app, 'POST', '/pairs', admin, { big: past53, code: oddCode, note: 'v1', secret: 's' }))
        .statusCode, 201)
      for (const note of ['v2', 'v3']) {
        assert.equal((await inject(app, 'PATCH', oddPair, alice, { note })).statusCode, 200)
      }
      let response = await inject(app, 'GET', `${oddPair}/history?limit=2`, alice)
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json().map((entry: any) => [entry.operation, entry.before?.note, entry.after?.note]),
        [['update', 'v2', 'v3'], ['update', 'v1', 'v2']])
      assert.deepEqual(response.json()[0].after, { big: past53, code: oddCode, tenant: 'alice', note: 'v3' })
      const next = /<([^>]+)>; rel="next"/.exec(String(response.headers.link))?.[1]
      assert.ok(next?.startsWith(`${oddPair}/history?`), String(response.headers.link))
      response = await inject(app, 'GET', next ?? '', alice)
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json().map((entry: any) => [entry.operation, entry.before, entry.after.note]),
        [['create', null, 'v1']])
      response = await inject(app, 'GET', `${oddPair}/history?limit=1`, admin)
      assert.equal(response.json()[0].after.secret, 's')
      response = await inject(app, 'GET', `${oddPair}/history`, bob)
      assert.equal(response.statusCode, 404)
      assert.equal(problemOf(response).code, 'FST_VIEWSET_NOT_FOUND')
      // The wrong number of parts, or a part that is not canonical: a 400.
      assert.equal((await inject(app, 'GET', `/pairs/${past53}/history`, alice)).statusCode, 400)
      assert.equal((await inject(app, 'GET', '/pairs/abc,x/history', alice)).statusCode, 400)
      // Hard-deleted: alice reads its history under the rule evaluated on its last version; bob still does not.
      assert.equal((await inject(app, 'DELETE', oddPair, alice)).statusCode, 204)
      response = await inject(app, 'GET', `${oddPair}/history?limit=1`, alice)
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json().map((entry: any) => [entry.operation, entry.before.note, entry.after]),
        [['delete', 'v3', null]])
      assert.equal('secret' in response.json()[0].before, false)
      assert.equal((await inject(app, 'GET', `${oddPair}/history`, bob)).statusCode, 404)
      assert.equal((await inject(app, 'GET', `/pairs/${past53},other/history`, alice)).statusCode, 404)
    })

    test('?as_of= answers a three-part row as it was, under the rules', async (t) => {
      const { app, db } = await fixture(t, dialect)
      let response = await inject(app, 'POST', '/cells', admin,
        { sheet: oddSheet, big: `-${past53}`, seq: 7, value: 'v1', secret: 's' })
      assert.equal(response.statusCode, 201, response.body)
      assert.equal(response.headers.location, oddCell)
      response = await inject(app, 'PATCH', oddCell, alice, { value: 'v2' })
      assert.equal(response.statusCode, 200, response.body)
      const [first, second] = await db.selectFrom('viewset_history').select(['at', 'row_key'])
        .where('table_name', '=', 'ch_cells').orderBy('position').execute()
      assert.equal(first?.row_key, JSON.stringify({ sheet: oddSheet, big: `-${past53}`, seq: 7 }))
      response = await inject(app, 'GET', `${oddCell}?as_of=${String(first?.at)}`, alice)
      assert.equal(response.statusCode, 200, response.body)
      const expected = first?.at === second?.at ? 'v2' : 'v1'
      const key = { sheet: oddSheet, big: `-${past53}`, seq: 7, tenant: 'alice' }
      assert.deepEqual(response.json(), { ...key, value: expected })
      response = await inject(app, 'GET', `${oddCell}?as_of=2999-01-01T00:00:00Z`, admin)
      assert.deepEqual(response.json(), { ...key, value: 'v2', secret: 's' })
      const before = new Date(Date.parse(String(first?.at)) - 1).toISOString()
      assert.equal((await inject(app, 'GET', `${oddCell}?as_of=${before}`, alice)).statusCode, 404)
      assert.equal((await inject(app, 'GET', `${oddCell}?as_of=2999-01-01T00:00:00Z`, bob)).statusCode, 404)
      response = await inject(app, 'GET', `${oddCell}/history`, alice)
      assert.deepEqual(response.json().map((entry: any) => entry.operation), ['update', 'create'])
      assert.equal((await inject(app, 'DELETE', oddCell, alice)).statusCode, 204)
      assert.equal((await inject(app, 'GET', `${oddCell}?as_of=2999-01-01T00:00:00Z`, alice)).statusCode, 404)
      response = await inject(app, 'GET', `${oddCell}?as_of=${String(second?.at)}`, alice)
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.json().value, 'v2')
      assert.deepEqual(await db.selectFrom('ch_cells').selectAll().execute(), [])
    })

    test("a nested write's link rows go through the composite-keyed link viewset: recorded, soft-deleted, restored",
      async (t) => {
        const { app, db } = await fixture(t, dialect)
        const links = async () => (await db.selectFrom('ch_book_tags').selectAll().orderBy('book_id').orderBy('tag_id')
          .execute()).map((row) => [Number(row.book_id), Number(row.tag_id), row.tenant, row.deleted_at !== null])
        const tagsOf = (response: { json: () => any }) => response.json().tags.map((tag: { id: number }) => tag.id)
        let response = await inject(app, 'POST', '/books', alice, { title: 'Dune', tags: [{ id: 1 }, { id: 2 }] })
        assert.equal(response.statusCode, 201, response.body)
        const book = response.json().id as number
        assert.deepEqual(tagsOf(response), [1, 2])
        // Bob's own link to alice's book (as another app path could have made it): never alice's to remove.
        await db.insertInto('ch_book_tags').values({ book_id: book, tag_id: 4, tenant: 'bob' }).execute()
        response = await inject(app, 'PATCH', `/books/${book}`, alice, { tags: [{ id: 2 }, { id: 3 }] })
        assert.equal(response.statusCode, 200, response.body)
        assert.deepEqual(tagsOf(response), [2, 3])
        assert.deepEqual(await links(), [
          [book, 1, 'alice', true], [book, 2, 'alice', false], [book, 3, 'alice', false], [book, 4, 'bob', false],
        ])
        response = await inject(app, 'PATCH', `/books/${book}`, alice, { tags: [{ id: 1 }] })
        assert.equal(response.statusCode, 200, response.body)
        assert.deepEqual(tagsOf(response), [1])
        assert.deepEqual(await links(), [
          [book, 1, 'alice', false], [book, 2, 'alice', true], [book, 3, 'alice', true], [book, 4, 'bob', false],
        ])
        const key = (tag: number) => ({ book_id: book, tag_id: tag })
        const recorded = await entries(db, 'ch_book_tags')
        assert.deepEqual(recorded.map((entry) => [entry.operation, entry.key, entry.actor]), [
          ['create', key(1), 'alice'], ['create', key(2), 'alice'],
          ['delete', key(1), 'alice'], ['create', key(3), 'alice'],
          ['delete', key(2), 'alice'], ['delete', key(3), 'alice'], ['restore', key(1), 'alice'],
        ])
        // The link viewset serves alice's live links only; bob's GET of the book sees none of alice's links.
        response = await inject(app, 'GET', '/book-tags', alice)
        assert.deepEqual(response.json().map((row: any) => [row.book_id, row.tag_id]), [[book, 1]])
        assert.equal((await inject(app, 'GET', `/books/${book}`, bob)).statusCode, 404)
        // A failing nested write leaves every link and entry as it was.
        const before = [await links(), await entries(db, 'ch_book_tags')]
        response = await inject(app, 'PATCH', `/books/${book}`, alice, { tags: [{ id: 2 }, { id: 99 }] })
        assert.equal(response.statusCode, 409, response.body)
        assert.deepEqual([await links(), await entries(db, 'ch_book_tags')], before)
      })
  })
}
