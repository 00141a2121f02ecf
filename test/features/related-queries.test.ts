import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Kysely } from 'kysely'
import { migrate } from '../../examples/relations/migrations.js'
import { Book, Publisher, Tag } from '../../examples/relations/app.js'
import type { DB } from '../../examples/relations/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

// The relations example's data (examples/relations/migrations.ts): books 1-3 by Le Guin (Penguin), 4-6 by
// Calvino (Gallimard), 7-8 by Szymborska (Faber & Faber, then none), 9-11 by Borges (Penguin, Penguin, none),
// 12 Beowulf (no author, Faber & Faber). Tags: 1 fiction, 2 science fiction, 3 poetry, 4 short stories,
// 5 essays, 6 classic.

const bookRelations = {
  selectRelated: {
    author: { table: 'authors', foreignKey: 'author_id' },
    publisher: { table: 'publishers', foreignKey: 'publisher_id' },
  },
  prefetchRelated: {
    tags: {
      table: 'tags',
      through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' },
      orderBy: 'name',
    },
  },
} as const

const AuthorBook = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  publisher: Type.Optional(Type.Union([Publisher, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
const AuthorWithBooks = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  country: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  books: Type.Optional(Type.Array(AuthorBook)),
})
const authorRelations = {
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
} as const

type BookOptions = Partial<
  Pick<
    ViewsetOptions<DB, 'books', typeof Book>,
    'filterFields' | 'orderingFields' | 'searchFields' | 'defaultOrder' | 'defaultRelations' | 'pagination'
  >
>
type AuthorOptions = Partial<
  Pick<ViewsetOptions<DB, 'authors', typeof AuthorWithBooks>, 'filterFields' | 'orderingFields' | 'searchFields'>
>

async function library (t: TestContext, dialect: TestDialect, books: BookOptions, authors: AuthorOptions = {}) {
  const database = await testDatabase(t, dialect)
  const db = database.db
  await migrate(db)
  const app = testApp(t)
  await app.register(viewsetDocs, { title: 'Library' })
  await app.register(
    createViewset({ db, table: 'books', schema: Book, relatedConfig: bookRelations, maxLimit: 100, ...books }),
    { prefix: '/books' }
  )
  await app.register(
    createViewset({ db, table: 'authors', schema: AuthorWithBooks, relatedConfig: authorRelations, ...authors }),
    { prefix: '/authors' }
  )
  await app.ready()
  return { app, queries: database.queries, db }
}

async function ids (app: FastifyInstance, url: string): Promise<number[]> {
  const response = await app.inject({ method: 'GET', url })
  assert.equal(response.statusCode, 200, `${url}: ${response.body}`)
  return response.json().map((row: { id: number }) => row.id)
}

const filterFields = {
  title: ['contains'],
  'author.name': ['eq', 'contains'],
  'author.id': ['eq', 'in'],
  'publisher.name': ['eq', 'contains', 'isnull'],
  'tags.name': ['eq', 'ne', 'in', 'contains'],
} as const

for (const dialect of dialects) {
  describe(`related queries (${dialect.name})`, () => {
    test('filters through a many-to-one relation', async (t) => {
      const { app } = await library(t, dialect, { filterFields })
      assert.deepEqual(await ids(app, '/books?author.name__contains=GUIN'), [1, 2, 3])
      assert.deepEqual(await ids(app, '/books?author.name=Italo%20Calvino'), [4, 5, 6])
      assert.deepEqual(await ids(app, '/books?author.id__in=3,4'), [7, 8, 9, 10, 11])
      assert.deepEqual(await ids(app, '/books?publisher.name=Faber%20%26%20Faber'), [7, 12])
      assert.deepEqual(await ids(app, '/books?publisher.name__contains=gal&title__contains=cities'), [4])
      // A relation filter selects parents; the loaded relation is the whole related row.
      const response = await app.inject({ method: 'GET', url: '/books?author.name__contains=borges&limit=1' })
      assert.deepEqual(response.json()[0].author, { id: 4, name: 'Jorge Luis Borges', country: 'AR' })
    })

    test('filters through many-to-many with no duplicates, one EXISTS per path', async (t) => {
      const { app } = await library(t, dialect, { filterFields })
      assert.deepEqual(await ids(app, '/books?tags.name=classic'), [1, 4, 9, 12])
      // Book 1 has both "fiction" and "science fiction": it appears once, and the count counts parents.
      const response = await app.inject({ method: 'GET', url: '/books?tags.name__contains=fiction&count=true' })
      assert.deepEqual(
        response.json().map((row: { id: number }) => row.id),
        [1, 2, 3, 4, 5, 6, 9, 10]
      )
      assert.equal(response.headers['x-total-count'], '8')
      // Both conditions hold for the same tag: "science fiction" (not "fiction and some tag other than fiction").
      assert.deepEqual(await ids(app, '/books?tags.name__contains=fiction&tags.name__ne=fiction'), [1, 2, 6])
      assert.deepEqual(await ids(app, '/books?tags.name__in=poetry,essays'), [7, 8, 10, 11, 12])
      // Each loaded relation still holds all its rows.
      const tagged = await app.inject({ method: 'GET', url: '/books/1?fields=id,tags' })
      assert.equal(tagged.json().tags.length, 3)
      const first = await app.inject({ method: 'GET', url: '/books?tags.name=poetry&limit=1' })
      assert.deepEqual(
        first.json()[0].tags.map((tag: { name: string }) => tag.name),
        ['poetry']
      )
    })

    test('filters through one-to-many and two relations', async (t) => {
      const { app } = await library(
        t,
        dialect,
        {},
        {
          filterFields: { 'books.title': ['contains'], 'books.publisher.name': ['eq'], 'books.tags.name': ['eq'] },
        }
      )
      assert.deepEqual(await ids(app, '/authors?books.title__contains=CITIES'), [2])
      assert.deepEqual(await ids(app, '/authors?books.publisher.name=Gallimard'), [2])
      assert.deepEqual(await ids(app, '/authors?books.publisher.name=Penguin&count=true'), [1, 4])
      assert.deepEqual(await ids(app, '/authors?books.tags.name=poetry'), [3])
      // The same book: Borges wrote a book with "essays" (10, 11) and one from Penguin (9, 10): book 10 is both.
      assert.deepEqual(await ids(app, '/authors?books.tags.name=short%20stories&books.publisher.name=Penguin'), [4])
      assert.deepEqual(await ids(app, '/authors?books.tags.name=poetry&books.publisher.name=Penguin'), [])
    })

    test('a relation filter value is typed by the related schema and its metacharacters mean nothing', async (t) => {
      const { app } = await library(t, dialect, { filterFields })
      const bad = await app.inject({ method: 'GET', url: '/books?author.id=abc' })
      assert.equal(bad.statusCode, 400)
      assert.equal(problemOf(bad).code, 'FST_VIEWSET_VALIDATION')
      for (const value of ['%', '_', '\\', "'", '"', "' OR 1=1 --", "%'; DROP TABLE books; --", '*', '[a]', '`']) {
        const encoded = encodeURIComponent(value)
        assert.deepEqual(await ids(app, `/books?author.name__contains=${encoded}`), [], value)
        assert.deepEqual(await ids(app, `/books?tags.name=${encoded}`), [], value)
        assert.deepEqual(await ids(app, `/books?tags.name__contains=${encoded}`), [], value)
      }
      assert.deepEqual(await ids(app, '/books?author.name__contains=.'), [1, 2, 3])
      assert.deepEqual(await ids(app, '/books?publisher.name__contains=%26'), [7, 12])
      assert.deepEqual(await ids(app, '/books?count=true'), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
    })

    test('a relation filter does not load its relation: one statement for the page', async (t) => {
      const { app, queries } = await library(t, dialect, { filterFields })
      queries.length = 0
      const response = await app.inject({
        method: 'GET',
        url: '/books?fields=id,title&tags.name=poetry&author.name__contains=a&count=true',
      })
      assert.deepEqual(response.json(), [
        { id: 7, title: 'View with a Grain of Sand' },
        { id: 8, title: 'Map: Collected and Last Poems' },
      ])
      assert.equal(response.headers['x-total-count'], '2')
      assert.equal(queries.length, 2, queries.join('\n'))
      queries.length = 0
      await app.inject({ method: 'GET', url: '/books?tags.name=poetry' })
      // The page, then author, publisher and tags.
      assert.equal(queries.length, 4, queries.join('\n'))
    })

    test('orders by a many-to-one field, books with no author following the nulls rule', async (t) => {
      const { app, queries } = await library(t, dialect, {
        orderingFields: ['title', 'author.name', 'publisher.name'],
        filterFields,
      })
      assert.deepEqual(await ids(app, '/books?order_by=author.name'), [4, 5, 6, 9, 10, 11, 1, 2, 3, 7, 8, 12])
      assert.deepEqual(await ids(app, '/books?order_by=-author.name'), [12, 7, 8, 1, 2, 3, 9, 10, 11, 4, 5, 6])
      assert.deepEqual(await ids(app, '/books?order_by=publisher.name,-title&limit=5'), [7, 12, 4, 5, 6])
      assert.deepEqual(await ids(app, '/books?order_by=-author.name&tags.name=poetry&limit=2&offset=1'), [7, 8])
      const response = await app.inject({ method: 'GET', url: '/books?order_by=author.name&limit=2' })
      assert.deepEqual(
        response.json().map((book: { author: { name: string } }) => book.author.name),
        ['Italo Calvino', 'Italo Calvino']
      )
      // Still one statement for the page, one for the count, and none for relations not loaded.
      queries.length = 0
      const counted = await app.inject({
        method: 'GET',
        url: '/books?order_by=-author.name&fields=id&count=true&limit=3',
      })
      assert.deepEqual(counted.json(), [{ id: 12 }, { id: 7 }, { id: 8 }])
      assert.equal(counted.headers['x-total-count'], '12')
      assert.equal(queries.length, 2, queries.join('\n'))
      const unknown = await app.inject({ method: 'GET', url: '/books?order_by=tags.name' })
      assert.equal(unknown.statusCode, 400)
      assert.equal(problemOf(unknown).code, 'FST_VIEWSET_UNSUPPORTED_ORDERING')
    })

    test('cursor pagination walks an order by a relation path, both ways', async (t) => {
      const { app } = await library(t, dialect, { orderingFields: ['author.name'], pagination: 'cursor' })
      const expected = [12, 7, 8, 1, 2, 3, 9, 10, 11, 4, 5, 6]
      const pages: number[][] = []
      let url: string | undefined = '/books?order_by=-author.name&limit=5&fields=id'
      let last = url
      while (url !== undefined) {
        const response: LightMyRequestResponse = await app.inject({ method: 'GET', url })
        assert.equal(response.statusCode, 200, response.body)
        pages.push(response.json<Array<{ id: number }>>().map((row) => row.id))
        last = url
        url = /<([^>]*)>; rel="next"/.exec(String(response.headers.link ?? ''))?.[1]
      }
      assert.deepEqual(pages.flat(), expected)
      const back = await app.inject({
        method: 'GET',
        url:
          /<([^>]*)>; rel="prev"/.exec(String((await app.inject({ method: 'GET', url: last })).headers.link))?.[1] ??
          '',
      })
      assert.deepEqual(
        back.json<Array<{ id: number }>>().map((row) => row.id),
        pages[1]
      )
      // A cursor's value of author.name is checked against the related schema's type: a string, or null.
      const forged = Buffer.from(JSON.stringify(['a', '-author.name,id', [5, 3]])).toString('base64url')
      const refused = await app.inject({ method: 'GET', url: `/books?order_by=-author.name&cursor=${forged}` })
      assert.equal(refused.statusCode, 400)
      assert.equal(problemOf(refused).code, 'FST_VIEWSET_INVALID_CURSOR')
      const made = Buffer.from(JSON.stringify(['a', '-author.name,id', ['Jorge Luis Borges', 9]])).toString('base64url')
      assert.deepEqual(await ids(app, `/books?order_by=-author.name&fields=id&limit=3&cursor=${made}`), [10, 11, 4])
    })

    test('a default order may sort by a relation path', async (t) => {
      const { app } = await library(t, dialect, { orderingFields: ['author.name'], defaultOrder: '-author.name' })
      assert.deepEqual(await ids(app, '/books?limit=4'), [12, 7, 8, 1])
    })

    test('searches through a many-to-one field; a book with no author is still searched on its own fields', async (t) => {
      const { app, queries } = await library(t, dialect, { searchFields: ['title', 'author.name'] })
      assert.deepEqual(await ids(app, '/books?search=BORGES'), [9, 10, 11])
      assert.deepEqual(await ids(app, '/books?search=beowulf'), [12])
      assert.deepEqual(await ids(app, '/books?search=ursula'), [1, 2, 3])
      assert.deepEqual(await ids(app, '/books?search=%25'), [])
      assert.deepEqual(await ids(app, '/books?search=%27%20OR%201%3D1%20--'), [])
      queries.length = 0
      const response = await app.inject({ method: 'GET', url: '/books?search=calvino&fields=id,title&count=true' })
      assert.deepEqual(
        response.json().map((book: { id: number }) => book.id),
        [4, 5, 6]
      )
      assert.equal(response.headers['x-total-count'], '3')
      assert.equal(queries.length, 2, queries.join('\n'))
    })

    test('ordering and search refuse to-many paths at startup', async (t) => {
      const cases: Array<[BookOptions, RegExp]> = [
        [
          { orderingFields: ['tags.name'] },
          /orderingFields.*"tags\.name": "tags" is a prefetchRelated \(to-many\) relation/,
        ],
        [
          { searchFields: ['tags.name'] },
          /searchFields.*"tags\.name": "tags" is a prefetchRelated \(to-many\) relation/,
        ],
        [{ searchFields: ['author.id'] }, /searchFields.*"author\.id" is not a string field/],
        [{ orderingFields: ['author.nope'] }, /orderingFields.*"author\.nope": "nope" is not a scalar field/],
        [{ orderingFields: ['author.name', 'author.name'] }, /orderingFields.*"author\.name" is listed twice/],
      ]
      for (const [options, message] of cases) {
        const database = await testDatabase(t, dialect)
        await migrate(database.db)
        const app = testApp(t)
        const started = async (): Promise<void> => {
          await app.register(
            createViewset({ db: database.db, table: 'books', schema: Book, relatedConfig: bookRelations, ...options }),
            { prefix: '/books' }
          )
          await app.ready()
        }
        await assert.rejects(started(), (error: Error & { code?: string }) => {
          assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
          assert.match(error.message, message)
          return true
        })
      }
    })

    test('fields=id,title,author loads the author and not the tags', async (t) => {
      const { app, queries } = await library(t, dialect, {})
      queries.length = 0
      const response = await app.inject({ method: 'GET', url: '/books?fields=id,title,author&limit=2' })
      assert.deepEqual(response.json(), [
        { id: 1, title: 'The Left Hand of Darkness', author: { id: 1, name: 'Ursula K. Le Guin', country: 'US' } },
        { id: 2, title: 'The Dispossessed', author: { id: 1, name: 'Ursula K. Le Guin', country: 'US' } },
      ])
      assert.equal(queries.length, 2, queries.join('\n'))
      assert.doesNotMatch(queries.join('\n'), /book_tags|publishers/)
      queries.length = 0
      const one = await app.inject({ method: 'GET', url: '/books/12?fields=title,tags' })
      assert.deepEqual(one.json(), {
        title: 'Beowulf',
        tags: [
          { id: 6, name: 'classic' },
          { id: 3, name: 'poetry' },
        ],
      })
      assert.equal(queries.length, 2, queries.join('\n'))
      // The OpenAPI description of `fields` names the relations.
      const document = app.swagger() as {
        paths: Record<string, { get: { parameters: Array<{ name: string; description: string }> } }>
      }
      const fields = document.paths['/books']?.get.parameters.find((parameter) => parameter.name === 'fields')
      assert.match(
        fields?.description ?? '',
        /Relations: author, publisher, tags; only those named are loaded \(without `fields`: all of them\)/
      )
    })

    test('defaultRelations: what loads without fields, on LIST, GET and write responses', async (t) => {
      const { app, queries } = await library(t, dialect, { defaultRelations: ['author'] })
      queries.length = 0
      const list = await app.inject({ method: 'GET', url: '/books?limit=1' })
      assert.deepEqual(list.json(), [
        {
          id: 1,
          title: 'The Left Hand of Darkness',
          year: 1969,
          author_id: 1,
          publisher_id: 1,
          author: { id: 1, name: 'Ursula K. Le Guin', country: 'US' },
        },
      ])
      assert.equal(queries.length, 2, queries.join('\n'))
      const got = await app.inject({ method: 'GET', url: '/books/12' })
      assert.deepEqual(got.json(), {
        id: 12,
        title: 'Beowulf',
        year: 1000,
        author_id: null,
        publisher_id: 2,
        author: null,
      })
      // Named in fields, a relation left out of the default loads.
      const named = await app.inject({ method: 'GET', url: '/books/12?fields=id,tags,publisher' })
      assert.deepEqual(named.json(), {
        id: 12,
        publisher: { id: 2, name: 'Faber & Faber' },
        tags: [
          { id: 6, name: 'classic' },
          { id: 3, name: 'poetry' },
        ],
      })
      const created = await app.inject({
        method: 'POST',
        url: '/books',
        payload: { title: 'Mr Palomar', year: 1983, author_id: 2, publisher_id: 3 },
      })
      assert.equal(created.statusCode, 201)
      assert.deepEqual(created.json(), {
        id: 13,
        title: 'Mr Palomar',
        year: 1983,
        author_id: 2,
        publisher_id: 3,
        author: { id: 2, name: 'Italo Calvino', country: 'IT' },
      })
      const patched = await app.inject({ method: 'PATCH', url: '/books/13', payload: { author_id: 4 } })
      assert.equal(patched.json().author.name, 'Jorge Luis Borges')
      assert.equal('tags' in patched.json(), false)
      const put = await app.inject({
        method: 'PUT',
        url: '/books/13',
        payload: { title: 'Mr Palomar', author_id: null },
      })
      assert.deepEqual(put.json(), {
        id: 13,
        title: 'Mr Palomar',
        year: 1983,
        author_id: null,
        publisher_id: 3,
        author: null,
      })
    })

    test('defaultRelations: [] loads nothing without fields', async (t) => {
      const { app, queries } = await library(t, dialect, { defaultRelations: [] })
      queries.length = 0
      const response = await app.inject({ method: 'GET', url: '/books?limit=2&fields=id,title' })
      assert.deepEqual(response.json(), [
        { id: 1, title: 'The Left Hand of Darkness' },
        { id: 2, title: 'The Dispossessed' },
      ])
      const all = await app.inject({ method: 'GET', url: '/books/3' })
      assert.deepEqual(all.json(), { id: 3, title: 'A Wizard of Earthsea', year: 1968, author_id: 1, publisher_id: 1 })
      assert.equal(queries.length, 2, queries.join('\n'))
      const document = app.swagger() as {
        paths: Record<string, { get: { parameters: Array<{ name: string; description: string }> } }>
      }
      const fields = document.paths['/books/{id}']?.get.parameters.find((parameter) => parameter.name === 'fields')
      assert.match(fields?.description ?? '', /\(without `fields`: none\)/)
    })

    test('defaultRelations: an unknown or required relation fails at startup', async (t) => {
      const Required = Type.Object({ id: Type.Optional(Type.Integer()), title: Type.String(), tags: Type.Array(Tag) })
      const cases: Array<[(db: Kysely<DB>) => ReturnType<typeof createViewset>, RegExp]> = [
        [
          (db) =>
            createViewset({
              db,
              table: 'books',
              schema: Book,
              relatedConfig: bookRelations,
              defaultRelations: ['title'],
            }),
          /defaultRelations: "title" is not a relation field of relatedConfig; relations: author, publisher, tags/,
        ],
        [
          (db) =>
            createViewset({
              db,
              table: 'books',
              schema: Required,
              relatedConfig: { prefetchRelated: { tags: bookRelations.prefetchRelated.tags } },
              defaultRelations: [],
            }),
          /defaultRelations: "tags" is left out.*schema requires it/,
        ],
      ]
      for (const [viewset, message] of cases) {
        const database = await testDatabase(t, dialect)
        await migrate(database.db)
        const app = testApp(t)
        const started = async (): Promise<void> => {
          await app.register(viewset(database.db), { prefix: '/books' })
          await app.ready()
        }
        await assert.rejects(started(), (error: Error & { code?: string }) => {
          assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
          assert.match(error.message, message)
          return true
        })
      }
    })

    test('a bad relation path fails at startup, naming it', async (t) => {
      const cases: Array<[Record<string, readonly string[]>, RegExp]> = [
        [{ 'nope.name': ['eq'] }, /filterFields.*"nope\.name": "nope" is not a configured relation/],
        [{ 'author.nope': ['eq'] }, /filterFields.*"author\.nope": "nope" is not a scalar field/],
        [{ 'author.name': ['gt', 'in', 'bogus'] }, /filterFields.*"author\.name": unknown operator "bogus"/],
        [
          { 'author.id': ['contains'] },
          /filterFields.*"author\.id": operator "contains" does not apply to a integer field/,
        ],
        [{ 'title.name': ['eq'] }, /filterFields.*"title" is not a configured relation/],
        [{ 'author.books.tags.name': ['eq'] }, /filterFields.*goes through 3 relations; at most 2/],
      ]
      for (const [filters, message] of cases) {
        const database = await testDatabase(t, dialect)
        await migrate(database.db)
        const app = testApp(t)
        const started = async (): Promise<void> => {
          await app.register(
            createViewset({
              db: database.db,
              table: 'books',
              schema: Book,
              relatedConfig: bookRelations,
              filterFields: filters as NonNullable<BookOptions['filterFields']>,
            }),
            { prefix: '/books' }
          ) // bad paths on purpose: startup refuses them
          await app.ready()
        }
        await assert.rejects(started(), (error: Error & { code?: string }) => {
          assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
          assert.match(error.message, message)
          return true
        })
      }
    })
  })
}
