// Issue 34, item 8 (the document says what the server does), the parts left: a read without `?fields=` is typed
// as the whole row (a `?fields=` answer has a media type of its own), NUL in PostgreSQL text, the underflow of a
// PostgreSQL `real`, and `maxItems` on limited relations. Every answer is checked against the document.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { createViewset, viewsetDocs, viewsetFrameworkErrors } from 'fastify-viewsets'
import { Contract } from '../helpers/contract.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

const Book = Type.Object({ id: Type.Integer(), title: Type.String() })
const Note = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ maxLength: 100 }),
  body: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  ratio: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  books: Type.Optional(Type.Array(Book)),
  shelf: Type.Optional(Type.Array(Book)),
})

/** The largest magnitude of a number over a single-precision column (SQLite's REAL is a double), as documented. */
const singleMax = { sqlite: Number.MAX_VALUE, postgres: 3.4028235e38, mysql: 3.4028234663852886e38 }

const partialType = 'application/json; charset=utf-8; profile="urn:fastify-viewsets:partial"'
const json = { 'content-type': 'application/json' }

/** trust_notes with a single-precision `ratio` where the database has one (SQLite's REAL is a double). */
async function createTables ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable('trust_notes')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(100)', (column) => column.notNull())
    .addColumn('body', 'text')
    .addColumn('ratio', dialect === 'mysql' ? sql`float` : 'real')
    .execute()
  await db.schema.createTable('trust_books')
    .addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('note_id', 'integer', (column) => column.notNull())
    .addColumn('title', 'varchar(100)', (column) => column.notNull())
    .execute()
  await db.insertInto('trust_notes').values({ name: 'first', body: 'text', ratio: 0.5 }).execute()
  await db.insertInto('trust_books').values([1, 2, 3].map((n) => ({ id: n, note_id: 1, title: `b${n}` }))).execute()
}

async function notesApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  await createTables(database)
  const app = testApp(t, { frameworkErrors: viewsetFrameworkErrors })
  await app.register(viewsetDocs)
  await app.register(createViewset({
    db: database.db,
    table: 'trust_notes',
    schema: Note,
    methods: ['LIST', 'GET', 'POST', 'BULK', 'PUT', 'PATCH', 'DELETE'],
    filterFields: { name: ['eq', 'contains'] },
    relatedConfig: {
      prefetchRelated: {
        books: { table: 'trust_books', foreignKey: 'note_id', orderBy: 'id', limit: 2 },
        shelf: { table: 'trust_books', foreignKey: 'note_id', orderBy: 'id', limit: false },
      },
    },
  }), { prefix: '/notes' })
  await app.ready()
  const contract = await Contract.of(app)
  const stored = async () => await database.db.selectFrom('trust_notes').select(['id', 'name']).orderBy('id').execute()
  /** Sends a request and asserts that its answer is what the document promises. */
  const send = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: string, headers = {}) => {
    const body = payload === undefined ? {} : { payload }
    const response = await app.inject({ method, url, headers: { ...json, ...headers }, ...body })
    assert.deepEqual(contract.check({ method, url }, response).map((v) => v.message), [], `${method} ${url}`)
    return response
  }
  return { app, contract, send, stored }
}

/** A component's properties, as the document has them (a test reads them loosely). */
function propertiesOf (contract: Contract, component: string): Record<string, any> {
  return (contract.document.components?.schemas?.[component] as { properties?: Record<string, any> }).properties ?? {}
}

function fieldsOf (response: LightMyRequestResponse): string[] | undefined {
  return problemOf(response).errors?.map((error) => `${error.in}:${error.field}`)
}

