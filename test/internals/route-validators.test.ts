import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { createViewset, Viewset } from '../../lib/index.js'
import { problemHandler } from '../../lib/http/problem-handler.js'
import { compiledValidators, componentsValidatorCompiler } from '../../lib/schema/validator.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

// The generated routes' validators compile on the first request that needs them, not at `app.ready()` (issue 43:
// compiling them, the first compile of a process above all, was a tenth of a start). What must not change: the first
// request's answer (errors, coercion, canonical integers), and a schema the user wrote in the viewset's scope still
// fails at startup. compiledValidators() counts every validator the library compiles (schema/validator.ts).

const options = { filterFields: { price: ['gte' as const] }, orderingFields: ['name' as const] }

/** The items schema, its text made unique per dialect: no validator of another test of this process is reused. */
function lazySchema (dialect: TestDialect) {
  return Type.Object({
    ...Item.properties,
    name: Type.String({ minLength: 1, maxLength: 255, description: `lazily validated on ${dialect.name}` }),
  })
}

async function itemsApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  return { app: testApp(t), db: database.db }
}

// In this order, most of them the first of their route (or of its validator); what a client sees of each answer.
const requests = [
  { method: 'POST', url: '/items', payload: { name: '', price: -1, colour: 'red' } },
  { method: 'GET', url: '/items/01' },
  { method: 'GET', url: '/items?price__gte=cheap' },
  { method: 'POST', url: '/items', payload: { name: 'kettle', price: 20 } },
  { method: 'GET', url: '/items?price__gte=10&limit=1&order_by=name' },
  { method: 'GET', url: '/items' }, // limit and offset from the schema's defaults
  { method: 'PATCH', url: '/items/1', payload: { price: 'free' } },
  { method: 'PUT', url: '/items/1', payload: { name: 'teapot' } },
  { method: 'HEAD', url: '/items/1' },
] as const

async function answers (app: FastifyInstance) {
  const seen = []
  for (const request of requests) {
    const response = await app.inject(request)
    seen.push({ status: response.statusCode, type: response.headers['content-type'], body: response.body })
  }
  return seen
}

for (const dialect of dialects) {
  describe(`the generated routes' validators on ${dialect.name}`, () => {
    test('none is compiled at startup; each first request compiles its own and answers as a startup compile does', async (t) => {
      const schema = lazySchema(dialect)
      const lazy = await itemsApp(t, dialect)
      await lazy.app.register(createViewset({ db: lazy.db, table: 'items', schema, ...options }), { prefix: '/items' })
      const beforeReady = compiledValidators()
      await lazy.app.ready()
      assert.equal(compiledValidators(), beforeReady, 'no validator compiled by app.ready()')

      const first = await lazy.app.inject(requests[0])
      assert.equal(first.statusCode, 400)
      const problem = problemOf(first)
      assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(problem.errors?.map((error) => error.field).sort(), ['colour', 'name', 'price'])
      const afterFirst = compiledValidators()
      assert.ok(afterFirst > beforeReady, 'the first POST compiled its body validator')
      await lazy.app.inject(requests[0])
      assert.equal(compiledValidators(), afterFirst, 'the second POST compiled nothing')
      const lazyAnswers = [{ status: first.statusCode, type: first.headers['content-type'], body: first.body }]
      lazyAnswers.push(...(await answers(lazy.app)).slice(1))

      // The same viewset with a `static listQuery` (a schema its class wrote) compiles its validators at startup.
      class Listed extends Viewset<ItemsDB, 'items', typeof schema> {
        static override listQuery = Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10, description: dialect.name })),
        })
      }
      const eager = await itemsApp(t, dialect)
      await eager.app.register(new Listed({ db: eager.db, table: 'items', schema, ...options }).register(), {
        prefix: '/items',
      })
      const beforeEager = compiledValidators()
      await eager.app.ready()
      assert.ok(compiledValidators() > beforeEager, 'a viewset with listQuery compiles at app.ready()')
      assert.deepEqual(lazyAnswers, await answers(eager.app))
      assert.deepEqual(lazyAnswers.map(({ status }) => status), [400, 400, 400, 201, 200, 200, 400, 200, 200])
    })

    test('a custom route\'s schema in the viewset\'s scope still fails app.ready() when it cannot compile', async (t) => {
      class Custom extends Viewset<ItemsDB, 'items', typeof Item> {
        override customRoutes (fastify: FastifyInstance): void {
          const body = { type: 'object', properties: { count: { type: 'integr' } } }
          fastify.post('/count', { schema: { body } }, async () => ({}))
        }
      }
      const { app, db } = await itemsApp(t, dialect)
      await app.register(new Custom({ db, table: 'items', schema: Item }).register(), { prefix: '/items' })
      await assert.rejects(async () => { await app.ready() }, { code: 'FST_ERR_SCH_VALIDATION_BUILD', message: /schema is invalid/ })
    })
  })
}

test('a generated schema that does not compile answers 500 FST_VIEWSET_INTERNAL on its route, and says nothing', async (t) => {
  const app = testApp(t)
  const logged: unknown[] = []
  app.setErrorHandler(problemHandler(() => undefined))
  app.addHook('onError', async (_request, _reply, error) => { logged.push(error.cause) })
  const compiler = componentsValidatorCompiler([], 'on first use')
  const body = { type: 'object', properties: { count: { type: 'integr' } } }
  app.post('/count', { schema: { body }, validatorCompiler: compiler }, async () => ({}))
  await app.ready() // the schema is not compiled yet
  for (let round = 0; round < 2; round++) {
    const response = await app.inject({ method: 'POST', url: '/count', payload: { count: 1 } })
    assert.equal(response.statusCode, 500)
    assert.deepEqual(problemOf(response), {
      type: 'urn:fastify-viewsets:problem:internal',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An unexpected error occurred',
      code: 'FST_VIEWSET_INTERNAL',
    })
    assert.doesNotMatch(response.body, /integr|schema/)
  }
  // What went wrong reaches the log, as the error's cause.
  assert.match(String(logged[0]), /schema is invalid/)
})

test('a generated schema that holds a $ref or an $id is compiled at once: only compiling checks them', () => {
  const compile = componentsValidatorCompiler([], 'on first use')
  const route = { method: 'POST', url: '/items', httpPart: 'body' }
  const missing = { type: 'object', properties: { tag: { $ref: 'Missing#' } } }
  assert.throws(() => compile({ ...route, schema: missing }), /can't resolve reference Missing#/)
  const before = compiledValidators()
  compile({ ...route, schema: { type: 'object', properties: { tag: { type: 'string', pattern: '^(' } } } })
  assert.equal(compiledValidators(), before, 'a schema without identifiers waits for its first use')
})
