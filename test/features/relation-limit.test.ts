import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from 'fastify-viewsets'
import type { RelatedConfig } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// Issue 36 item 3: a relation's `limit` reads at most `limit` children per parent (a LATERAL join on PostgreSQL, a
// correlated LIMIT on SQLite, the window fallback on MariaDB). The answers are those of `limit: false` cut to the
// first `limit` children of each parent, at every level: ordering (NULLs, ties), many-to-many, nested levels, and the
// related table's row rule, for two tenants.

const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  year: Type.Union([Type.Integer(), Type.Null()]),
  tags: Type.Optional(Type.Array(Tag)),
})
const Author = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  books: Type.Optional(Type.Array(Book)),
})

const authorCount = 6

async function createShelf ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable('cost_a_authors').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull()).execute()
  await db.schema.createTable('cost_a_books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('year', 'integer')
    .addColumn('tenant', 'varchar(8)', (column) => column.notNull())
    .addColumn('author_id', 'integer', (column) => column.notNull()).execute()
  await db.schema.createTable('cost_a_tags').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull()).execute()
  await db.schema.createTable('cost_a_book_tags')
    .addColumn('book_id', 'integer', (column) => column.notNull())
    .addColumn('tag_id', 'integer', (column) => column.notNull())
    .addPrimaryKeyConstraint('cost_a_book_tags_pk', ['book_id', 'tag_id']).execute()
  await db.insertInto('cost_a_authors')
    .values(Array.from({ length: authorCount }, (_, i) => ({ name: `Author ${i + 1}` }))).execute()
  // Author a has 3a - 2 books (1, 4, 7, … 16): years repeat and some are NULL, tenants alternate.
  const books = []
  for (let a = 1; a <= authorCount; a++) {
    for (let b = 0; b < 3 * a - 2; b++) {
      books.push({
        title: `Book ${a}.${b}`,
        year: b % 4 === 3 ? null : 2000 + ((b * 7) % 5),
        tenant: b % 3 === 0 ? 'blue' : 'red',
        author_id: a,
      })
    }
  }
  await db.insertInto('cost_a_books').values(books).execute()
  await db.insertInto('cost_a_tags')
    .values(Array.from({ length: 12 }, (_, i) => ({ name: `tag ${String((i * 5) % 12).padStart(2, '0')}` }))).execute()
  // Book n has tags n mod 12 + 1 … : (n mod 7) + 1 of them.
  const links = []
  for (let n = 1; n <= books.length; n++) {
    for (let k = 0; k <= n % 7; k++) links.push({ book_id: n, tag_id: ((n + k * 5) % 12) + 1 })
  }
  await db.insertInto('cost_a_book_tags').values(links).execute()
}

interface Limits { readonly books: number | false; readonly tags: number | false }

/** The tenant's row rule of the books, as a table no viewset serves declares it. */
const byTenant = {
  scope: (eb: any, { request }: { request: { headers: Record<string, unknown> } }) =>
    eb('tenant', '=', String(request.headers['x-tenant'] ?? 'none')),
}

function relations ({ books, tags }: Limits, orderBy: string, ruled: boolean): RelatedConfig {
  return {
    prefetchRelated: {
      books: {
        table: 'cost_a_books',
        foreignKey: 'author_id',
        orderBy,
        limit: books,
        ...(ruled ? { rulesFrom: byTenant } : {}),
        relatedConfig: {
          prefetchRelated: {
            tags: {
              table: 'cost_a_tags',
              through: { table: 'cost_a_book_tags', sourceKey: 'book_id', targetKey: 'tag_id' },
              orderBy: '-name',
              limit: tags,
            },
          },
        },
      },
    },
  }
}

async function authorsApp (t: TestContext, database: TestDatabase, limits: Limits, orderBy: string, ruled = false) {
  const app = testApp(t)
  const relatedConfig = relations(limits, orderBy, ruled)
  await app.register(createViewset({ db: database.db, table: 'cost_a_authors', schema: Author, relatedConfig }), {
    prefix: '/authors',
  })
  await app.ready()
  return app
}

