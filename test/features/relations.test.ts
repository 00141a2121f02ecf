import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { TObject } from '@sinclair/typebox'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { createViewset, viewsetDocs } from 'fastify-viewsets'
import type { RelatedConfig } from 'fastify-viewsets'
import { BatchedQuery } from '../../lib/relations/batched-query.js'
import { dialectOf } from '../../lib/dialect/pick-dialect.js'
import { build } from '../../examples/relations/app.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// ---- the library fixture: authors ← books → publishers, books ↔ tags through book_tags ----------

const Publisher = Type.Object({ id: Type.Integer(), name: Type.String() })
const Author = Type.Object({ id: Type.Integer(), name: Type.String() })
const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })

const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  author_id: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
const bookRelations: RelatedConfig = {
  selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } },
  prefetchRelated: {
    tags: {
      table: 'tags',
      through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' },
      orderBy: 'name',
    },
  },
}

/** A book as nested under its author: no foreign keys served, its publisher one level further down. */
const AuthorBook = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  publisher: Type.Optional(Type.Union([Publisher, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
const AuthorWithBooks = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  books: Type.Optional(Type.Array(AuthorBook)),
})
const authorRelations: RelatedConfig = {
  prefetchRelated: {
    books: {
      table: 'books',
      foreignKey: 'author_id',
      relatedConfig: {
        selectRelated: { publisher: { table: 'publishers', foreignKey: 'publisher_id' } },
        prefetchRelated: {
          tags: { table: 'tags', through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' } },
        },
      },
    },
  },
}

async function createLibrary (database: TestDatabase): Promise<void> {
  const { db, dialect } = database
  const [idType, id] = autoIncrement(dialect)
  for (const table of ['publishers', 'authors', 'tags']) {
    await db.schema
      .createTable(table)
      .addColumn('id', idType as 'integer', id)
      .addColumn('name', 'varchar(255)', (column) => column.notNull())
      .addColumn('secret', 'varchar(64)', (column) => column.notNull().defaultTo('s3cr3t'))
      .execute()
  }
  await db.schema
    .createTable('books')
    .addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(255)', (column) => column.notNull())
    .addColumn('author_id', 'integer', (column) => column.references('authors.id'))
    // bigint on purpose: pg returns it as a string while publishers.id comes as a number.
    .addColumn('publisher_id', 'bigint')
    .execute()
  await db.schema
    .createTable('book_tags')
    .addColumn('book_id', 'integer', (column) => column.notNull().references('books.id'))
    .addColumn('tag_id', 'integer', (column) => column.notNull().references('tags.id'))
    .addPrimaryKeyConstraint('book_tags_pk', ['book_id', 'tag_id'])
    .execute()
}

/**
 * `authors` authors with `perAuthor` books each; book n has publisher (n % 3) + 1 except every fifth
 * (NULL), and tags: none for every fourth book, else tag n % 5 + 1 and, for even n, tag 6.
 */
async function seedLibrary ({ db }: TestDatabase, authors: number, perAuthor: number): Promise<void> {
  await db
    .insertInto('publishers')
    .values([{ name: 'Penguin' }, { name: 'Faber' }, { name: 'Gallimard' }])
    .execute()
  await db
    .insertInto('tags')
    .values(['fiction', 'poetry', 'history', 'science', 'travel', 'classic'].map((name) => ({ name })))
    .execute()
  if (authors > 0) {
    await db
      .insertInto('authors')
      .values(Array.from({ length: authors }, (_, i) => ({ name: `Author ${i + 1}` })))
      .execute()
  }
  const books: Array<{ title: string; author_id: number; publisher_id: number | null }> = []
  for (let a = 1; a <= authors; a++) {
    for (let b = 0; b < perAuthor; b++) {
      const n = books.length + 1
      books.push({
        title: `Book ${String(n).padStart(3, '0')}`,
        author_id: a,
        publisher_id: n % 5 === 0 ? null : (n % 3) + 1,
      })
    }
  }
  if (books.length > 0) await db.insertInto('books').values(books).execute()
  const links: Array<{ book_id: number; tag_id: number }> = []
  for (let n = 1; n <= books.length; n++) {
    if (n % 4 === 0) continue
    links.push({ book_id: n, tag_id: (n % 5) + 1 })
    if (n % 2 === 0 && (n % 5) + 1 !== 6) links.push({ book_id: n, tag_id: 6 })
  }
  if (links.length > 0) await db.insertInto('book_tags').values(links).execute()
}

const tagNames = ['fiction', 'poetry', 'history', 'science', 'travel', 'classic']

/** The tags seedLibrary gives book n, ordered by name (as `bookRelations` asks) or by id (the default). */
function expectedTags (n: number, order: 'name' | 'id' = 'name'): Array<{ id: number; name: string }> {
  if (n % 4 === 0) return []
  const ids = [(n % 5) + 1]
  if (n % 2 === 0 && (n % 5) + 1 !== 6) ids.push(6)
  const tags = ids.map((id) => ({ id, name: tagNames[id - 1] as string }))
  return tags.sort(order === 'name' ? (a, b) => a.name.localeCompare(b.name) : (a, b) => a.id - b.id)
}

function expectedPublisher (n: number): { id: number; name: string } | null {
  if (n % 5 === 0) return null
  const id = (n % 3) + 1
  return { id, name: ['Penguin', 'Faber', 'Gallimard'][id - 1] as string }
}

interface LibraryOptions {
  books?: RelatedConfig | null
  authors?: RelatedConfig | null
  bookSchema?: TObject
  authorSchema?: TObject
  docs?: boolean
}

async function libraryApp (
  t: TestContext,
  dialect: TestDialect,
  authors: number,
  perAuthor: number,
  options: LibraryOptions = {}
) {
  const database = await testDatabase(t, dialect)
  await createLibrary(database)
  await seedLibrary(database, authors, perAuthor)
  const app = testApp(t)
  if (options.docs === true) await app.register(viewsetDocs, { title: 'Library' })
  const { db } = database
  const books = options.books === undefined ? bookRelations : options.books
  const authorsConfig = options.authors === undefined ? authorRelations : options.authors
  await app.register(
    createViewset({
      db,
      table: 'books',
      schema: options.bookSchema ?? Book,
      maxLimit: 100,
      ...(books === null ? {} : { relatedConfig: books }),
    }),
    { prefix: '/books' }
  )
  if (authorsConfig !== null) {
    await app.register(
      createViewset({
        db,
        table: 'authors',
        schema: options.authorSchema ?? AuthorWithBooks,
        relatedConfig: authorsConfig,
      }),
      { prefix: '/authors' }
    )
  }
  await app.ready()
  return { app, ...database }
}

/** Runs one request and returns its response with the SQL statements it ran. */
async function counted (database: { app: FastifyInstance; queries: string[] }, request: InjectOptions) {
  database.queries.length = 0
  const response = await database.app.inject(request)
  return { response, statements: [...database.queries] }
}

for (const dialect of dialects) {
  describe(`relations on ${dialect.name}`, () => {
    test('LIST books with author and tags runs 1 + 2 statements whatever the page size', async (t) => {
      const library = await libraryApp(t, dialect, 10, 5)
      const counts: number[] = []
      for (const size of [1, 10, 50]) {
        const { response, statements } = await counted(library, { method: 'GET', url: `/books?limit=${size}` })
        assert.equal(response.statusCode, 200)
        const body = response.json()
        assert.equal(body.length, size)
        for (const [index, book] of body.entries()) {
          const n = index + 1
          const authorId = Math.ceil(n / 5)
          assert.deepEqual(book, {
            id: n,
            title: `Book ${String(n).padStart(3, '0')}`,
            author_id: authorId,
            author: { id: authorId, name: `Author ${authorId}` },
            tags: expectedTags(n),
          })
        }
        counts.push(statements.length)
        assert.equal(statements.length, 3, statements.join('\n'))
        // Quotes differ by dialect (" or `): compare the SQL without them.
        const [, authors, tags] = statements.map((statement) => statement.replace(/["`]/g, ''))
        // SQLite joins from the page's keys as one JSON parameter; the others bind an IN list.
        if (dialect.name === 'sqlite') {
          assert.match(
            authors ?? '',
            /^select t.id, t.name from json_each\(\?\) as viewset_keys inner join authors as t on t.id = viewset_keys.value$/i
          )
          // The limited to-many relation reads each book's first tags by a correlated LIMIT (relation-limit.ts).
          assert.match(
            tags ?? '',
            /from json_each\(\?\) as viewset_keys inner join book_tags as viewset_j on viewset_j.book_id = viewset_keys.value and viewset_j.tag_id in \(select j.tag_id from book_tags as j inner join tags as t .* limit 100\)/i
          )
        } else if (dialect.name === 'postgres') {
          assert.match(authors ?? '', /from authors as t where t.id in \(/i)
          assert.match(tags ?? '', /inner join lateral \(select .* from book_tags as j inner join tags as t .* limit 100\)/i)
        } else {
          assert.match(authors ?? '', /from authors as t where t.id in \(/i)
          assert.match(tags ?? '', /from book_tags as j inner join tags as t .* where j.book_id in \(/i)
        }
      }
      assert.deepEqual(counts, [3, 3, 3], 'the number of statements does not grow with the page')
    })

    test('nested relatedConfig: authors → books → publisher and tags runs 1 + 1 + 2 statements whatever the page size', async (t) => {
      const library = await libraryApp(t, dialect, 50, 3)
      const counts: number[] = []
      for (const size of [1, 10, 50]) {
        const { response, statements } = await counted(library, { method: 'GET', url: `/authors?limit=${size}` })
        assert.equal(response.statusCode, 200)
        const body = response.json()
        assert.equal(body.length, size)
        for (const [index, author] of body.entries()) {
          const a = index + 1
          const books = [1, 2, 3].map((b) => {
            const n = (a - 1) * 3 + b
            return {
              id: n,
              title: `Book ${String(n).padStart(3, '0')}`,
              publisher: expectedPublisher(n),
              tags: expectedTags(n, 'id'),
            }
          })
          assert.deepEqual(author, { id: a, name: `Author ${a}`, books })
        }
        counts.push(statements.length)
        assert.equal(statements.length, 4, statements.join('\n'))
      }
      assert.deepEqual(counts, [4, 4, 4])
    })

    test('without relatedConfig the relation fields are absent and no extra statement runs', async (t) => {
      const Plain = Type.Object({
        id: Type.Optional(Type.Integer({ readOnly: true })),
        title: Type.String(),
        author_id: Type.Union([Type.Integer(), Type.Null()]),
      })
      const library = await libraryApp(t, dialect, 10, 5, { books: null, authors: null, bookSchema: Plain })
      for (const size of [1, 10, 50]) {
        const { response, statements } = await counted(library, { method: 'GET', url: `/books?limit=${size}` })
        assert.equal(response.statusCode, 200)
        const body = response.json()
        assert.equal(body.length, size)
        assert.deepEqual(Object.keys(body[0]).sort(), ['author_id', 'id', 'title'])
        assert.equal(statements.length, 1)
      }
      const { response, statements } = await counted(library, { method: 'GET', url: '/books/3' })
      assert.deepEqual(response.json(), { id: 3, title: 'Book 003', author_id: 1 })
      assert.equal(statements.length, 1)
    })

    test('a NULL foreign key gives null and keeps the row; no children give []', async (t) => {
      const library = await libraryApp(t, dialect, 2, 0)
      const { db } = library
      await db
        .insertInto('books')
        .values([
          { title: 'Anonymous', author_id: null },
          { title: 'Signed', author_id: 2 },
        ])
        .execute()
      const books = await counted(library, { method: 'GET', url: '/books' })
      assert.equal(books.response.statusCode, 200)
      assert.deepEqual(books.response.json(), [
        { id: 1, title: 'Anonymous', author_id: null, author: null, tags: [] },
        { id: 2, title: 'Signed', author_id: 2, author: { id: 2, name: 'Author 2' }, tags: [] },
      ])
      // No key at all: the relation runs no statement.
      const anonymous = await counted(library, { method: 'GET', url: '/books/1' })
      assert.deepEqual(anonymous.response.json(), {
        id: 1,
        title: 'Anonymous',
        author_id: null,
        author: null,
        tags: [],
      })
      assert.equal(anonymous.statements.length, 2, anonymous.statements.join('\n'))
      const authors = await counted(library, { method: 'GET', url: '/authors' })
      assert.deepEqual(authors.response.json(), [
        { id: 1, name: 'Author 1', books: [] },
        { id: 2, name: 'Author 2', books: [{ id: 2, title: 'Signed', publisher: null, tags: [] }] },
      ])
      // Authors, their books, and the books' tags; no publisher statement, as every publisher_id is NULL.
      assert.equal(authors.statements.length, 3, authors.statements.join('\n'))
      // An empty page runs only the page's statement.
      const empty = await counted(library, { method: 'GET', url: '/authors?offset=10' })
      assert.deepEqual(empty.response.json(), [])
      assert.equal(empty.statements.length, 1)
    })

    test('GET one loads its relations with one statement each', async (t) => {
      const library = await libraryApp(t, dialect, 2, 3)
      const { response, statements } = await counted(library, { method: 'GET', url: '/books/2' })
      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json(), {
        id: 2,
        title: 'Book 002',
        author_id: 1,
        author: { id: 1, name: 'Author 1' },
        tags: expectedTags(2),
      })
      assert.equal(statements.length, 3)
      const missing = await counted(library, { method: 'GET', url: '/books/999' })
      assert.equal(missing.response.statusCode, 404)
      assert.equal(missing.statements.length, 1)
    })

    test('POST, PUT and PATCH answer with the relations loaded; relation fields in a body are ignored', async (t) => {
      const library = await libraryApp(t, dialect, 2, 0)
      const { app, db } = library
      const created = await app.inject({
        method: 'POST',
        url: '/books',
        payload: { title: 'New', author_id: 1, author: { id: 2, name: 'Hijack' }, tags: [{ id: 1, name: 'x' }] },
      })
      assert.equal(created.statusCode, 201)
      assert.deepEqual(created.json(), {
        id: 1,
        title: 'New',
        author_id: 1,
        author: { id: 1, name: 'Author 1' },
        tags: [],
      })
      assert.equal(created.headers.location, '/books/1')
      await db
        .insertInto('book_tags')
        .values([
          { book_id: 1, tag_id: 2 },
          { book_id: 1, tag_id: 1 },
        ])
        .execute()

      const replaced = await app.inject({
        method: 'PUT',
        url: '/books/1',
        payload: { title: 'Renamed', author_id: 2, author: null, tags: [] },
      })
      assert.equal(replaced.statusCode, 200)
      const tags = [
        { id: 1, name: 'fiction' },
        { id: 2, name: 'poetry' },
      ]
      assert.deepEqual(replaced.json(), {
        id: 1,
        title: 'Renamed',
        author_id: 2,
        author: { id: 2, name: 'Author 2' },
        tags,
      })

      const patched = await app.inject({
        method: 'PATCH',
        url: '/books/1',
        payload: { author_id: null, author: { id: 1, name: 'Author 1' } },
      })
      assert.equal(patched.statusCode, 200)
      assert.deepEqual(patched.json(), { id: 1, title: 'Renamed', author_id: null, author: null, tags })

      // Nothing was written through the relation fields.
      assert.deepEqual(await db.selectFrom('authors').select(['id', 'name']).orderBy('id').execute(), [
        { id: 1, name: 'Author 1' },
        { id: 2, name: 'Author 2' },
      ])
      assert.equal((await db.selectFrom('book_tags').select('tag_id').execute()).length, 2)
      const author = await app.inject({
        method: 'POST',
        url: '/authors',
        payload: { name: 'Third', books: [{ id: 1, title: 'Stolen' }] },
      })
      assert.equal(author.statusCode, 201)
      assert.deepEqual(author.json(), { id: 3, name: 'Third', books: [] })
    })

    test('one-to-many children come in orderBy order, else by id; related rows carry only their schema fields', async (t) => {
      const byTitle: RelatedConfig = {
        prefetchRelated: { books: { table: 'books', foreignKey: 'author_id', orderBy: ['-title'] } },
      }
      const authorSchema = Type.Object({
        id: Type.Optional(Type.Integer()),
        name: Type.String(),
        books: Type.Array(Type.Object({ id: Type.Integer(), title: Type.String() })),
      })
      const library = await libraryApp(t, dialect, 1, 0, { authors: byTitle, authorSchema })
      await library.db
        .insertInto('books')
        .values([
          { title: 'B', author_id: 1, publisher_id: 1 },
          { title: 'C', author_id: 1 },
          { title: 'A', author_id: 1 },
        ])
        .execute()
      const response = await library.app.inject({ method: 'GET', url: '/authors/1' })
      // publisher_id and secret are never served: the nested schema does not have them.
      assert.deepEqual(response.json(), {
        id: 1,
        name: 'Author 1',
        books: [
          { id: 2, title: 'C' },
          { id: 1, title: 'B' },
          { id: 3, title: 'A' },
        ],
      })

      const t2 = await libraryApp(t, dialect, 1, 0, {
        authors: { prefetchRelated: { books: { table: 'books', foreignKey: 'author_id' } } },
        authorSchema,
      })
      await t2.db
        .insertInto('books')
        .values([
          { title: 'B', author_id: 1 },
          { title: 'C', author_id: 1 },
          { title: 'A', author_id: 1 },
        ])
        .execute()
      const byId = await t2.app.inject({ method: 'GET', url: '/authors/1' })
      assert.deepEqual(
        byId.json().books.map((book: { id: number }) => book.id),
        [1, 2, 3]
      )
    })

    test('children ordered by a nullable column put NULLs last ascending and first descending, as LIST does', async (t) => {
      const authorSchema = Type.Object({
        id: Type.Optional(Type.Integer()),
        name: Type.String(),
        books: Type.Array(Type.Object({ id: Type.Integer(), title: Type.String() })),
      })
      // With a limit the order goes into a window function; with `limit: false` into the statement's ORDER BY.
      for (const limit of [100, false] as const) {
        for (const [orderBy, expected] of [
          ['publisher_id', ['C', 'A', 'B', 'D']],
          ['-publisher_id', ['B', 'D', 'A', 'C']],
        ] as const) {
          const authors: RelatedConfig = {
            prefetchRelated: { books: { table: 'books', foreignKey: 'author_id', orderBy, limit } },
          }
          const library = await libraryApp(t, dialect, 1, 0, { authors, authorSchema })
          await library.db
            .insertInto('books')
            .values([
              { title: 'A', author_id: 1, publisher_id: 2 },
              { title: 'B', author_id: 1, publisher_id: null },
              { title: 'C', author_id: 1, publisher_id: 1 },
              { title: 'D', author_id: 1, publisher_id: null },
            ])
            .execute()
          const response = await library.app.inject({ method: 'GET', url: '/authors/1' })
          assert.equal(response.statusCode, 200)
          assert.deepEqual(
            response.json().books.map((book: { title: string }) => book.title),
            expected,
            `orderBy ${orderBy}, limit ${String(limit)}`
          )
        }
      }
    })

    test('a foreign key the schema does not serve is still read for the loader, never sent; ?fields= keeps relations', async (t) => {
      const Hidden = Type.Object({
        id: Type.Optional(Type.Integer({ readOnly: true })),
        title: Type.String(),
        author: Type.Optional(Type.Union([Author, Type.Null()])),
      })
      const library = await libraryApp(t, dialect, 2, 2, {
        bookSchema: Hidden,
        books: { selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } } },
      })
      const list = await counted(library, { method: 'GET', url: '/books?limit=3' })
      assert.deepEqual(
        list.response.json(),
        [1, 2, 3].map((n) => ({
          id: n,
          title: `Book 00${n}`,
          author: { id: Math.ceil(n / 2), name: `Author ${Math.ceil(n / 2)}` },
        }))
      )
      assert.equal(list.statements.length, 2)
      const one = await library.app.inject({ method: 'GET', url: '/books/4' })
      assert.deepEqual(one.json(), { id: 4, title: 'Book 004', author: { id: 2, name: 'Author 2' } })
      const picked = await library.app.inject({ method: 'GET', url: '/books?limit=2&fields=title,author' })
      assert.equal(picked.statusCode, 200)
      assert.deepEqual(picked.json(), [
        { title: 'Book 001', author: { id: 1, name: 'Author 1' } },
        { title: 'Book 002', author: { id: 1, name: 'Author 1' } },
      ])
      const created = await library.app.inject({ method: 'POST', url: '/books', payload: { title: 'Orphan' } })
      assert.equal(created.statusCode, 201)
      assert.deepEqual(created.json(), { id: 5, title: 'Orphan', author: null })
    })

    test('a relatedConfig attached to the schema works like the option', async (t) => {
      const Attached = Type.Object({ ...Book.properties }, { relatedConfig: bookRelations })
      const library = await libraryApp(t, dialect, 2, 2, { books: null, bookSchema: Attached })
      const { response, statements } = await counted(library, { method: 'GET', url: '/books?limit=4' })
      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json()[3], {
        id: 4,
        title: 'Book 004',
        author_id: 2,
        author: { id: 2, name: 'Author 2' },
        tags: [],
      })
      assert.equal(statements.length, 3)
    })

    test('a relatedConfig attached to a nested schema loads the next level', async (t) => {
      const AttachedBook = Object.assign(
        Type.Object({ id: Type.Integer(), title: Type.String(), publisher: Type.Union([Publisher, Type.Null()]) }),
        {
          relatedConfig: { selectRelated: { publisher: { table: 'publishers', foreignKey: 'publisher_id' } } },
        }
      )
      const authorSchema = Type.Object({
        id: Type.Optional(Type.Integer()),
        name: Type.String(),
        books: Type.Array(AttachedBook),
      })
      const library = await libraryApp(t, dialect, 3, 2, {
        authorSchema,
        authors: { prefetchRelated: { books: { table: 'books', foreignKey: 'author_id' } } },
      })
      const { response, statements } = await counted(library, { method: 'GET', url: '/authors' })
      assert.deepEqual(response.json()[2], {
        id: 3,
        name: 'Author 3',
        books: [
          { id: 5, title: 'Book 005', publisher: null },
          { id: 6, title: 'Book 006', publisher: expectedPublisher(6) },
        ],
      })
      assert.equal(statements.length, 3)
    })

    test('the served schema marks relation fields read-only and inlines the nested schemas', async (t) => {
      const library = await libraryApp(t, dialect, 1, 1, { docs: true })
      const document = (await library.app.inject({ method: 'GET', url: '/docs/json' })).json()
      const schemas = document.components.schemas
      assert.equal(schemas.Books.properties.author.readOnly, true)
      assert.deepEqual(schemas.Books.properties.author.anyOf[1], { type: 'null' })
      assert.equal(schemas.Books.properties.tags.readOnly, true)
      // The related schemas are inline: as components, nothing would reference them.
      assert.deepEqual(Object.keys(schemas.Books.properties.author.anyOf[0].properties), ['id', 'name'])
      assert.deepEqual(Object.keys(schemas.Books.properties.tags.items.properties), ['id', 'name'])
      assert.deepEqual(Object.keys(schemas.Authors.properties.books.items.properties), [
        'id',
        'title',
        'publisher',
        'tags',
      ])
      assert.deepEqual(Object.keys(schemas.Authors.properties.books.items.properties.publisher.anyOf[0].properties), [
        'id',
        'name',
      ])
      // Relations load by default: a whole row requires them.
      assert.ok(schemas.Books.required.includes('author') && schemas.Books.required.includes('tags'))
      assert.deepEqual(
        Object.keys(schemas)
          .filter((name) => /^(Books|Authors)/.test(name))
          .sort(),
        [
          'Authors',
          'AuthorsCreate',
          'AuthorsPartial',
          'AuthorsPatch',
          'AuthorsReplace',
          'Books',
          'BooksCreate',
          'BooksPartial',
          'BooksPatch',
          'BooksReplace',
        ]
      )
      assert.equal(JSON.stringify(document).includes('relatedConfig'), false, 'the declaration is not published')
      const create = schemas.BooksCreate
      assert.deepEqual(create.properties.author, { readOnly: true, description: 'Read-only: ignored when sent.' })
    })

    describe('a bad declaration fails app.ready() with a named error', () => {
      const BookWithAuthor = Type.Object({
        id: Type.Optional(Type.Integer()),
        title: Type.String(),
        author: Type.Optional(Type.Union([Author, Type.Null()])),
      })
      const BookWithTags = Type.Object({
        id: Type.Optional(Type.Integer()),
        title: Type.String(),
        tags: Type.Optional(Type.Array(Tag)),
      })
      const PlainBook = Type.Object({ id: Type.Optional(Type.Integer()), title: Type.String() })
      const tagsThrough = { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' }
      const cases: Array<[string, RelatedConfig, TObject, { code: string; message: RegExp }]> = [
        [
          'a missing table',
          { selectRelated: { author: { table: 'writers', foreignKey: 'author_id' } } },
          BookWithAuthor,
          { code: 'FST_VIEWSET_UNKNOWN_TABLE', message: /"writers"/ },
        ],
        [
          'a missing foreign key',
          { selectRelated: { author: { table: 'authors', foreignKey: 'writer_id' } } },
          BookWithAuthor,
          {
            code: 'FST_VIEWSET_INVALID_OPTION',
            message: /relatedConfig\.selectRelated\.author\.foreignKey: "writer_id" is not a column of table "books"/,
          },
        ],
        [
          'a missing referenced key',
          { selectRelated: { author: { table: 'authors', foreignKey: 'author_id', references: 'uuid' } } },
          BookWithAuthor,
          {
            code: 'FST_VIEWSET_INVALID_OPTION',
            message: /author\.references: "uuid" is not a column of table "authors"/,
          },
        ],
        [
          'a missing through table',
          { prefetchRelated: { tags: { table: 'tags', through: { ...tagsThrough, table: 'books_tags' } } } },
          BookWithTags,
          { code: 'FST_VIEWSET_UNKNOWN_TABLE', message: /"books_tags"/ },
        ],
        [
          'a missing through key',
          { prefetchRelated: { tags: { table: 'tags', through: { ...tagsThrough, sourceKey: 'book' } } } },
          BookWithTags,
          {
            code: 'FST_VIEWSET_INVALID_OPTION',
            message: /tags\.through\.sourceKey: "book" is not a column of table "book_tags"/,
          },
        ],
        [
          'an unknown orderBy field',
          { prefetchRelated: { tags: { table: 'tags', through: tagsThrough, orderBy: '-label' } } },
          BookWithTags,
          { code: 'FST_VIEWSET_INVALID_OPTION', message: /tags\.orderBy: "label" is not a column of table "tags"/ },
        ],
        [
          'a relation field that is not in the schema',
          { selectRelated: { writer: { table: 'authors', foreignKey: 'author_id' } } },
          PlainBook,
          {
            code: 'FST_VIEWSET_INVALID_OPTION',
            message: /selectRelated\.writer: "writer" is not a field of the schema/,
          },
        ],
        [
          'a field in both selectRelated and prefetchRelated',
          {
            selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } },
            prefetchRelated: { author: { table: 'authors', foreignKey: 'id' } },
          },
          BookWithAuthor,
          {
            code: 'FST_VIEWSET_INVALID_OPTION',
            message: /"author" is declared in both selectRelated and prefetchRelated/,
          },
        ],
        [
          'a to-many field under selectRelated',
          { selectRelated: { tags: { table: 'tags', foreignKey: 'author_id' } } },
          BookWithTags,
          { code: 'FST_VIEWSET_INVALID_OPTION', message: /selectRelated\.tags: schema field "tags" must be an object/ },
        ],
        [
          'prefetchRelated with neither foreignKey nor through',
          { prefetchRelated: { tags: { table: 'tags' } } },
          BookWithTags,
          { code: 'FST_VIEWSET_INVALID_OPTION', message: /prefetchRelated\.tags: give either foreignKey/ },
        ],
        [
          'a related schema field that is not a column of the related table',
          { selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } } },
          Type.Object({
            id: Type.Optional(Type.Integer()),
            title: Type.String(),
            author: Type.Union([Type.Object({ id: Type.Integer(), age: Type.Integer() }), Type.Null()]),
          }),
          { code: 'FST_VIEWSET_UNKNOWN_COLUMN', message: /"age" is not a column of table "authors"/ },
        ],
        [
          'a missing column in a nested relatedConfig',
          {
            prefetchRelated: {
              books: {
                table: 'books',
                foreignKey: 'author_id',
                relatedConfig: {
                  selectRelated: { publisher: { table: 'publishers', foreignKey: 'publisher' } },
                  prefetchRelated: { tags: { table: 'tags', through: tagsThrough } },
                },
              },
            },
          },
          AuthorWithBooks,
          {
            code: 'FST_VIEWSET_INVALID_OPTION',
            message:
              /relatedConfig\.prefetchRelated\.books\.relatedConfig\.selectRelated\.publisher\.foreignKey: "publisher" is not a column of table "books"/,
          },
        ],
        [
          'a nested relation field left undeclared',
          { prefetchRelated: { books: { table: 'books', foreignKey: 'author_id' } } },
          AuthorWithBooks,
          { code: 'FST_VIEWSET_UNKNOWN_COLUMN', message: /"publisher" is not a column of table "books"/ },
        ],
      ]
      for (const [name, relatedConfig, schema, expected] of cases) {
        test(name, async (t) => {
          const database = await testDatabase(t, dialect)
          await createLibrary(database)
          const app = testApp(t)
          const table = schema === AuthorWithBooks ? 'authors' : 'books'
          await assert.rejects(async () => {
            await app.register(createViewset({ db: database.db, table, schema, relatedConfig }), { prefix: '/x' })
            await app.ready()
          }, expected)
        })
      }
    })

    test('examples/relations: migrates, seeds and serves every resource with one statement per relation per level', async (t) => {
      const database = await testDatabase(t, dialect)
      const app = await build({ db: database.db })
      t.after(() => app.close())
      await app.ready()
      const expected: Array<[string, number]> = [
        ['/books?limit=100', 4],
        ['/authors?limit=100', 4],
        ['/tags?limit=100', 2],
        ['/publishers?limit=100', 2],
        ['/books/1', 4],
        ['/books/12', 3],
      ] // book 12 has no author: no key, no statement
      for (const [url, count] of expected) {
        const { response, statements } = await counted({ app, queries: database.queries }, { method: 'GET', url })
        assert.equal(response.statusCode, 200, url)
        assert.equal(statements.length, count, `${url}\n${statements.join('\n')}`)
      }
      const books = (await app.inject({ method: 'GET', url: '/books?limit=100' })).json()
      assert.equal(books.length, 12)
      assert.deepEqual(books[11], {
        id: 12,
        title: 'Beowulf',
        year: 1000,
        author_id: null,
        publisher_id: 2,
        author: null,
        publisher: { id: 2, name: 'Faber & Faber' },
        tags: [
          { id: 6, name: 'classic' },
          { id: 3, name: 'poetry' },
        ],
      })
      const authors = (await app.inject({ method: 'GET', url: '/authors?limit=100' })).json()
      assert.deepEqual(
        authors[0].books.map((book: { year: number }) => book.year),
        [1968, 1969, 1974]
      )
      assert.deepEqual(authors[0].books[0].tags, [{ id: 1, name: 'fiction' }])
      assert.deepEqual(authors[4], { id: 5, name: 'A. Nonymous', country: null, books: [] })
      const poetry = (await app.inject({ method: 'GET', url: '/tags/3' })).json()
      assert.deepEqual(
        poetry.books.map((book: { title: string }) => book.title),
        ['Beowulf', 'Map: Collected and Last Poems', 'View with a Grain of Sand']
      )
      const faber = (await app.inject({ method: 'GET', url: '/publishers/2' })).json()
      assert.deepEqual(faber.books, [
        { id: 7, title: 'View with a Grain of Sand' },
        { id: 12, title: 'Beowulf' },
      ])
    })

    test('batched statements split key lists above 1024 and keep one SQL text per size bucket', async (t) => {
      const database = await testDatabase(t, dialect)
      await createLibrary(database)
      const { db } = database
      const names = Array.from({ length: 1500 }, (_, i) => ({ name: `Tag ${i + 1}` }))
      for (let i = 0; i < names.length; i += 500) {
        await db
          .insertInto('tags')
          .values(names.slice(i, i + 500))
          .execute()
      }
      const query = new BatchedQuery(db as never, await dialectOf(db as never), (keyed) =>
        keyed('tags', 't', 'id').select(['t.id', 't.name'])
      )
      database.queries.length = 0
      const rows = await query.run(
        db as never,
        Array.from({ length: 1500 }, (_, i) => i + 1)
      )
      assert.equal(rows.length, 1500)
      assert.equal(database.queries.length, 2)
      assert.equal(query.sqlFor(3), query.sqlFor(4))
      assert.notEqual(query.sqlFor(4), query.sqlFor(5))
      database.queries.length = 0
      const padded = await query.run(db as never, [7, 3, 5])
      assert.deepEqual(
        padded.map((row) => row.id).sort((a, b) => Number(a) - Number(b)),
        [3, 5, 7]
      )
      // SQLite joins from the keys as one JSON parameter; the others bind an IN list padded to its bucket.
      const plain = () => (database.queries[0] ?? '').replace(/["`]/g, '').replace(/\$\d+/g, '?')
      assert.match(
        plain(),
        dialect.name === 'sqlite'
          ? /from json_each\(\?\) as viewset_keys inner join tags as t/
          : /t\.id in \(\?, \?, \?, \?\)/
      )
      if (dialect.name === 'sqlite') {
        // Keys JSON cannot carry exactly (a fraction, a blob) fall back to the IN list.
        database.queries.length = 0
        assert.deepEqual(
          (await query.run(db as never, [2, 1.5])).map((row) => row.id),
          [2]
        )
        // Compared as +? (the SQLite dialect's statementPlugin, sqlite-stable-plans.ts).
        assert.match(plain(), /t\.id in \(\+\?, \+\?\)/)
      }
    })

    test('relations load by text keys, quotes and non-ASCII included', async (t) => {
      const database = await testDatabase(t, dialect)
      const { db } = database
      await db.schema
        .createTable('rel_langs')
        .addColumn('code', 'varchar(20)', (column) => column.primaryKey())
        .addColumn('name', 'varchar(50)', (column) => column.notNull())
        .execute()
      await db.schema
        .createTable('rel_words')
        .addColumn('id', 'integer', (column) => column.primaryKey())
        .addColumn('lang', 'varchar(20)', (column) => column.notNull())
        .addColumn('word', 'varchar(50)', (column) => column.notNull())
        .execute()
      const langs = [
        { code: 'en', name: 'English' },
        { code: 'fr"\\', name: 'Quoted' },
        { code: 'ελ', name: 'Greek' },
        { code: '12', name: 'Digits' },
      ]
      await db
        .insertInto('rel_langs' as never)
        .values(langs as never)
        .execute()
      await db
        .insertInto('rel_words' as never)
        .values([
          { id: 1, lang: 'ελ', word: 'λόγος' },
          { id: 2, lang: 'fr"\\', word: 'mot' },
          { id: 3, lang: 'en', word: 'word' },
          { id: 4, lang: '12', word: 'twelve' },
          { id: 5, lang: 'en', word: 'term' },
        ] as never)
        .execute()
      const Lang = Type.Object({ code: Type.String(), name: Type.String() })
      const Word = Type.Object({
        id: Type.Integer(),
        lang: Type.String(),
        word: Type.String(),
        language: Type.Optional(Type.Union([Lang, Type.Null()])),
      })
      const LangWithWords = Type.Object({
        ...Lang.properties,
        words: Type.Optional(Type.Array(Type.Object({ id: Type.Integer(), word: Type.String() }))),
      })
      const app = testApp(t)
      await app.register(
        createViewset({
          db,
          table: 'rel_words',
          schema: Word,
          // Read-only: the keys are not AUTO_INCREMENT, so MySQL could not read a POSTed row back.
          methods: ['LIST', 'GET'],
          orderingFields: ['id'],
          relatedConfig: {
            selectRelated: { language: { table: 'rel_langs', foreignKey: 'lang', references: 'code' } },
          },
        }),
        { prefix: '/words' }
      )
      await app.register(
        createViewset({
          db,
          table: 'rel_langs',
          schema: LangWithWords,
          primaryKey: 'code',
          methods: ['LIST', 'GET'],
          orderingFields: ['name'],
          relatedConfig: {
            prefetchRelated: { words: { table: 'rel_words', foreignKey: 'lang', references: 'code', orderBy: '-id' } },
          },
        }),
        { prefix: '/langs' }
      )
      const words = await app.inject({ method: 'GET', url: '/words?order_by=id' })
      assert.equal(words.statusCode, 200, words.body)
      assert.deepEqual(
        words.json().map((word: { id: number; language: { name: string } | null }) => [word.id, word.language?.name]),
        [
          [1, 'Greek'],
          [2, 'Quoted'],
          [3, 'English'],
          [4, 'Digits'],
          [5, 'English'],
        ]
      )
      const byLang = await app.inject({ method: 'GET', url: '/langs?order_by=name' })
      assert.equal(byLang.statusCode, 200, byLang.body)
      assert.deepEqual(
        byLang
          .json()
          .map((lang: { code: string; words: Array<{ id: number }> }) => [
            lang.code,
            lang.words.map((word) => word.id),
          ]),
        [
          ['12', [4]],
          ['en', [5, 3]],
          ['ελ', [1]],
          ['fr"\\', [2]],
        ]
      )
    })
  })
}
