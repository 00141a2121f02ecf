import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from 'fastify-viewsets'
import type { RelatedConfig } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// Relation fan-out is bounded (issue 12): a to-many relation keeps the first `limit` children of each
// parent in its orderBy (default 100), still in one statement per relation per level.

const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({ id: Type.Integer(), title: Type.String(), year: Type.Integer() })
const Author = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  books: Type.Optional(Type.Array(Book)),
})
const TaggedBook = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  tags: Type.Optional(Type.Array(Tag)),
})

/** The prolific author's book count; book n of author 1 is from 1900 + (n × 37) mod 150: every year once, out of id
 * order. */
const many = 150
const yearOf = (n: number) => 1900 + ((n * 37) % many)
/** Tag n is named `tag` + (n × 37) mod 150, so name order differs from id order. */
const tagName = (n: number) => `tag ${String((n * 37) % many).padStart(3, '0')}`

async function createShelf (database: TestDatabase): Promise<void> {
  const { db, dialect } = database
  const [idType, id] = autoIncrement(dialect)
  await db.schema
    .createTable('authors')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(255)', (column) => column.notNull())
    .execute()
  await db.schema
    .createTable('books')
    .addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(255)', (column) => column.notNull())
    .addColumn('year', 'integer', (column) => column.notNull())
    .addColumn('author_id', 'integer', (column) => column.references('authors.id'))
    .execute()
  await db.schema
    .createTable('tags')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(255)', (column) => column.notNull())
    .execute()
  await db.schema
    .createTable('book_tags')
    .addColumn('book_id', 'integer', (column) => column.notNull().references('books.id'))
    .addColumn('tag_id', 'integer', (column) => column.notNull().references('tags.id'))
    .addPrimaryKeyConstraint('book_tags_pk', ['book_id', 'tag_id'])
    .execute()
  await db
    .insertInto('authors')
    .values([{ name: 'Prolific' }, { name: 'Sparse' }, { name: 'Silent' }])
    .execute()
  // Books 1..150 are author 1's, 151..153 author 2's; author 3 has none.
  const books = Array.from({ length: many }, (_, i) => ({ title: `Book ${i + 1}`, year: yearOf(i + 1), author_id: 1 }))
  books.push(...[2001, 1999, 2000].map((year, i) => ({ title: `Sparse ${i + 1}`, year, author_id: 2 })))
  await db.insertInto('books').values(books).execute()
  await db
    .insertInto('tags')
    .values(Array.from({ length: many }, (_, i) => ({ name: tagName(i + 1) })))
    .execute()
  // Book 1 has every tag, book 2 has tags 1 and 2.
  const links = Array.from({ length: many }, (_, i) => ({ book_id: 1, tag_id: i + 1 }))
  links.push({ book_id: 2, tag_id: 2 }, { book_id: 2, tag_id: 1 })
  await db.insertInto('book_tags').values(links).execute()
}

/** Author 1's books, newest first (the relation's orderBy `-year`), as served. */
function newestBooks (count: number) {
  const books = Array.from({ length: many }, (_, i) => ({ id: i + 1, title: `Book ${i + 1}`, year: yearOf(i + 1) }))
  return books.sort((a, b) => b.year - a.year).slice(0, count)
}

/** Book 1's tags by name, as served. */
function tagsByName (count: number) {
  const tags = Array.from({ length: many }, (_, i) => ({ id: i + 1, name: tagName(i + 1) }))
  return tags.sort((a, b) => (a.name < b.name ? -1 : 1)).slice(0, count)
}

interface Limits {
  books?: number | false
  tags?: number | false
}

async function shelfApp (t: TestContext, dialect: TestDialect, limits: Limits = {}) {
  const database = await testDatabase(t, dialect)
  await createShelf(database)
  const { db } = database
  const authors: RelatedConfig = {
    prefetchRelated: {
      books: {
        table: 'books',
        foreignKey: 'author_id',
        orderBy: '-year',
        ...(limits.books === undefined ? {} : { limit: limits.books }),
      },
    },
  }
  const tagged: RelatedConfig = {
    prefetchRelated: {
      tags: {
        table: 'tags',
        through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' },
        orderBy: 'name',
        ...(limits.tags === undefined ? {} : { limit: limits.tags }),
      },
    },
  }
  const app = testApp(t)
  await app.register(createViewset({ db, table: 'authors', schema: Author, relatedConfig: authors }), {
    prefix: '/authors',
  })
  await app.register(createViewset({ db, table: 'books', schema: TaggedBook, relatedConfig: tagged }), {
    prefix: '/books',
  })
  await app.ready()
  return { app, ...database }
}