type Served = Array<{ books: Array<{ tags: unknown[] }> }>

/** `limit: false`'s answer cut to the first `books` books of each author and `tags` tags of each book. */
function cut (all: Served, books: number, tags: number): Served {
  return all.map((author) => ({
    ...author,
    books: author.books.slice(0, books).map((book) => ({ ...book, tags: book.tags.slice(0, tags) })),
  }))
}

async function served (
  database: TestDatabase,
  app: Awaited<ReturnType<typeof authorsApp>>,
  url: string,
  tenant?: string
): Promise<{ body: Served; statements: string[] }> {
  database.queries.length = 0
  const response = await app.inject({ url, headers: tenant === undefined ? {} : { 'x-tenant': tenant } })
  assert.equal(response.statusCode, 200, response.body)
  return { body: response.json(), statements: [...database.queries] }
}

function perParentForm (dialect: TestDialect): RegExp {
  if (dialect.name === 'postgres') return /inner join lateral/i
  if (dialect.name === 'sqlite') return / in \(select .* limit \d+\)/i
  return /row_number\(\) over|limit \d+$/i
}

for (const dialect of dialects) {
  describe(`relation limit per parent [${dialect.name}]`, () => {
    for (const orderBy of ['-year', 'year,title', 'title']) {
      test(`the first children of each parent, at both levels, are limit: false's (orderBy ${orderBy})`, async (t) => {
        const database = await testDatabase(t, dialect)
        await createShelf(database)
        const all = await served(database, await authorsApp(t, database, { books: false, tags: false }, orderBy), '/authors')
        for (const [books, tags] of [[1, 1], [3, 2], [4, 8], [100, 100]] as const) {
          const app = await authorsApp(t, database, { books, tags }, orderBy)
          const { body, statements } = await served(database, app, '/authors')
          assert.deepEqual(body, cut(all.body, books, tags), `books ${books}, tags ${tags}`)
          // 1 + 1 + 1 where the database reads per parent; MariaDB may add the windowed statement at each level.
          if (dialect.name !== 'mysql') {
            assert.equal(statements.length, 3, statements.join('\n'))
            for (const statement of statements.slice(1)) assert.match(statement, perParentForm(dialect))
          }
          const one = await served(database, app, '/authors/5')
          assert.deepEqual(one.body, cut(all.body, books, tags)[4], 'GET one author')
        }
      })
    }

    test('the related table\'s row rule applies before the limit: each tenant gets its own first books', async (t) => {
      const database = await testDatabase(t, dialect)
      await createShelf(database)
      const everything = await authorsApp(t, database, { books: false, tags: false }, '-year', true)
      const limited = await authorsApp(t, database, { books: 2, tags: 1 }, '-year', true)
      for (const tenant of ['blue', 'red']) {
        const all = await served(database, everything, '/authors', tenant)
        const { body } = await served(database, limited, '/authors', tenant)
        assert.deepEqual(body, cut(all.body, 2, 1), tenant)
        const titles = body.flatMap((author) => author.books.map((book: any) => book.title))
        const rows = await database.db.selectFrom('cost_a_books').select('title').where('tenant', '=', tenant).execute()
        const own = new Set(rows.map((row: { title: string }) => row.title))
        assert.ok(titles.length > 0 && titles.every((title: string) => own.has(title)), `${tenant} sees its books only`)
      }
      const { body } = await served(database, limited, '/authors', 'nobody')
      assert.ok(body.every((author) => author.books.length === 0))
    })

    test('a page of parents from an offset keeps each parent\'s limit', async (t) => {
      const database = await testDatabase(t, dialect)
      await createShelf(database)
      const all = await served(database, await authorsApp(t, database, { books: false, tags: false }, 'title'), '/authors?limit=3&offset=2')
      const app = await authorsApp(t, database, { books: 2, tags: 3 }, 'title')
      const { body } = await served(database, app, '/authors?limit=3&offset=2')
      assert.deepEqual(body, cut(all.body, 2, 3))
    })
  })
}
