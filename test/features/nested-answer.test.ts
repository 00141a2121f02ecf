import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from '../../lib/index.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// The answer of a nested POST (issue 43): a new parent's children are answered as written (no statement reads them
// again) where the related table has no rule; with a row rule or a field rule the answer is read again under the
// caller's rules, two tenants apart, and never shows what they hide. Every answer equals the parent's GET.

const BookRow = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  tenant: Type.String(),
  shelf: Type.String(),
  secret: Type.Union([Type.String(), Type.Null()]),
  author_id: Type.Integer(),
})
const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  tenant: Type.Optional(Type.String({ readOnly: true })),
  shelf: Type.Optional(Type.String()),
  secret: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  author_id: Type.Integer(),
})
const Author = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  books: Type.Optional(Type.Array(BookRow)),
})

const t1 = { 'x-tenant': 't1' }
const t2 = { 'x-tenant': 't2' }
const tenantOf = (request: any) => String(request.headers['x-tenant'] ?? 'none')

interface Shelf extends TestDatabase {
  app: Awaited<ReturnType<typeof testApp>>
}

/** /authors with books written through /books; `books` options merged over the books viewset's, `limit` the
 * relation's. */
async function shelfApp (t: TestContext, dialect: TestDialect, books: Record<string, unknown> = {}, limit?: number) {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema.createTable('na_authors').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull()).execute()
  await db.schema.createTable('na_books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(8)', (column) => column.notNull())
    .addColumn('shelf', 'varchar(16)', (column) => column.notNull().defaultTo('open'))
    .addColumn('secret', 'varchar(64)')
    .addColumn('author_id', 'integer', (column) => column.notNull().references('na_authors.id')).execute()
  const app = testApp(t)
  await app.register(createViewset({
    db,
    table: 'na_books',
    schema: Book,
    methods: ['LIST', 'GET', 'POST', 'PATCH'],
    withoutTokens: true,
    beforeWrite: (values: any, { request }: any) => ({ ...values, tenant: tenantOf(request) }),
    ...books,
  } as any), { prefix: '/books' })
  const relation = { table: 'na_books', foreignKey: 'author_id', writable: true, ...(limit === undefined ? {} : { limit }) }
  await app.register(createViewset({
    db,
    table: 'na_authors',
    schema: Author,
    methods: ['GET', 'POST', 'PATCH'],
    relatedConfig: { prefetchRelated: { books: relation } },
  } as any), { prefix: '/authors' })
  await app.ready()
  return { ...database, app } satisfies Shelf
}

