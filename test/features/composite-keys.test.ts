import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import { createViewset, viewsetDocs, viewsetMethods } from 'fastify-viewsets'
import type { ViewsetMethod } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

// Composite primary keys (issue 39, item 1): a table keyed by several columns is served by the whole key,
// `{prefix}/{part1},{part2}` in the key's column order, each part typed and canonical like a single id; a comma or
// slash inside a string part is sent percent-encoded. Two keys: ck_book_tags (book_id, tag_id), a link table with a
// tenant, and ck_cells (sheet, big, seq), a string part, a BIGINT part served as digits and an integer part.

const secret = 'test-secret-that-is-long-enough-for-hs256'

const Book = Type.Object({ id: Type.Integer(), title: Type.String() })
const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const BookTag = Type.Object({
  book_id: Type.Integer(),
  tag_id: Type.Integer(),
  tenant: Type.String({ maxLength: 64 }),
  note: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
  book: Type.Optional(Type.Union([Book, Type.Null()])),
})
const BookWithTags = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  tags: Type.Optional(Type.Array(Tag)),
})
const Cell = Type.Object({
  sheet: Type.String({ minLength: 1, maxLength: 100 }),
  big: Type.String({ pattern: '^-?[0-9]{1,19}$' }),
  seq: Type.Integer(),
  value: Type.Union([Type.String({ maxLength: 100 }), Type.Null()]),
})

/** A sheet name with the two characters a path must escape. */
const oddSheet = 'a,b/c d'
const past53 = '9007199254740993'

interface Fixture extends TestDatabase {
  app: FastifyInstance
  alice: { authorization: string }
  bob: { authorization: string }
}

async function schema (database: TestDatabase, dialect: TestDialect): Promise<void> {
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema.createTable('ck_books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(100)', (column) => column.notNull()).execute()
  await db.schema.createTable('ck_tags').addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('name', 'varchar(100)', (column) => column.notNull()).execute()
  await db.schema.createTable('ck_book_tags')
    .addColumn('book_id', 'integer', (column) => column.notNull().references('ck_books.id'))
    .addColumn('tag_id', 'integer', (column) => column.notNull().references('ck_tags.id'))
    .addColumn('tenant', 'varchar(64)', (column) => column.notNull())
    .addColumn('note', 'varchar(100)')
    .addPrimaryKeyConstraint('ck_book_tags_pk', ['book_id', 'tag_id'])
    .execute()
  await db.schema.createTable('ck_cells')
    .addColumn('sheet', 'varchar(100)', (column) => column.notNull())
    .addColumn('big', 'bigint', (column) => column.notNull())
    .addColumn('seq', 'integer', (column) => column.notNull())
    .addColumn('value', 'varchar(100)')
    .addPrimaryKeyConstraint('ck_cells_pk', ['sheet', 'big', 'seq'])
    .execute()
  await db.insertInto('ck_books').values([{ title: 'Dune' }, { title: 'Emma' }, { title: 'Ulysses' }]).execute()
  await db.insertInto('ck_tags').values([1, 2, 3, 4].map((tag) => ({ id: tag, name: `tag ${tag}` }))).execute()
  await db.insertInto('ck_book_tags').values([
    { book_id: 1, tag_id: 1, tenant: 'alice', note: 'one' },
    { book_id: 1, tag_id: 2, tenant: 'alice', note: null },
    { book_id: 2, tag_id: 1, tenant: 'bob', note: 'bob' },
  ]).execute()
  await db.insertInto('ck_cells').values([
    { sheet: oddSheet, big: past53, seq: 1, value: 'x' },
    { sheet: oddSheet, big: past53, seq: 2, value: 'y' },
    { sheet: 'plain', big: '-5', seq: 1, value: null },
  ]).execute()
}

