import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { InjectOptions } from 'fastify'
import { createViewset } from 'fastify-viewsets'
import { autoIncrement, databaseSetups, dialects, setupDatabase } from '../helpers/database.js'
import type { DatabaseSetup, TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

// Whatever path a statement takes (prepared and run straight on the connection, named on PostgreSQL, or
// through Kysely's executor, in a transaction or not), Kysely's `log` sees it with its SQL: users and tests
// count statements that way. The same requests on a Kysely the user built and left alone, whose every
// statement goes through Kysely, are the reference.

const Author = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  author_id: Type.Integer(),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
})

async function seeded (t: TestContext, dialect: TestDialect, setup: DatabaseSetup): Promise<TestDatabase> {
  const database = await setupDatabase(t, dialect, setup)
  const { db } = database
  await createItemsTable(database)
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema
    .createTable('authors')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(255)', (column) => column.notNull())
    .execute()
  await db.schema
    .createTable('books')
    .addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(255)', (column) => column.notNull())
    .addColumn('author_id', 'integer', (column) => column.notNull().references('authors.id'))
    .execute()
  await db
    .insertInto('items')
    .values([
      { name: 'Bread', price: 2 },
      { name: 'Milk', price: 1 },
    ])
    .execute()
  await db
    .insertInto('authors')
    .values([{ name: 'Ada' }, { name: 'Grace' }])
    .execute()
  await db
    .insertInto('books')
    .values([
      { title: 'Notes', author_id: 1 },
      { title: 'Compilers', author_id: 2 },
    ])
    .execute()
  return database
}

/** Each path a request takes once, twice over (the second time from the statement caches), with its expected status. */
const requests: Array<[InjectOptions, number]> = [
  [{ url: '/items/1' }, 200],
  [{ url: '/items/999' }, 404],
  [{ url: '/items/1?fields=name' }, 200],
  [{ url: '/items' }, 200],
  [{ url: '/items?order_by=-price&count=true&limit=1' }, 200],
  [{ url: '/books' }, 200],
  [{ url: '/books/1' }, 200],
  [{ method: 'POST', url: '/items', payload: { name: 'Eggs', price: 3 } }, 201],
  [{ method: 'POST', url: '/items', payload: { name: 'Flour' } }, 201],
  [
    {
      method: 'PATCH',
      url: '/items/1',
      payload: { price: 5 },
      headers: { 'content-type': 'application/merge-patch+json' },
    },
    200,
  ],
  [
    {
      method: 'PATCH',
      url: '/items/2',
      payload: { price: 4 },
      headers: { 'content-type': 'application/merge-patch+json', 'if-match': '*' },
    },
    200,
  ],
  [{ method: 'PUT', url: '/items/2', payload: { name: 'Oat milk', price: 2 } }, 200],
  [{ method: 'POST', url: '/items/bulk', payload: [{ name: 'Salt' }, { name: 'Sugar', price: 1 }] }, 201],
  [{ method: 'DELETE', url: '/items/999' }, 404],
]

/** Runs the requests (new names each round) and returns the SQL each one logged. */
async function logged (t: TestContext, dialect: TestDialect, setup: DatabaseSetup): Promise<string[][]> {
  const database = await seeded(t, dialect, setup)
  const app = testApp(t)
  await app.register(
    createViewset({
      db: database.db,
      table: 'items',
      schema: Item,
      methods: ['LIST', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'BULK'],
      orderingFields: ['id', 'price'],
    }),
    { prefix: '/items' }
  )
  await app.register(
    createViewset({
      db: database.db,
      table: 'books',
      schema: Book,
      methods: ['LIST', 'GET'],
      relatedConfig: { selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } } },
    }),
    { prefix: '/books' }
  )
  const statements: string[][] = []
  for (const round of [1, 2]) {
    for (const [options, status] of requests) {
      const renamed = JSON.parse(
        JSON.stringify(options).replace(/"name":"([^"]+)"/g, `"name":"$1 ${round}"`)
      ) as InjectOptions
      database.queries.length = 0
      const response = await app.inject(renamed)
      assert.equal(
        response.statusCode,
        status,
        `${setup}: ${String(options.method ?? 'GET')} ${String(options.url)}: ${response.body}`
      )
      // A LIST and its count run side by side: their order in the log is the order they finish in.
      statements.push([...database.queries].sort())
    }
    const created = await app.inject({ url: '/items?order_by=-id&limit=1' })
    database.queries.length = 0
    const deleted = await app.inject({ method: 'DELETE', url: `/items/${created.json()[0].id as number}` })
    assert.equal(deleted.statusCode, 204)
    statements.push([...database.queries].sort())
  }
  return statements
}

for (const dialect of dialects) {
  describe(`statements reach Kysely's log on ${dialect.name}`, () => {
    test('every path logs the statements that a plain Kysely logs, with createDatabase and with a wrapped own Kysely', async (t) => {
      const [reference, ...others] = [
        'own Kysely' as const,
        ...databaseSetups.filter((setup) => setup !== 'own Kysely'),
      ]
      const expected = await logged(t, dialect, reference)
      // Every request ran at least one statement, and each read and write shows up as its verb.
      assert.ok(
        expected.every((statements) => statements.length > 0),
        JSON.stringify(expected)
      )
      for (const verb of ['select', 'insert', 'update', 'delete']) {
        assert.ok(
          expected.flat().some((statement) => statement.toLowerCase().startsWith(verb)),
          verb
        )
      }
      for (const setup of others) assert.deepEqual(await logged(t, dialect, setup), expected, setup)
    })

    test('writes sending the same fields in another order run the same statement', async (t) => {
      const database = await seeded(t, dialect, 'createDatabase')
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      const texts: string[] = []
      for (const payload of [
        { name: 'Tea', price: 1, in_stock: false },
        { in_stock: true, price: 2, name: 'Coffee' },
      ]) {
        database.queries.length = 0
        const created = await app.inject({ method: 'POST', url: '/items', payload })
        assert.equal(created.statusCode, 201)
        assert.deepEqual(
          { name: created.json().name, price: created.json().price, in_stock: created.json().in_stock },
          payload
        )
        texts.push(database.queries.join('\n'))
        database.queries.length = 0
        const patched = await app.inject({
          method: 'PATCH',
          url: `/items/${created.json().id as number}`,
          payload: { ...payload, name: `${payload.name}!` },
          headers: { 'content-type': 'application/merge-patch+json' },
        })
        assert.equal(patched.statusCode, 200)
        assert.equal(patched.json().name, `${payload.name}!`)
        texts.push(database.queries.join('\n'))
      }
      assert.equal(texts[0], texts[2])
      assert.equal(texts[1], texts[3])
    })
  })
}
