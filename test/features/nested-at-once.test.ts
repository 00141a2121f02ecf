import assert from 'node:assert/strict'
import diagnosticsChannel from 'node:diagnostics_channel'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from '../../lib/index.js'
import { autoIncrement, dialects, setupDatabase, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// A nested POST that only creates (issue 43, session 11): on SQLite, where each write is known to await nothing (no
// hook of the user's, no rule to check the row against, no Prefer resolution), the author and its books are written
// in one synchronous transaction (BEGIN IMMEDIATE … COMMIT on the connection), each child's authorization, field view
// and validation done before it; elsewhere, and wherever a write may await, in Kysely's transaction as before. Either
// way all or none, the errors in the same order, the same answers, on the three databases.

const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String({ maxLength: 40 }),
  tenant: Type.Optional(Type.String()),
  author_id: Type.Integer(),
})
const Author = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  email: Type.String(),
  books: Type.Optional(Type.Array(Type.Object({
    id: Type.Integer(),
    title: Type.String(),
    tenant: Type.String(),
    author_id: Type.Integer(),
  }))),
})

interface Shelf extends TestDatabase {
  app: Awaited<ReturnType<typeof testApp>>
}

/** /authors writing its books through /books, `books` merged over the books viewset's options; `ao_books.title` and
 * `ao_authors.email` unique. */
