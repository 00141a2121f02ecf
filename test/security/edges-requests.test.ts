import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { InjectOptions } from 'fastify'
import { createViewset } from 'fastify-viewsets'
import type { RelatedConfig } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

// ---- a small library: authors ← books, books ↔ tags through book_tags ---------------------------

const Author = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  pages: Type.Optional(Type.Integer()),
  author_id: Type.Union([Type.Integer(), Type.Null()]),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
const bookRelations: RelatedConfig = {
  selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } },
  prefetchRelated: { tags: { table: 'tags', through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' } } },
}

type OnDelete = 'restrict' | 'no action' | undefined

async function createLibrary ({ db, dialect }: TestDatabase, onDelete: OnDelete = undefined): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  for (const table of ['authors', 'tags']) {
    await db.schema.createTable(table)
      .addColumn('id', idType as 'integer', id)
      .addColumn('name', 'varchar(255)', (column) => column.notNull())
      .execute()
  }
  await db.schema.createTable('books')
    .addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(255)', (column) => column.notNull())
    .addColumn('pages', 'integer', (column) => column.notNull().defaultTo(100))
    .addColumn('author_id', 'integer')
    // A table constraint, not an inline REFERENCES: MySQL ignores the inline form.
    .addForeignKeyConstraint('books_author_fk', ['author_id'], 'authors', ['id'], (fk) => onDelete === undefined ? fk : fk.onDelete(onDelete))
    .execute()
  await db.schema.createTable('book_tags')
    .addColumn('book_id', 'integer', (column) => column.notNull())
    .addColumn('tag_id', 'integer', (column) => column.notNull())
    .addPrimaryKeyConstraint('book_tags_pk', ['book_id', 'tag_id'])
    .addForeignKeyConstraint('book_tags_book_fk', ['book_id'], 'books', ['id'])
    .addForeignKeyConstraint('book_tags_tag_fk', ['tag_id'], 'tags', ['id'])
    .execute()
  await db.insertInto('authors').values([{ name: 'Austen' }, { name: 'Borges' }]).execute()
  await db.insertInto('tags').values([{ name: 'classic' }, { name: 'poetry' }]).execute()
  await db.insertInto('books').values([{ title: 'Emma', author_id: 1 }, { title: 'Ficciones', author_id: 2 }]).execute()
  await db.insertInto('book_tags').values([{ book_id: 1, tag_id: 1 }, { book_id: 2, tag_id: 2 }]).execute()
}

async function libraryApp (t: TestContext, dialect: TestDialect, onDelete?: OnDelete) {
  const database = await testDatabase(t, dialect)
  await createLibrary(database, onDelete)
  const app = testApp(t)
  const { db } = database
  await app.register(createViewset({ db, table: 'authors', schema: Author }), { prefix: '/authors' })
  await app.register(createViewset({ db, table: 'books', schema: Book, relatedConfig: bookRelations }), { prefix: '/books' })
  await app.ready()
  return { app, ...database }
}

async function itemsApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  const app = testApp(t)
  await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
  await app.ready()
  await database.db.insertInto('items').values([{ name: 'Bread', price: 2 }, { name: 'Milk', price: 1 }]).execute()
  return { app, ...database }
}