/** The statements that read the books back as a relation (its alias `t`), since the log was emptied. */
function reloads (shelf: Shelf): string[] {
  return shelf.queries.filter((text) => /from\s+["`]?na_books["`]?\s+as\s+["`]?t["`]?/i.test(text))
}

async function booksIn (shelf: Shelf): Promise<string[]> {
  const rows = await shelf.db.selectFrom('na_books').select(['id', 'title', 'tenant', 'shelf', 'author_id'])
    .orderBy('id').execute()
  return rows.map((row: any) => `${Number(row.id)}:${row.title}:${row.tenant}:${row.shelf}:${Number(row.author_id)}`)
}

/** How many statements the last {@link post} ran that read the books back as a relation. */
let reloaded = 0

async function post (shelf: Shelf, headers: Record<string, string>, payload: object) {
  shelf.queries.length = 0
  const response = await shelf.app.inject({ method: 'POST', url: '/authors', headers, payload })
  assert.equal(response.statusCode, 201, response.body)
  // The statements of the POST alone that read the books back as its relation.
  reloaded = reloads(shelf).length
  const read = await shelf.app.inject({ url: String(response.headers.location), headers })
  assert.equal(read.statusCode, 200, read.body)
  // The answer is what GET answers the same caller.
  assert.deepEqual(response.json(), read.json())
  return response.json()
}

for (const dialect of dialects) {
  describe(`a nested POST's answer on ${dialect.name}`, () => {
    test('without a rule on the children, they are answered as written: nothing reads them again', async (t) => {
      const shelf = await shelfApp(t, dialect)
      const body = await post(shelf, t1, { name: 'a', books: [{ title: 'x', secret: 's' }, { title: 'y' }, { title: 'z' }] })
      assert.deepEqual(body.books, [
        { id: 1, title: 'x', tenant: 't1', shelf: 'open', secret: 's', author_id: 1 },
        { id: 2, title: 'y', tenant: 't1', shelf: 'open', secret: null, author_id: 1 },
        { id: 3, title: 'z', tenant: 't1', shelf: 'open', secret: null, author_id: 1 },
      ])
      assert.equal(reloaded, 0, shelf.queries.join('\n'))
      assert.deepEqual(await booksIn(shelf), ['1:x:t1:open:1', '2:y:t1:open:1', '3:z:t1:open:1'])
    })

    test('the relation\'s limit applies to the children answered as written', async (t) => {
      const shelf = await shelfApp(t, dialect, {}, 2)
      const body = await post(shelf, t1, { name: 'a', books: [{ title: 'x' }, { title: 'y' }, { title: 'z' }] })
      assert.deepEqual(body.books.map((book: any) => book.title), ['x', 'y'])
      assert.equal(reloaded, 0, shelf.queries.join('\n'))
      assert.deepEqual(await booksIn(shelf), ['1:x:t1:open:1', '2:y:t1:open:1', '3:z:t1:open:1'])
    })

    test('with a row rule, the children are read again under it; each tenant sees its own', async (t) => {
      // LIST (the relation's load) shows the tenant's open books; POST checks the tenant only.
      const scope = (eb: any, { request, method }: any) => method === 'LIST'
        ? eb.and([eb('tenant', '=', tenantOf(request)), eb('shelf', '=', 'open')])
        : eb('tenant', '=', tenantOf(request))
      const shelf = await shelfApp(t, dialect, { scope })
      const first = await post(shelf, t1, { name: 'a', books: [{ title: 'x' }, { title: 'y', shelf: 'archived' }] })
      assert.deepEqual(first.books.map((book: any) => [book.title, book.tenant]), [['x', 't1']])
      assert.ok(reloaded > 0, shelf.queries.join('\n'))
      const second = await post(shelf, t2, { name: 'b', books: [{ title: 'v' }, { title: 'w' }] })
      assert.deepEqual(second.books.map((book: any) => [book.title, book.tenant]), [['v', 't2'], ['w', 't2']])
      assert.deepEqual(await booksIn(shelf),
        ['1:x:t1:open:1', '2:y:t1:archived:1', '3:v:t2:open:2', '4:w:t2:open:2'])
    })

    test('with a field rule, the children are read again and its hidden fields left out', async (t) => {
      const fieldAccess = ({ request }: any) => (tenantOf(request) === 't2' ? { hidden: ['secret'] } : {})
      const shelf = await shelfApp(t, dialect, { fieldAccess })
      const hidden = await post(shelf, t2, { name: 'b', books: [{ title: 'v' }] })
      assert.deepEqual(hidden.books, [{ id: 1, title: 'v', tenant: 't2', shelf: 'open', author_id: 1 }])
      assert.ok(reloaded > 0, shelf.queries.join('\n'))
      const shown = await post(shelf, t1, { name: 'a', books: [{ title: 'x', secret: 's' }] })
      assert.deepEqual(shown.books, [{ id: 2, title: 'x', tenant: 't1', shelf: 'open', secret: 's', author_id: 2 }])
    })

    test('a PATCH of the parent answers the children it had besides those it adds', async (t) => {
      const shelf = await shelfApp(t, dialect)
      await post(shelf, t1, { name: 'a', books: [{ title: 'x' }] })
      const response = await shelf.app.inject({
        method: 'PATCH', url: '/authors/1', headers: t1, payload: { books: [{ title: 'y' }] },
      })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json().books.map((book: any) => book.title), ['x', 'y'])
      assert.deepEqual(await booksIn(shelf), ['1:x:t1:open:1', '2:y:t1:open:1'])
    })

    test('a failing child rolls the parent and the children before it back', async (t) => {
      const shelf = await shelfApp(t, dialect)
      const response = await shelf.app.inject({
        method: 'POST', url: '/authors', headers: t1, payload: { name: 'a', books: [{ title: 'x' }, { title: 7 }] },
      })
      assert.equal(response.statusCode, 400, response.body)
      assert.deepEqual(response.json().errors.map((error: any) => error.field), ['/books/1/title'])
      assert.deepEqual(await booksIn(shelf), [])
      assert.equal((await shelf.db.selectFrom('na_authors').selectAll().execute()).length, 0)
    })
  })
}