async function fixture (
  t: TestContext,
  dialect: TestDialect,
  options: { pagination?: 'cursor'; methods?: readonly ViewsetMethod[]; docs?: boolean } = {}
): Promise<Fixture> {
  const database = await testDatabase(t, dialect)
  await schema(database, dialect)
  const { db } = database
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  if (options.docs === true) await app.register(viewsetDocs, { title: 'Composite keys' })
  const methods = options.methods ?? viewsetMethods
  await app.register(createViewset({
    db,
    table: 'ck_book_tags',
    schema: BookTag,
    methods,
    conflictFields: ['book_id', 'tag_id'],
    filterFields: { book_id: ['eq'], tag_id: ['eq'] },
    relatedConfig: { selectRelated: { book: { table: 'ck_books', foreignKey: 'book_id' } } },
    ...(options.pagination === undefined ? {} : { pagination: options.pagination }),
    // Every caller sees and writes only its tenant's links.
    scope: (eb, { token }) => eb('tenant', '=', token?.sub ?? ''),
    defaultLimit: 2,
  }), { prefix: '/book-tags' })
  await app.register(createViewset({ db, table: 'ck_cells', schema: Cell, methods, primaryKey: ['sheet', 'big', 'seq'] }),
    { prefix: '/cells' })
  await app.register(createViewset({
    db,
    table: 'ck_books',
    schema: BookWithTags,
    methods: ['LIST', 'GET'],
    relatedConfig: {
      prefetchRelated: {
        tags: { table: 'ck_tags', through: { table: 'ck_book_tags', sourceKey: 'book_id', targetKey: 'tag_id' } },
      },
    },
  }), { prefix: '/books' })
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { ...database, app, alice: bearer('alice'), bob: bearer('bob') }
}

async function links (db: TestDatabase['db']) {
  const rows = await db.selectFrom('ck_book_tags').selectAll().orderBy('book_id').orderBy('tag_id').execute()
  return rows.map((row) => ({
    ...row, book_id: Number(row.book_id), tag_id: Number(row.tag_id), note: row.note as string | null,
  }))
}

async function cells (db: TestDatabase['db']) {
  const rows = await db.selectFrom('ck_cells').selectAll().orderBy('sheet').orderBy('big').orderBy('seq').execute()
  return rows.map((row) => ({
    sheet: String(row.sheet), big: String(row.big), seq: Number(row.seq), value: row.value as string | null,
  }))
}

const oddPath = `/cells/${encodeURIComponent(oddSheet)},${past53},1`