/** Runs a GET and returns its body with the SQL statements it ran. */
async function counted (shelf: Awaited<ReturnType<typeof shelfApp>>, url: string) {
  shelf.queries.length = 0
  const response = await shelf.app.inject(url)
  assert.equal(response.statusCode, 200, response.body)
  return { body: response.json(), statements: [...shelf.queries] }
}

for (const dialect of dialects) {
  // PostgreSQL and SQLite read at most `limit` children per parent in one statement (a LATERAL join, a correlated
  // LIMIT); MariaDB has neither: a capped statement, then, past the cap, the windowed one (issue 36 item 3).
  const perParent = dialect.name !== 'mysql'
  /** The statements of a limited relation whose batch has more than `limit` children per key. */
  const limited = perParent ? 2 : 3
  describe(`relation limit on ${dialect.name}`, () => {
    test("a parent with 150 children gets the first 100 in the relation's orderBy, one statement per relation where the database reads per parent", async (t) => {
      const shelf = await shelfApp(t, dialect)
      const { body, statements } = await counted(shelf, '/authors/1')
      assert.equal(body.books.length, 100)
      assert.deepEqual(body.books, newestBooks(100))
      assert.equal(statements.length, limited, statements.join('\n'))
      assert.doesNotMatch(statements[1] as string, /row_number/i)
      if (perParent) assert.match(statements[1] as string, /limit 100\)/i)
      else assert.match(statements[2] as string, /row_number\(\) over/i)
    })

    test('limit is per parent: a page of authors gets 100, 3 (in order) and none', async (t) => {
      const shelf = await shelfApp(t, dialect, { books: 5 })
      const { body, statements } = await counted(shelf, '/authors')
      assert.equal(statements.length, limited, statements.join('\n'))
      assert.deepEqual(
        body.map((author: { books: unknown[] }) => author.books.length),
        [5, 3, 0]
      )
      assert.deepEqual(body[0].books, newestBooks(5))
      assert.deepEqual(
        body[1].books.map((book: { year: number }) => book.year),
        [2001, 2000, 1999]
      )
    })

    test('limit: 5 keeps 5 children, limit: false keeps all 150', async (t) => {
      const five = await shelfApp(t, dialect, { books: 5 })
      const { body, statements } = await counted(five, '/authors/1')
      assert.deepEqual(body.books, newestBooks(5))
      assert.equal(statements.length, limited)
      const all = await shelfApp(t, dialect, { books: false })
      const unbounded = await counted(all, '/authors/1')
      assert.deepEqual(unbounded.body.books, newestBooks(many))
      assert.equal(unbounded.statements.length, 2)
      assert.doesNotMatch(unbounded.statements[1] as string, /row_number/i)
    })

    test('many-to-many (through): 100 tags by name by default, then limit 5 and limit false', async (t) => {
      for (const [limit, expected] of [
        [undefined, 100],
        [5, 5],
        [false, many],
      ] as const) {
        const shelf = await shelfApp(t, dialect, limit === undefined ? {} : { tags: limit })
        const { body, statements } = await counted(shelf, '/books?limit=3')
        // MariaDB: 150 + 2 children fit under 100 per key of the batch (4 keys): the capped statement has them all,
        // and grouping keeps the first 100; with limit 5 they do not, and the windowed statement runs after it.
        assert.equal(statements.length, limit === 5 ? limited : 2, statements.join('\n'))
        assert.doesNotMatch(statements[1] as string, /row_number/i)
        assert.deepEqual(body[0].tags, tagsByName(expected))
        assert.deepEqual(
          body[1].tags.map((tag: { id: number }) => tag.id),
          tagName(1) < tagName(2) ? [1, 2] : [2, 1]
        )
        assert.deepEqual(body[2].tags, [])
      }
    })

    test('limit must be a positive integer or false, checked at startup (app.ready())', async (t) => {
      const database = await testDatabase(t, dialect)
      await createShelf(database)
      const { db } = database
      for (const limit of [0, -1, 2.5, '10', true, null]) {
        const relatedConfig = { prefetchRelated: { books: { table: 'books', foreignKey: 'author_id', limit } } }
        const app = testApp(t)
        await assert.rejects(
          async () => {
            await app.register(
              createViewset({ db, table: 'authors', schema: Author, relatedConfig: relatedConfig as never }),
              { prefix: '/authors' }
            )
            await app.ready()
          },
          {
            code: 'FST_VIEWSET_INVALID_OPTION',
            message: /relatedConfig\.prefetchRelated\.books\.limit: expected a positive integer, or false for no limit/,
          }
        )
      }
    })
  })
}
