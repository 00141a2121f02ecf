import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Generated } from 'kysely'
import { Viewset } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

// A value outside an enum is answered with the values it allows (issue 42, 6): `must be one of: open, closed`, once
// per field, where Ajv reports each branch of the union ("must be equal to constant", once per value).

const Ticket = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String({ minLength: 1, maxLength: 100 }),
  status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
  priority: Type.Optional(Type.Union([Type.Literal('low'), Type.Literal('high'), Type.Null()])),
  kind: Type.Optional(Type.Enum({ Bug: 'bug', Idea: 'idea' })),
  size: Type.Optional(Type.Union([Type.Literal(1), Type.Literal(2), Type.Literal(3)])),
})

interface TicketsDB {
  tickets: {
    id: Generated<number>
    title: string
    status: string
    priority: string | null
    kind: Generated<string>
    size: Generated<number>
  }
}

async function createTickets ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable('tickets')
    .addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(100)', (column) => column.notNull())
    .addColumn('status', 'varchar(10)', (column) => column.notNull())
    .addColumn('priority', 'varchar(10)')
    .addColumn('kind', 'varchar(10)', (column) => column.notNull().defaultTo('bug'))
    .addColumn('size', 'integer', (column) => column.notNull().defaultTo(1))
    .execute()
}

/** The tickets viewset, with a custom route whose path parameter is an enum. */
class Tickets extends Viewset<TicketsDB, 'tickets', typeof Ticket> {
  override customRoutes (fastify: FastifyInstance) {
    fastify.get('/by-status/:status', {
      schema: { params: Type.Object({ status: Type.Union([Type.Literal('open'), Type.Literal('closed')]) }) },
    }, async (request) => {
      const { status } = request.params as { status: 'open' | 'closed' } // validated by the schema above
      return await this.query().where('status', '=', status).execute()
    })
  }
}

for (const dialect of dialects) {
  describe(`validation messages on ${dialect.name}`, () => {
    async function setup (t: Parameters<typeof testDatabase>[0]) {
      const database = await testDatabase(t, dialect)
      await createTickets(database)
      await database.db.insertInto('tickets').values({ title: 'kept', status: 'open' }).execute()
      const app = testApp(t)
      await app.register(
        new Tickets({ db: database.db, table: 'tickets', schema: Ticket, filterFields: { status: ['eq', 'in'] } }).register(),
        { prefix: '/tickets' }
      )
      return { database, app }
    }

    test('a body value outside an enum names the allowed values, once per field', async (t) => {
      const { database, app } = await setup(t)
      const response = await app.inject({
        method: 'POST',
        url: '/tickets',
        payload: { title: 'new', status: 'pending', priority: 'urgent', kind: 'task', size: 4 },
      })
      assert.equal(response.statusCode, 400)
      const body = problemOf(response)
      assert.equal(body.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(body.errors, [
        { in: 'body', field: 'status', message: 'must be one of: open, closed' },
        { in: 'body', field: 'priority', message: 'must be one of: low, high, null' },
        { in: 'body', field: 'kind', message: 'must be one of: bug, idea' },
        { in: 'body', field: 'size', message: 'must be one of: 1, 2, 3' },
      ])
      assert.equal(
        body.detail,
        'The request is not valid: status must be one of: open, closed; priority must be one of: low, high, null; ' +
          'kind must be one of: bug, idea; size must be one of: 1, 2, 3'
      )
      // A value of the wrong type says the same.
      const typed = await app.inject({ method: 'PATCH', url: '/tickets/1', payload: { status: 5 } })
      assert.equal(typed.statusCode, 400)
      assert.deepEqual(problemOf(typed).errors, [{ in: 'body', field: 'status', message: 'must be one of: open, closed' }])
      const stored = await database.db.selectFrom('tickets').select(['title', 'status']).execute()
      assert.deepEqual(stored, [{ title: 'kept', status: 'open' }])
    })

    test('a filter value outside an enum names the allowed values; an allowed one filters', async (t) => {
      const { app } = await setup(t)
      const response = await app.inject({ url: '/tickets?status=pending' })
      assert.equal(response.statusCode, 400)
      const body = problemOf(response)
      assert.equal(body.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(body.errors, [{ in: 'querystring', field: 'status', message: 'must be one of: open, closed' }])
      const listed = await app.inject({ url: '/tickets?status=open' })
      assert.equal(listed.statusCode, 200)
      assert.deepEqual(listed.json().map((row: { title: string }) => row.title), ['kept'])
    })

    test('a path parameter outside an enum names the allowed values', async (t) => {
      const { app } = await setup(t)
      const response = await app.inject({ url: '/tickets/by-status/pending' })
      assert.equal(response.statusCode, 400)
      const body = problemOf(response)
      assert.equal(body.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(body.errors, [{ in: 'params', field: 'status', message: 'must be one of: open, closed' }])
      const found = await app.inject({ url: '/tickets/by-status/open' })
      assert.equal(found.statusCode, 200)
      assert.deepEqual(found.json().map((row: { title: string }) => row.title), ['kept'])
    })
  })
}