for (const dialect of dialects) {
  describe(`the document says what the server does (${dialect.name})`, () => {
    test('a read without ?fields= is application/json (the whole row); a ?fields= answer has its own type', async (t) => {
      const { contract, send } = await notesApp(t, dialect)
      const { document } = contract
      const get = document.paths?.['/notes/{id}']?.get?.responses?.['200']?.content ?? {}
      const list = document.paths?.['/notes']?.get?.responses?.['200']?.content ?? {}
      const partial = 'application/json; profile="urn:fastify-viewsets:partial"'
      assert.deepEqual(Object.keys(get), [partial, 'application/json'])
      assert.deepEqual(get['application/json']?.schema, { $ref: '#/components/schemas/Notes' })
      assert.deepEqual(list[partial]?.schema?.items, { $ref: '#/components/schemas/NotesPartial' })

      for (const url of ['/notes/1', '/notes']) {
        const whole = await send('GET', url)
        assert.equal(whole.statusCode, 200)
        assert.equal(whole.headers['content-type'], 'application/json; charset=utf-8')
        // A client that accepts only application/json still gets the ?fields= answer: the range matches it.
        for (const accept of [undefined, 'application/json', '*/*']) {
          const some = await send('GET', `${url}?fields=id,name`, undefined, accept === undefined ? {} : { accept })
          assert.equal(some.statusCode, 200, some.body)
          assert.equal(some.headers['content-type'], partialType)
          const row: unknown = url === '/notes' ? some.json()[0] : some.json()
          assert.deepEqual(row, { id: 1, name: 'first' })
        }
      }
      // A write answers the whole row as application/json, as before.
      const created = await send('POST', '/notes', JSON.stringify({ name: 'second' }))
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.headers['content-type'], 'application/json; charset=utf-8')
    })

    test('NUL in a string: a 400 naming the field on PostgreSQL (documented there), stored as sent elsewhere', async (t) => {
      const { contract, send, stored } = await notesApp(t, dialect)
      const { name, body: { anyOf: body } } = propertiesOf(contract, 'Notes')
      const postgres = dialect.name === 'postgres'
      assert.equal(name?.pattern, postgres ? '^[^\\x00]*$' : undefined)
      assert.equal(body?.[0]?.pattern, postgres ? '^[^\\x00]*$' : undefined)
      const before = await stored()
      const cases: Array<['POST' | 'PATCH', string, string, string]> = [
        ['POST', '/notes', '{"name":"a\\u0000b"}', 'body:name'],
        ['POST', '/notes', '{"name":"ok","body":"\\u0000"}', 'body:body'],
        ['PATCH', '/notes/1', '{"name":"x\\u0000"}', 'body:name'],
        ['POST', '/notes/bulk', '[{"name":"a"},{"name":"b\\u0000"}]', 'body:/1/name'],
      ]
      for (const [method, url, payload, field] of cases) {
        const response = await send(method, url, payload)
        if (!postgres) {
          assert.ok(response.statusCode < 300, response.body)
          continue
        }
        assert.equal(response.statusCode, 400, `${method} ${payload}: ${response.body}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
        assert.deepEqual(fieldsOf(response), [field])
        assert.match(problemOf(response).errors?.[0]?.message ?? '', /NUL/)
      }
      if (postgres) {
        assert.deepEqual(await stored(), before)
        const filter = await send('GET', '/notes?name=a%00b')
        assert.equal(filter.statusCode, 400, filter.body)
        assert.deepEqual(fieldsOf(filter), ['querystring:name'])
      } else {
        const kept = await send('GET', '/notes?name=a%00b')
        assert.deepEqual(kept.json().map((row: { name: string }) => row.name), ['a\u0000b'])
      }
    })

    test('a PostgreSQL real refuses numbers it would round to 0, documented; other databases take them', async (t) => {
      const { contract, send } = await notesApp(t, dialect)
      const ratio = propertiesOf(contract, 'Notes').ratio?.anyOf?.[0]
      const postgres = dialect.name === 'postgres'
      const single = singleMax[dialect.name]
      assert.equal(ratio?.maximum, single)
      assert.equal(ratio?.minimum, -single)
      const underflow = { minimum: -(2 ** -150), maximum: 2 ** -150, not: { enum: [0] } }
      assert.deepEqual(ratio?.not, postgres ? underflow : undefined)
      for (const value of ['5e-324', '-1e-46', '7e-46']) {
        const response = await send('POST', '/notes', `{"name":"tiny ${value}","ratio":${value}}`)
        if (postgres) {
          assert.equal(response.statusCode, 400, `${value}: ${response.body}`)
          assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
          assert.deepEqual(fieldsOf(response), ['body:ratio'])
        } else {
          assert.equal(response.statusCode, 201, `${value}: ${response.body}`)
        }
      }
      // The smallest numbers a real keeps, and 0, are stored everywhere.
      for (const value of ['1e-45', '8e-46', '0', '-1e-45']) {
        const response = await send('POST', '/notes', `{"name":"small ${value}","ratio":${value}}`)
        assert.equal(response.statusCode, 201, `${value}: ${response.body}`)
      }
    })

    test('the bounds documented for a single-precision column hold for what it serves back (Prism, issue 34)', async (t) => {
      // PostgreSQL prints the largest float as 3.4028235e+38, past 3.4028234663852886e38: documented as that bound,
      // a row written at the bound came back breaking its own schema (Prism's validating proxy flagged every one).
      const { send } = await notesApp(t, dialect)
      const single = singleMax[dialect.name]
      for (const value of [single, -single, 3.4028234663852886e38, 3.4e38]) {
        const created = await send('POST', '/notes', JSON.stringify({ name: `bound ${value}`, ratio: value }))
        assert.equal(created.statusCode, 201, `${value}: ${created.body}`)
        const { id, ratio } = created.json()
        assert.ok(Math.abs(ratio) <= single, `${value} answered as ${ratio}`)
        assert.equal((await send('GET', `/notes/${id}`)).statusCode, 200)
      }
      if (dialect.name !== 'sqlite') {
        const over = await send('POST', '/notes', JSON.stringify({ name: 'past the bound', ratio: single * (1 + 1e-7) }))
        assert.equal(over.statusCode, 400, over.body)
      }
      // The first row and the four written, every one within the document.
      assert.equal((await send('GET', '/notes?limit=100')).json().length, 5)
    })

    test('a to-many relation with a limit documents maxItems: limit; one without, none', async (t) => {
      const { contract, send } = await notesApp(t, dialect)
      const properties = propertiesOf(contract, 'Notes')
      assert.equal(properties?.books?.maxItems, 2)
      assert.equal(properties?.books?.items?.type, 'object')
      assert.equal(properties?.shelf?.maxItems, undefined)
      assert.equal(propertiesOf(contract, 'NotesPartial').books?.maxItems, 2)
      const row = (await send('GET', '/notes/1')).json()
      assert.deepEqual(row.books.map((book: { id: number }) => book.id), [1, 2])
      assert.equal(row.shelf.length, 3)
      assert.equal((await send('GET', '/notes?fields=id,books')).json()[0].books.length, 2)
    })
  })
}