/** Runs one request and returns its response with the SQL statements it ran (quotes removed). */
async function counted (database: { app: TestApp, queries: string[] }, request: InjectOptions) {
  database.queries.length = 0
  const response = await database.app.inject(request)
  return { response, statements: database.queries.map((text) => text.replace(/["`]/g, '')) }
}
type TestApp = Awaited<ReturnType<typeof itemsApp>>['app']

for (const dialect of dialects) {
  describe(`request edges on ${dialect.name}`, () => {
    // ---- item 5: foreign keys ------------------------------------------------------------------
    for (const onDelete of ['restrict', 'no action', undefined] as const) {
      test(`a foreign key (${onDelete ?? 'default'}) answers 409 on DELETE and on writes`, async (t) => {
        const { app, db } = await libraryApp(t, dialect, onDelete)
        const deleted = await app.inject({ method: 'DELETE', url: '/authors/1' })
        assert.equal(deleted.statusCode, 409, deleted.body)
        const problem = problemOf(deleted)
        assert.equal(problem.code, 'FST_VIEWSET_CONFLICT')
        assert.equal(problem.detail, 'The row is still referenced by other rows')
        assert.equal(await db.selectFrom('authors').select('id').where('id', '=', 1).executeTakeFirst() !== undefined, true, 'the author stays')

        for (const request of [
          { method: 'POST', url: '/books', payload: { title: 'Nobody', author_id: 999 } },
          { method: 'PUT', url: '/books/1', payload: { title: 'Emma', author_id: 999 } },
          { method: 'PATCH', url: '/books/1', payload: { author_id: 999 } },
        ] as const) {
          const response = await app.inject(request)
          assert.equal(response.statusCode, 409, `${request.method}: ${response.body}`)
          const written = problemOf(response)
          assert.equal(written.code, 'FST_VIEWSET_CONFLICT')
          assert.equal(written.detail.includes('999'), false, written.detail)
          // SQLite does not say which column; the others do.
          if (dialect.name !== 'sqlite') assert.match(written.detail, /author_id refers to a row that does not exist/)
        }
        const emma = await db.selectFrom('books').select('author_id').where('id', '=', 1).executeTakeFirst()
        assert.equal(emma?.author_id, 1)
      })
    }

    // ---- item 6: ?fields= names ----------------------------------------------------------------
    test('?fields= takes only the schema\'s own field names, exact and case-sensitive', async (t) => {
      const { app } = await itemsApp(t, dialect)
      for (const url of ['/items', '/items/1']) {
        for (const fields of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'Name', 'name,', ',', 'secret']) {
          const response = await app.inject({ method: 'GET', url: `${url}?fields=${encodeURIComponent(fields)}` })
          assert.equal(response.statusCode, 400, `${url} ${fields}: ${response.body}`)
          const problem = problemOf(response)
          assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
          assert.equal(problem.errors?.[0]?.field, 'fields')
          const named = fields.split(',').find((name) => name !== 'name') ?? ''
          assert.ok(problem.detail.includes(JSON.stringify(named)), problem.detail)
        }
        const empty = await app.inject({ method: 'GET', url: `${url}?fields=` })
        assert.equal(empty.statusCode, 400)
        assert.equal(problemOf(empty).errors?.[0]?.field, 'fields')
      }
    })

    // ---- item 7: GET's query string --------------------------------------------------------------
    test('GET by id takes ?fields= as LIST does', async (t) => {
      const { app } = await itemsApp(t, dialect)
      const one = await app.inject({ method: 'GET', url: '/items/1?fields=price,name' })
      assert.equal(one.statusCode, 200, one.body)
      assert.match(String(one.headers['content-type']), /^application\/json/)
      assert.deepEqual(one.json(), { name: 'Bread', price: 2 })
      const list = await app.inject({ method: 'GET', url: '/items?fields=price,name&limit=1' })
      assert.deepEqual(list.json(), [one.json()])
      const missing = await app.inject({ method: 'GET', url: '/items/99?fields=name' })
      assert.equal(missing.statusCode, 404)
      assert.equal(problemOf(missing).code, 'FST_VIEWSET_NOT_FOUND')
    })

    test('every generated route rejects unknown query parameters and changes nothing', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const before = await db.selectFrom('items').selectAll().orderBy('id').execute()
      for (const request of [
        { method: 'GET', url: '/items?bogus=1' },
        { method: 'GET', url: '/items/1?bogus=1' },
        { method: 'POST', url: '/items?bogus=1', payload: { name: 'Cheese' } },
        { method: 'PUT', url: '/items/1?bogus=1', payload: { name: 'Rye' } },
        { method: 'PATCH', url: '/items/1?bogus=1', payload: { price: 9 } },
        { method: 'DELETE', url: '/items/1?bogus=1' },
        { method: 'DELETE', url: '/items/1?fields=name' },
      ] as const) {
        const response = await app.inject(request)
        assert.equal(response.statusCode, 400, `${request.method} ${request.url}: ${response.body}`)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
        const field = request.url.split('?')[1]?.split('=')[0]
        assert.deepEqual(problem.errors, [{ in: 'querystring', field, message: 'is not a supported query parameter' }])
      }
      assert.deepEqual(await db.selectFrom('items').selectAll().orderBy('id').execute(), before)
    })

    // ---- item 8: ?fields= reads less -----------------------------------------------------------
    test('?fields= selects only the chosen columns and loads only the chosen relations', async (t) => {
      const library = await libraryApp(t, dialect)
      for (const base of ['/books', '/books/1']) {
        const plain = await counted(library, { method: 'GET', url: `${base}?fields=title` })
        assert.equal(plain.response.statusCode, 200, plain.response.body)
        assert.equal(plain.statements.length, 1, plain.statements.join('\n'))
        assert.match(plain.statements[0] as string, /^select title from books/i)

        const author = await counted(library, { method: 'GET', url: `${base}?fields=author,title` })
        assert.equal(author.response.statusCode, 200)
        const expected = { title: 'Emma', author: { id: 1, name: 'Austen' } }
        assert.deepEqual(base === '/books' ? author.response.json()[0] : author.response.json(), expected)
        assert.equal(author.statements.length, 2, author.statements.join('\n'))
        assert.match(author.statements[0] as string, /^select title, author_id from books/i)
        assert.match(author.statements[1] as string, /(from|join) authors as t/i)

        const tags = await counted(library, { method: 'GET', url: `${base}?fields=tags` })
        assert.deepEqual(base === '/books' ? tags.response.json()[0] : tags.response.json(), { tags: [{ id: 1, name: 'classic' }] })
        assert.equal(tags.statements.length, 2, tags.statements.join('\n'))
        assert.match(tags.statements[0] as string, /^select id from books/i)
        assert.match(tags.statements[1] as string, /book_tags/i)

        const all = await counted(library, { method: 'GET', url: base })
        assert.equal(all.statements.length, 3, all.statements.join('\n'))
      }
    })

    test('fields=a,b and fields=b,a share one compiled statement', async (t) => {
      const library = await libraryApp(t, dialect)
      const first = await counted(library, { method: 'GET', url: '/books?fields=title,pages' })
      const second = await counted(library, { method: 'GET', url: '/books?fields=pages,title' })
      assert.deepEqual(first.response.json(), second.response.json())
      assert.deepEqual(first.statements, second.statements)
    })

    // ---- item 9: no body --------------------------------------------------------------------------
    test('an absent or empty body on GET, LIST and DELETE is ignored whatever the Content-Type', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      for (const contentType of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) {
        for (const payload of [undefined, '']) {
          const headers = { 'content-type': contentType }
          const list = await app.inject({ method: 'GET', url: '/items', headers, ...(payload === undefined ? {} : { payload }) })
          assert.equal(list.statusCode, 200, list.body)
          const one = await app.inject({ method: 'GET', url: '/items/1', headers, ...(payload === undefined ? {} : { payload }) })
          assert.equal(one.statusCode, 200, one.body)
        }
      }
      const deleted = await app.inject({ method: 'DELETE', url: '/items/1', headers: { 'content-type': 'application/json' } })
      assert.equal(deleted.statusCode, 204, deleted.body)
      const empty = await app.inject({ method: 'DELETE', url: '/items/2', headers: { 'content-type': 'application/json' }, payload: '' })
      assert.equal(empty.statusCode, 204, empty.body)
      assert.equal((await db.selectFrom('items').select('id').execute()).length, 0)
      // A body that is there is still parsed: bad JSON stays a 400.
      await db.insertInto('items').values({ name: 'Tea' }).execute()
      const bad = await app.inject({ method: 'DELETE', url: '/items/3', headers: { 'content-type': 'application/json' }, payload: '{' })
      assert.equal(bad.statusCode, 400)
      assert.equal(problemOf(bad).code, 'FST_VIEWSET_INVALID_BODY')
    })

    // ---- item 10: wrong method ----------------------------------------------------------------
    test('a wrong method on a known path answers 405 with Allow; OPTIONS answers 204 with Allow', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      for (const [method, url, allow] of [
        ['PUT', '/items', 'GET, HEAD, POST, OPTIONS'],
        ['DELETE', '/items', 'GET, HEAD, POST, OPTIONS'],
        ['PATCH', '/items', 'GET, HEAD, POST, OPTIONS'],
        ['POST', '/items/1', 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS'],
      ] as const) {
        const response = await app.inject({ method, url, payload: { name: 'x' } })
        assert.equal(response.statusCode, 405, `${method} ${url}: ${response.body}`)
        assert.equal(response.headers.allow, allow)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_METHOD_NOT_ALLOWED')
        assert.equal(problem.status, 405)
        assert.equal(problem.title, 'Method Not Allowed')
      }
      assert.equal((await db.selectFrom('items').select('id').execute()).length, 2, 'nothing changed')
      for (const [url, allow] of [['/items', 'GET, HEAD, POST, OPTIONS'], ['/items/1', 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS']] as const) {
        const options = await app.inject({ method: 'OPTIONS', url })
        assert.equal(options.statusCode, 204, options.body)
        assert.equal(options.headers.allow, allow)
        assert.equal(options.body, '')
      }
      const head = await app.inject({ method: 'HEAD', url: '/items/1' })
      assert.equal(head.statusCode, 200)
      assert.equal(head.body, '')
      const headList = await app.inject({ method: 'HEAD', url: '/items' })
      assert.equal(headList.statusCode, 200)
      const unknown = await app.inject({ method: 'GET', url: '/items/1/nothing' })
      assert.equal(unknown.statusCode, 404)
    })

    test('Allow lists only the methods registered', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item, methods: ['LIST', 'GET'] }), { prefix: '/items' })
      const post = await app.inject({ method: 'POST', url: '/items', payload: { name: 'x' } })
      assert.equal(post.statusCode, 405)
      assert.equal(post.headers.allow, 'GET, HEAD, OPTIONS')
      const del = await app.inject({ method: 'DELETE', url: '/items/1' })
      assert.equal(del.statusCode, 405)
      assert.equal(del.headers.allow, 'GET, HEAD, OPTIONS')

      // A path the viewset serves nothing on is not a known path.
      const listOnly = testApp(t)
      await listOnly.register(createViewset({ db: database.db, table: 'items', schema: Item, methods: ['LIST'] }), { prefix: '/items' })
      const element = await listOnly.inject({ method: 'DELETE', url: '/items/1' })
      assert.equal(element.statusCode, 404)
      assert.equal(problemOf(element).code, 'FST_VIEWSET_ROUTE_NOT_FOUND')
      const collection = await listOnly.inject({ method: 'POST', url: '/items', payload: {} })
      assert.equal(collection.statusCode, 405)
      assert.equal(collection.headers.allow, 'GET, HEAD, OPTIONS')
    })

    test('OPTIONS handled by another plugin (a CORS preflight hook, a wildcard route) wins', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      // What @fastify/cors does: an onRequest hook that answers preflights, and an OPTIONS * route.
      app.addHook('onRequest', async (request, reply) => {
        if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
          await reply.header('access-control-allow-origin', '*').header('access-control-allow-methods', 'GET,POST').code(204).send()
        }
      })
      app.options('*', async (_request, reply) => await reply.header('x-handled-by', 'wildcard').code(200).send('wildcard'))
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      const preflight = await app.inject({ method: 'OPTIONS', url: '/items/1', headers: { origin: 'https://example.com', 'access-control-request-method': 'DELETE' } })
      assert.equal(preflight.statusCode, 204)
      assert.equal(preflight.headers['access-control-allow-origin'], '*')
      const plain = await app.inject({ method: 'OPTIONS', url: '/items' })
      assert.equal(plain.statusCode, 200)
      assert.equal(plain.headers['x-handled-by'], 'wildcard')
      const get = await app.inject({ method: 'GET', url: '/items' })
      assert.equal(get.statusCode, 200)
      const wrong = await app.inject({ method: 'PUT', url: '/items' })
      assert.equal(wrong.statusCode, 405)
    })
  })
}