for (const dialect of dialects) {
  describe(`composite primary keys (${dialect.name})`, () => {
    test('GET, PATCH, PUT and DELETE by the whole key; POST answers its Location; ETags and If-Match', async (t) => {
      const { app, db, alice } = await fixture(t, dialect)
      const found = await app.inject({ url: '/book-tags/1,2', headers: alice })
      assert.equal(found.statusCode, 200)
      assert.deepEqual(found.json(), { book_id: 1, tag_id: 2, tenant: 'alice', note: null, book: { id: 1, title: 'Dune' } })
      const etag = found.headers.etag
      assert.ok(typeof etag === 'string')
      assert.equal((await app.inject({ url: '/book-tags/1,3', headers: alice })).statusCode, 404)

      const created = await app.inject({
        method: 'POST', url: '/book-tags', headers: alice, payload: { book_id: 3, tag_id: 4, tenant: 'alice' },
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.headers.location, '/book-tags/3,4')
      assert.equal((await app.inject({ url: '/book-tags/3,4', headers: alice })).json().tag_id, 4)

      const stale = await app.inject({
        method: 'PATCH', url: '/book-tags/1,2', headers: { ...alice, 'if-match': '"stale"' }, payload: { note: 'x' },
      })
      assert.equal(stale.statusCode, 412)
      const patched = await app.inject({
        method: 'PATCH', url: '/book-tags/1,2', headers: { ...alice, 'if-match': etag }, payload: { note: 'two' },
      })
      assert.equal(patched.statusCode, 200)
      assert.equal(patched.json().note, 'two')
      const put = await app.inject({
        method: 'PUT', url: '/book-tags/1,2', headers: alice, payload: { book_id: 1, tag_id: 2, tenant: 'alice', note: 'put' },
      })
      assert.equal(put.statusCode, 200)
      assert.equal(put.json().note, 'put')
      assert.equal((await app.inject({ method: 'DELETE', url: '/book-tags/1,2', headers: alice })).statusCode, 204)
      assert.deepEqual((await links(db)).map((row) => [row.book_id, row.tag_id, row.note]), [
        [1, 1, 'one'], [2, 1, 'bob'], [3, 4, null],
      ])
    })

    test('a wrong number of parts or a non-canonical part is a 400 naming it, and changes nothing', async (t) => {
      const { app, db, alice } = await fixture(t, dialect)
      const before = await links(db)
      const cases: Array<[string, string]> = [
        ['/book-tags/1', 'id'], ['/book-tags/1,2,3', 'id'], ['/book-tags/01,2', 'book_id'],
        ['/book-tags/1,%2B2', 'tag_id'], ['/book-tags/1,x', 'tag_id'], ['/book-tags/1,', 'tag_id'],
        ['/book-tags/1%2C2', 'id'],
      ]
      for (const [url, field] of cases) {
        for (const method of ['GET', 'PATCH', 'PUT', 'DELETE'] as const) {
          const payload = method === 'GET' || method === 'DELETE' ? undefined : { note: 'no', book_id: 1, tag_id: 2, tenant: 'alice' }
          const sent = payload === undefined ? {} : { payload }
          const response = await app.inject({ method, url, headers: alice, ...sent })
          assert.equal(response.statusCode, 400, `${method} ${url}`)
          const problem = problemOf(response)
          assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
          assert.equal(problem.errors?.[0]?.in, 'params', `${method} ${url}`)
          assert.equal(problem.errors?.[0]?.field, field, `${method} ${url}`)
        }
      }
      const counted = await app.inject({ url: '/book-tags/1,2,3', headers: alice })
      assert.match(problemOf(counted).detail, /must be the 2 parts of the key \(book_id,tag_id\)/)
      assert.deepEqual(await links(db), before)
    })

    test('a key part sent in a PUT or PATCH body must equal the path', async (t) => {
      const { app, db, alice } = await fixture(t, dialect)
      const before = await links(db)
      const moved = await app.inject({
        method: 'PATCH', url: '/book-tags/1,2', headers: alice, payload: { tag_id: 3, note: 'moved' },
      })
      assert.equal(moved.statusCode, 400)
      assert.deepEqual(problemOf(moved).errors?.map((error) => [error.in, error.field]), [['body', 'tag_id']])
      assert.deepEqual(await links(db), before)
      const same = await app.inject({
        method: 'PATCH', url: '/book-tags/1,2', headers: alice, payload: { tag_id: 2, note: 'same' },
      })
      assert.equal(same.statusCode, 200)
      assert.deepEqual([same.json().book_id, same.json().tag_id, same.json().note], [1, 2, 'same'])
    })

    test('a three-part key with a string part holding a comma and a slash, and a BIGINT part', async (t) => {
      const { app, db } = await fixture(t, dialect)
      const found = await app.inject(oddPath)
      assert.equal(found.statusCode, 200)
      assert.deepEqual(found.json(), { sheet: oddSheet, big: past53, seq: 1, value: 'x' })
      const created = await app.inject({
        method: 'POST', url: '/cells', payload: { sheet: 'q,/%', big: '-9223372036854775808', seq: 7, value: null },
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.headers.location, `/cells/${encodeURIComponent('q,/%')},-9223372036854775808,7`)
      const again = await app.inject(String(created.headers.location))
      assert.equal(again.statusCode, 200)
      assert.equal(again.json().big, '-9223372036854775808')
      const patched = await app.inject({ method: 'PATCH', url: oddPath, payload: { value: 'patched' } })
      assert.equal(patched.statusCode, 200)
      assert.equal(patched.json().value, 'patched')
      // The comma not encoded splits the sheet: four parts, a 400.
      assert.equal((await app.inject(`/cells/a,b%2Fc%20d,${past53},1`)).statusCode, 400)
      assert.equal((await app.inject({ method: 'DELETE', url: oddPath })).statusCode, 204)
      assert.deepEqual((await cells(db)).map((row) => [row.sheet, row.big, row.seq, row.value]), [
        [oddSheet, past53, 2, 'y'], ['plain', '-5', 1, null], ['q,/%', '-9223372036854775808', 7, null],
      ])
    })

    test("two tenants: a rule keeps every composite-key route to the caller's rows", async (t) => {
      const { app, db, alice, bob } = await fixture(t, dialect)
      const before = await links(db)
      assert.equal((await app.inject({ url: '/book-tags/2,1', headers: alice })).statusCode, 404)
      assert.equal((await app.inject({ method: 'PATCH', url: '/book-tags/2,1', headers: alice, payload: { note: 'spy' } })).statusCode, 404)
      assert.equal((await app.inject({
        method: 'PUT', url: '/book-tags/2,1', headers: alice, payload: { book_id: 2, tag_id: 1, tenant: 'alice' },
      })).statusCode, 404)
      assert.equal((await app.inject({ method: 'DELETE', url: '/book-tags/2,1', headers: alice })).statusCode, 404)
      const moved = await app.inject({ method: 'PATCH', url: '/book-tags/1,1', headers: alice, payload: { tenant: 'bob' } })
      assert.equal(moved.statusCode, 403)
      const spied = await app.inject({
        method: 'POST', url: '/book-tags', headers: alice, payload: { book_id: 3, tag_id: 1, tenant: 'bob' },
      })
      assert.equal(spied.statusCode, 403)
      assert.deepEqual(await links(db), before, 'nothing written')
      const listed = await app.inject({ url: '/book-tags?limit=10', headers: bob })
      const keys = listed.json().map((row: { book_id: number, tag_id: number }) => [row.book_id, row.tag_id])
      assert.deepEqual(keys, [[2, 1]])
      assert.equal((await app.inject({ url: '/book-tags/2,1', headers: bob })).statusCode, 200)
    })

    test('LIST orders by the whole key, and cursors page across it with the key as the tie-break', async (t) => {
      const { app, db, alice } = await fixture(t, dialect, { pagination: 'cursor' })
      await db.insertInto('ck_book_tags').values([
        { book_id: 1, tag_id: 3, tenant: 'alice' }, { book_id: 3, tag_id: 1, tenant: 'alice' },
        { book_id: 2, tag_id: 2, tenant: 'alice' },
      ]).execute()
      const seen: number[][] = []
      let next: string | undefined = '/book-tags'
      interface Page {
        json: () => Array<{ book_id: number, tag_id: number }>
        statusCode: number
        headers: Record<string, unknown>
      }
      let pages = 0
      while (next !== undefined) {
        const response: Page = await app.inject({ url: next, headers: alice })
        assert.equal(response.statusCode, 200, next)
        seen.push(...response.json().map((row: { book_id: number, tag_id: number }) => [row.book_id, row.tag_id]))
        const link = /<([^>]*)>; rel="next"/.exec(String(response.headers.link ?? ''))
        next = link?.[1]
        pages++
        assert.ok(pages < 10)
      }
      assert.deepEqual(seen, [[1, 1], [1, 2], [1, 3], [2, 2], [3, 1]])
      assert.equal(pages, 3)
    })

    test("upsert on the composite key's conflictFields, BULK naming its element, and bulk writes by key", async (t) => {
      const { app, db, alice } = await fixture(t, dialect)
      const merge = { ...alice, prefer: 'resolution=merge-duplicates' }
      const first = await app.inject({
        method: 'POST', url: '/book-tags', headers: merge, payload: { book_id: 3, tag_id: 2, tenant: 'alice', note: 'new' },
      })
      assert.equal(first.statusCode, 201)
      const second = await app.inject({
        method: 'POST', url: '/book-tags', headers: merge, payload: { book_id: 3, tag_id: 2, tenant: 'alice', note: 'merged' },
      })
      assert.equal(second.statusCode, 200)
      assert.equal(second.json().note, 'merged')
      const before = await links(db)
      const repeated = await app.inject({
        method: 'POST',
        url: '/book-tags/bulk',
        headers: alice,
        payload: [{ book_id: 3, tag_id: 3, tenant: 'alice' }, { book_id: 3, tag_id: 3, tenant: 'alice' }],
      })
      assert.equal(repeated.statusCode, 409)
      assert.match(JSON.stringify(problemOf(repeated).errors), /\/1/)
      const taken = await app.inject({
        method: 'POST',
        url: '/book-tags/bulk',
        headers: alice,
        payload: [{ book_id: 3, tag_id: 4, tenant: 'alice' }, { book_id: 1, tag_id: 1, tenant: 'alice' }],
      })
      assert.equal(taken.statusCode, 409)
      assert.match(JSON.stringify(problemOf(taken).errors), /\/1/)
      assert.deepEqual(await links(db), before)
      const bulkPatched = await app.inject({
        method: 'PATCH',
        url: '/book-tags/bulk',
        headers: alice,
        payload: [{ book_id: 1, tag_id: 1, note: 'a' }, { book_id: 1, tag_id: 2, note: 'b' }],
      })
      assert.equal(bulkPatched.statusCode, 200)
      assert.deepEqual(bulkPatched.json().map((row: { note: string }) => row.note), ['a', 'b'])
      const missing = await app.inject({
        method: 'PATCH', url: '/book-tags/bulk', headers: alice, payload: [{ book_id: 2, tag_id: 1, note: 'spy' }],
      })
      assert.equal(missing.statusCode, 404)
      const patchedMany = await app.inject({ method: 'PATCH', url: '/book-tags?book_id=1', headers: alice, payload: { note: 'c' } })
      assert.equal(patchedMany.statusCode, 200)
      const deleted = await app.inject({ method: 'DELETE', url: '/book-tags?tag_id=2', headers: alice })
      assert.equal(deleted.statusCode, 200)
      assert.deepEqual((await links(db)).map((row) => [row.book_id, row.tag_id, row.note]), [
        [1, 1, 'c'], [2, 1, 'bob'],
      ])
    })

    test('a composite-keyed link table as a many-to-many through table and with its own relation', async (t) => {
      const { app, alice, bob } = await fixture(t, dialect)
      // The link table's rule holds through the many-to-many: each tenant sees its own links only.
      const tagsOf = async (url: string, headers: Record<string, string>) =>
        (await app.inject({ url, headers })).json().tags.map((tag: { id: number }) => tag.id).sort()
      assert.deepEqual(await tagsOf('/books/1', alice), [1, 2])
      assert.deepEqual(await tagsOf('/books/1', bob), [])
      assert.deepEqual(await tagsOf('/books/2', bob), [1])
      assert.deepEqual(await tagsOf('/books/1', {}), [])
      const listed = await app.inject({ url: '/book-tags?limit=5', headers: alice })
      assert.deepEqual(listed.json().map((row: { book: { title: string } }) => row.book.title), ['Dune', 'Dune'])
    })

    test('OpenAPI documents each part of the key as a path parameter', async (t) => {
      const { app } = await fixture(t, dialect, { docs: true, methods: ['LIST', 'GET', 'PATCH', 'DELETE'] })
      const document = (await app.inject('/docs/json')).json()
      const path = document.paths['/book-tags/{book_id},{tag_id}']
      assert.ok(path !== undefined, Object.keys(document.paths).join(' '))
      for (const method of ['get', 'patch', 'delete']) {
        const names = path[method].parameters.filter((p: { in: string }) => p.in === 'path').map((p: { name: string }) => p.name)
        assert.deepEqual(names, ['book_id', 'tag_id'], method)
      }
      assert.ok(document.paths['/cells/{sheet},{big},{seq}'] !== undefined)
      assert.equal(document.paths['/book-tags/{id}'], undefined)
    })

    test('primaryKey defaults to the table’s own composite key; a wrong list fails at startup', async (t) => {
      const database = await testDatabase(t, dialect)
      await schema(database, dialect)
      const { db } = database
      const app = testApp(t)
      await app.register(createViewset({ db, table: 'ck_cells', schema: Cell, methods: ['GET'] }), { prefix: '/cells' })
      await app.ready()
      assert.equal((await app.inject(oddPath)).json().value, 'x')
      const wrong = testApp(t)
      await assert.rejects(async () => {
        await wrong.register(createViewset({ db, table: 'ck_cells', schema: Cell, primaryKey: ['seq', 'sheet'] }))
        await wrong.ready()
      }, /primaryKey: "seq, sheet" does not identify one row/)
    })
  })
}