async function shelfApp (
  t: TestContext, dialect: TestDialect, books: Record<string, unknown> = {}, opened?: TestDatabase
): Promise<Shelf> {
  const database = opened ?? await testDatabase(t, dialect)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema.createTable('ao_authors').addColumn('id', idType as 'integer', id)
    .addColumn('email', 'varchar(64)', (column) => column.notNull().unique()).execute()
  await db.schema.createTable('ao_books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull().unique())
    .addColumn('tenant', 'varchar(8)', (column) => column.notNull().defaultTo('t1'))
    .addColumn('author_id', 'integer', (column) => column.notNull().references('ao_authors.id')).execute()
  const app = testApp(t, process.env.DEBUG_NESTED === undefined ? {} : { logger: { level: 'error' } })
  const options = { db, table: 'ao_books', schema: Book, methods: ['GET', 'POST'], withoutTokens: true, ...books }
  await app.register(createViewset(options as any), { prefix: '/books' })
  const relation = { table: 'ao_books', foreignKey: 'author_id', writable: true }
  await app.register(createViewset({
    db,
    table: 'ao_authors',
    schema: Author,
    methods: ['GET', 'POST'],
    withoutTokens: true,
    relatedConfig: { prefetchRelated: { books: relation } },
  } as any), { prefix: '/authors' })
  await app.ready()
  return { ...database, app }
}

/** The first two words of each statement, lower case. */
function firstWords (queries: readonly string[]): string[] {
  return queries.map((text) => text.trim().split(/\s+/).slice(0, 2).join(' ').toLowerCase().replace(/[`"]/g, ''))
}

/** The first two words of each statement the last request ran. */
function statements (shelf: Shelf): string[] {
  return firstWords(shelf.queries)
}

async function stored (shelf: Shelf): Promise<{ authors: string[], books: string[] }> {
  const authors = await shelf.db.selectFrom('ao_authors').select(['id', 'email']).orderBy('id').execute()
  const books = await shelf.db.selectFrom('ao_books').select(['id', 'title', 'tenant', 'author_id']).orderBy('id')
    .execute()
  return {
    authors: authors.map((row: any) => String(row.email)),
    // The ids a rollback used are not used again on SQLite only: each book is named by its author's email.
    books: books.map((row: any) => `${row.title}:${row.tenant}:${String(authors.find((author: any) =>
      Number(author.id) === Number(row.author_id))?.email)}`),
  }
}

async function post (shelf: Shelf, payload: object, headers: Record<string, string> = {}) {
  shelf.queries.length = 0
  return await shelf.app.inject({ method: 'POST', url: '/authors', headers, payload })
}

const three = { email: 'a@x', books: [{ title: 'x' }, { title: 'y' }, { title: 'z' }] }

for (const dialect of dialects) {
  describe(`a nested POST's writes on ${dialect.name}`, () => {
    test('the author and its books in one transaction: on SQLite BEGIN IMMEDIATE, the INSERTs, COMMIT', async (t) => {
      const shelf = await shelfApp(t, dialect)
      const response = await post(shelf, three)
      assert.equal(response.statusCode, 201, response.body)
      assert.deepEqual(response.json(), {
        id: 1,
        email: 'a@x',
        books: ['x', 'y', 'z'].map((title, index) => ({ id: index + 1, title, tenant: 't1', author_id: 1 })),
      })
      const inserts = ['insert into', 'insert into', 'insert into', 'insert into']
      const expected: Record<TestDialect['name'], string[]> = {
        sqlite: ['begin immediate', ...inserts, 'commit'],
        postgres: ['begin', ...inserts, 'commit'],
        // MariaDB reads each row written back (no RETURNING).
        mysql: ['begin', ...inserts.flatMap((insert) => [insert, 'select id,']), 'commit'],
      }
      assert.deepEqual(statements(shelf), expected[dialect.name], shelf.queries.join('\n'))
      assert.match(shelf.queries[1] ?? '', /ao_authors/)
      assert.deepEqual(await stored(shelf), { authors: ['a@x'], books: ['x:t1:a@x', 'y:t1:a@x', 'z:t1:a@x'] })
    })

    test('with an afterWrite on the books, in Kysely\'s transaction, each hook in it', async (t) => {
      const seen: string[] = []
      const afterWrite = async (_context: unknown, { after }: any, trx: any) => {
        const row = await trx.selectFrom('ao_authors').select('email').where('id', '=', after.author_id)
          .executeTakeFirst()
        seen.push(`${String(after.title)}:${String(row?.email)}`)
      }
      const shelf = await shelfApp(t, dialect, { afterWrite })
      const response = await post(shelf, three)
      assert.equal(response.statusCode, 201, response.body)
      // The hook reads the author written in the same transaction, not committed yet.
      assert.deepEqual(seen, ['x:a@x', 'y:a@x', 'z:a@x'])
      assert.equal(statements(shelf)[0], 'begin', shelf.queries.join('\n'))
      assert.deepEqual(await stored(shelf), { authors: ['a@x'], books: ['x:t1:a@x', 'y:t1:a@x', 'z:t1:a@x'] })
    })

    test('a book\'s unique violation rolls the author and the earlier books back',
      async (t) => {
        const shelf = await shelfApp(t, dialect)
        const response = await post(shelf, { email: 'a@x', books: [{ title: 'x' }, { title: 'y' }, { title: 'x' }] })
        assert.equal(response.statusCode, 409, response.body)
        assert.equal(response.json().detail, 'A row with the same title already exists')
        assert.deepEqual(await stored(shelf), { authors: [], books: [] })
        // The connection is free again: the next POST writes.
        assert.equal((await post(shelf, three)).statusCode, 201)
      })

    test('errors come in the order of the writes: the author\'s own conflict before a later book\'s 400',
      async (t) => {
        const shelf = await shelfApp(t, dialect)
        assert.equal((await post(shelf, three)).statusCode, 201)
        const invalid = [{ title: 'p' }, { title: 'q'.repeat(50) }]
        const conflict = await post(shelf, { email: 'a@x', books: invalid })
        assert.equal(conflict.statusCode, 409, conflict.body)
        const refused = await post(shelf, { email: 'b@x', books: invalid })
        assert.equal(refused.statusCode, 400, refused.body)
        assert.deepEqual(refused.json().errors.map((error: any) => error.field), ['/books/1/title'])
        // A book's conflict with a stored row comes before a later book's 400.
        const first = await post(shelf, { email: 'c@x', books: [{ title: 'x' }, { title: 'q'.repeat(50) }] })
        assert.equal(first.statusCode, 409, first.body)
        assert.equal(first.json().detail, 'A row with the same title already exists')
        assert.deepEqual(await stored(shelf), { authors: ['a@x'], books: ['x:t1:a@x', 'y:t1:a@x', 'z:t1:a@x'] })
      })

    test('while a tracer listens to the statements, prepared first, then written in Kysely\'s transaction', async (t) => {
      const shelf = await shelfApp(t, dialect)
      // A tracer makes the synchronous transaction decline when it would start: the children are prepared already.
      const traced: string[] = []
      const tracer = { start: (context: any) => { traced.push(String(context.operation ?? '')) } }
      const channel = diagnosticsChannel.tracingChannel('fastify-viewsets:statement')
      channel.subscribe(tracer as any)
      t.after(() => { channel.unsubscribe(tracer as any) })
      const refused = await post(shelf, { email: 'a@x', books: [{ title: 'x' }, { title: 'x' }] })
      assert.equal(refused.statusCode, 409, refused.body)
      assert.deepEqual(await stored(shelf), { authors: [], books: [] })
      const response = await post(shelf, three)
      assert.equal(response.statusCode, 201, response.body)
      assert.equal(statements(shelf)[0], 'begin', shelf.queries.join('\n'))
      assert.ok(traced.length > 0)
      assert.deepEqual(await stored(shelf), { authors: ['a@x'], books: ['x:t1:a@x', 'y:t1:a@x', 'z:t1:a@x'] })
    })

    test('over the user\'s own Kysely (withPreparedStatements, no log, no plugin): on SQLite in one synchronous ' +
      'transaction too; with a plugin, in Kysely\'s', async (t) => {
      const noOp = { transformQuery: ({ node }: any) => node, transformResult: async ({ result }: any) => result }
      for (const plugins of [[], [noOp]]) {
        const traced: string[] = []
        const options = { logged: false, plugins, sqliteStatements: traced }
        const opened = await setupDatabase(t, dialect, 'own Kysely, wrapped', options)
        const shelf = await shelfApp(t, dialect, {}, opened)
        // The first statement through the instance finds out whether it logs: until then, Kysely's transactions.
        assert.equal((await shelf.app.inject({ method: 'GET', url: '/authors/1' })).statusCode, 404)
        const refused = await post(shelf, { email: 'a@x', books: [{ title: 'x' }, { title: 'y' }, { title: 'x' }] })
        assert.equal(refused.statusCode, 409, refused.body)
        assert.deepEqual(await stored(shelf), { authors: [], books: [] })
        traced.length = 0
        const response = await post(shelf, three)
        assert.equal(response.statusCode, 201, response.body)
        assert.deepEqual(response.json().books.map((book: any) => book.title), ['x', 'y', 'z'])
        if (dialect.name === 'sqlite') {
          const begin = plugins.length === 0 ? 'begin immediate' : 'begin'
          const inserts = ['insert into', 'insert into', 'insert into', 'insert into']
          assert.deepEqual(firstWords(traced), [begin, ...inserts, 'commit'], traced.join('\n'))
        }
        assert.deepEqual(await stored(shelf), { authors: ['a@x'], books: ['x:t1:a@x', 'y:t1:a@x', 'z:t1:a@x'] })
      }
    })

    test('two tenants: a row rule on the books refuses a book outside it, and nothing is written (createDatabase, ' +
      'and the user\'s own Kysely)', async (t) => {
      const scope = (eb: any, { request }: any) => eb('tenant', '=', String(request.headers['x-tenant']))
      for (const own of [false, true]) {
        const opened = own ? await setupDatabase(t, dialect, 'own Kysely, wrapped', { logged: false }) : undefined
        const shelf = await shelfApp(t, dialect, { scope }, opened)
        const t1 = { 'x-tenant': 't1' }
        const mixed = { email: 'a@x', books: [{ title: 'x', tenant: 't1' }, { title: 'y', tenant: 't2' }] }
        // Twice: the own Kysely's second request may take the synchronous path the first one cannot.
        for (let attempt = 0; attempt < 2; attempt++) {
          const outside = await post(shelf, mixed, t1)
          assert.equal(outside.statusCode, 403, outside.body)
          assert.deepEqual(await stored(shelf), { authors: [], books: [] })
        }
        const inside = await post(shelf, { email: 'a@x', books: [{ title: 'x', tenant: 't1' }] }, t1)
        assert.equal(inside.statusCode, 201, inside.body)
        assert.deepEqual(await stored(shelf), { authors: ['a@x'], books: ['x:t1:a@x'] })
        const other = await post(shelf, { email: 'b@x', books: [{ title: 'z', tenant: 't1' }] }, { 'x-tenant': 't2' })
        assert.equal(other.statusCode, 403, other.body)
        assert.deepEqual(await stored(shelf), { authors: ['a@x'], books: ['x:t1:a@x'] })
      }
    })
  })
}
