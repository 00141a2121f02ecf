import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { Generated } from 'kysely'
import { baseMethods, createViewset, viewsetMethods } from 'fastify-viewsets'
import type { AuthorizedMethod, ViewsetOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

/** Every method but HISTORY, which needs the `history` option. */
const plainMethods = viewsetMethods

// Writes are checked against the rule (issue 35, item 2): the row as stored after POST, BULK, PUT, PATCH and an
// upsert must be in the viewset's rule, else a 403 and nothing written; two tenants, with real tokens.

const secret = 'test-secret-that-is-long-enough-for-hs256'

/** A doc's tenant is a writable field: the rule, not the schema, keeps it to the caller's. */
const Doc = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String({ minLength: 1, maxLength: 100 }),
  tenant: Type.String({ maxLength: 64 }),
  balance: Type.Optional(Type.Integer()),
})

interface DocsDB {
  docs: { id: Generated<number>; title: string; tenant: string; balance: Generated<number> }
}

type DocsOptions = Partial<ViewsetOptions<DocsDB, 'docs', typeof Doc>>

interface DocsApp extends TestDatabase {
  app: FastifyInstance
  alice: { authorization: string }
  bob: { authorization: string }
  /** alice's doc `a1` and bob's doc `b1`. */
  ids: { alice: number; bob: number }
}

const tenantRule: NonNullable<DocsOptions['scope']> = (eb, { token }) => eb('tenant', '=', token?.sub ?? '')

const tenanted: DocsOptions = {
  methods: plainMethods,
  protectedMethods: plainMethods,
  conflictFields: ['title'],
  scope: tenantRule,
}

async function docsApp (t: TestContext, dialect: TestDialect, options: DocsOptions = tenanted): Promise<DocsApp> {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema
    .createTable('docs')
    .addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(100)', (column) => column.notNull().unique())
    .addColumn('tenant', 'varchar(64)', (column) => column.notNull())
    .addColumn('balance', 'integer', (column) => column.notNull().defaultTo(0))
    .execute()
  await db.insertInto('docs').values({ title: 'a1', tenant: 'alice' }).execute()
  await db.insertInto('docs').values({ title: 'b1', tenant: 'bob' }).execute()
  const rows = await db.selectFrom('docs').select(['id', 'title']).orderBy('id').execute()
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  await app.register(createViewset({ db, table: 'docs', schema: Doc, ...options }), { prefix: '/docs' })
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return {
    ...database,
    app,
    alice: bearer('alice'),
    bob: bearer('bob'),
    ids: { alice: Number(rows[0]?.id), bob: Number(rows[1]?.id) },
  }
}

async function docs (db: TestDatabase['db']) {
  const rows = await db.selectFrom('docs').select(['id', 'title', 'tenant', 'balance']).orderBy('id').execute()
  return rows.map((row) => ({ ...row, id: Number(row.id), balance: Number(row.balance) }))
}

const merge = { prefer: 'resolution=merge-duplicates' }

for (const dialect of dialects) {
  describe(`writes are checked against the rule (${dialect.name})`, () => {
    test("POST of a row in another tenant is a 403 and writes nothing; in the caller's, a 201", async (t) => {
      const { app, db, alice } = await docsApp(t, dialect)
      const before = await docs(db)
      const refused = await app.inject({
        method: 'POST',
        url: '/docs',
        headers: alice,
        payload: { title: 'spy', tenant: 'bob' },
      })
      assert.equal(refused.statusCode, 403)
      const problem = problemOf(refused)
      assert.equal(problem.code, 'FST_VIEWSET_FORBIDDEN')
      assert.equal(problem.detail, 'The row would be written outside the rows this token may access')
      assert.deepEqual(await docs(db), before, 'nothing written')
      const created = await app.inject({
        method: 'POST',
        url: '/docs',
        headers: alice,
        payload: { title: 'mine', tenant: 'alice' },
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.json().tenant, 'alice')
      assert.equal((await docs(db)).length, before.length + 1)
    })

    test('PATCH and PUT moving a row to another tenant are a 403 and leave it unchanged', async (t) => {
      const { app, db, alice, ids } = await docsApp(t, dialect)
      const before = await docs(db)
      for (const [method, payload] of [
        ['PATCH', { tenant: 'bob' }],
        ['PUT', { title: 'moved', tenant: 'bob', balance: 5 }],
      ] as const) {
        const response = await app.inject({ method, url: `/docs/${ids.alice}`, headers: alice, payload })
        assert.equal(response.statusCode, 403, method)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_FORBIDDEN')
        assert.deepEqual(await docs(db), before, `${method}: row unchanged`)
      }
      const kept = await app.inject({
        method: 'PATCH',
        url: `/docs/${ids.alice}`,
        headers: alice,
        payload: { balance: 7 },
      })
      assert.equal(kept.statusCode, 200)
      assert.equal(kept.json().balance, 7)
    })

    test("a PATCH of no column the rule reads skips the check's read; one of the rule's column is checked", async (t) => {
      const { app, db, alice, ids, queries } = await docsApp(t, dialect)
      const isCheck = (text: string) => /^select .* from "?docs"? where .* in \(/i.test(text.replaceAll('`', '"'))
      queries.length = 0
      const kept = await app.inject({ method: 'PATCH', url: `/docs/${ids.alice}`, headers: alice, payload: { balance: 9 } })
      assert.equal(kept.statusCode, 200)
      assert.equal(kept.json().balance, 9)
      assert.deepEqual(queries.filter(isCheck), [], queries.join('\n'))
      assert.equal((await docs(db)).find((doc) => doc.id === ids.alice)?.balance, 9)
      queries.length = 0
      const moved = await app.inject({ method: 'PATCH', url: `/docs/${ids.alice}`, headers: alice, payload: { tenant: 'bob' } })
      assert.equal(moved.statusCode, 403)
      assert.equal(queries.filter(isCheck).length, 1, queries.join('\n'))
      assert.equal((await docs(db)).find((doc) => doc.id === ids.alice)?.tenant, 'alice', 'row unchanged')
    })

    test("a target row outside the rule stays a 404, before the write's 403", async (t) => {
      const { app, db, alice, ids } = await docsApp(t, dialect)
      const before = await docs(db)
      const response = await app.inject({
        method: 'PATCH',
        url: `/docs/${ids.bob}`,
        headers: alice,
        payload: { tenant: 'alice' },
      })
      assert.equal(response.statusCode, 404)
      assert.equal(problemOf(response).code, 'FST_VIEWSET_NOT_FOUND')
      assert.deepEqual(await docs(db), before)
    })

    test('BULK with one element in another tenant is a 403 naming it, and writes nothing', async (t) => {
      const { app, db, alice } = await docsApp(t, dialect)
      const before = await docs(db)
      const payload = [
        { title: 'x0', tenant: 'alice' },
        { title: 'x1', tenant: 'alice' },
        { title: 'x2', tenant: 'bob' },
        { title: 'x3', tenant: 'alice' },
      ]
      const response = await app.inject({ method: 'POST', url: '/docs/bulk', headers: alice, payload })
      assert.equal(response.statusCode, 403)
      const problem = problemOf(response)
      assert.equal(problem.code, 'FST_VIEWSET_FORBIDDEN')
      assert.equal(problem.detail, 'Element 2 would be written outside the rows this token may access')
      assert.deepEqual(await docs(db), before, 'nothing written')
      const fine = await app.inject({
        method: 'POST',
        url: '/docs/bulk',
        headers: alice,
        payload: payload.map((doc) => ({ ...doc, tenant: 'alice' })),
      })
      assert.equal(fine.statusCode, 201)
      assert.equal((await docs(db)).length, before.length + 4)
    })

    test('an upsert that would move a row, or create one, in another tenant is a 403; outside it stays a 409', async (t) => {
      const { app, db, alice } = await docsApp(t, dialect)
      const before = await docs(db)
      for (const payload of [
        { title: 'a1', tenant: 'bob' },
        { title: 'new', tenant: 'bob' },
      ]) {
        const response = await app.inject({ method: 'POST', url: '/docs', headers: { ...alice, ...merge }, payload })
        assert.equal(response.statusCode, 403, payload.title)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_FORBIDDEN')
        assert.deepEqual(await docs(db), before, `${payload.title}: nothing written`)
      }
      const bulk = await app.inject({
        method: 'POST',
        url: '/docs/bulk',
        headers: { ...alice, ...merge },
        payload: [
          { title: 'a1', tenant: 'alice', balance: 3 },
          { title: 'n1', tenant: 'bob' },
        ],
      })
      assert.equal(bulk.statusCode, 403)
      assert.equal(problemOf(bulk).detail, 'Element 1 would be written outside the rows this token may access')
      assert.deepEqual(await docs(db), before)
      const outside = await app.inject({
        method: 'POST',
        url: '/docs',
        headers: { ...alice, ...merge },
        payload: { title: 'b1', tenant: 'alice' },
      })
      assert.equal(outside.statusCode, 409)
      assert.equal(problemOf(outside).code, 'FST_VIEWSET_CONFLICT')
      assert.deepEqual(await docs(db), before)
    })

    test('POST and BULK are checked against the GET rule', async (t) => {
      const { app, db, alice } = await docsApp(t, dialect, {
        ...tenanted,
        // Writes are open, reads are the caller's: a created row must be one it can read.
        scope: (eb, { token, method }) =>
          method === 'GET' || method === 'LIST' ? eb('tenant', '=', token?.sub ?? '') : undefined,
      })
      const before = await docs(db)
      const post = await app.inject({
        method: 'POST',
        url: '/docs',
        headers: alice,
        payload: { title: 'spy', tenant: 'bob' },
      })
      assert.equal(post.statusCode, 403)
      assert.deepEqual(await docs(db), before)
    })

    test("protectedMethods ['POST'] protects BULK: an anonymous bulk write is a 401, and authorize sees BULK", async (t) => {
      assert.equal(baseMethods.BULK, 'POST')
      const seen: AuthorizedMethod[] = []
      const { app, db, alice } = await docsApp(t, dialect, {
        methods: plainMethods,
        protectedMethods: ['POST'],
        authorize: (_token, method) => {
          seen.push(method)
          return true
        },
      })
      const before = await docs(db)
      const payload = [{ title: 'anon', tenant: 'bob' }]
      const anonymous = await app.inject({ method: 'POST', url: '/docs/bulk', payload })
      assert.equal(anonymous.statusCode, 401)
      assert.equal(problemOf(anonymous).code, 'FST_VIEWSET_UNAUTHORIZED')
      assert.deepEqual(await docs(db), before, 'nothing written')
      const signed = await app.inject({ method: 'POST', url: '/docs/bulk', headers: alice, payload })
      assert.equal(signed.statusCode, 201)
      assert.deepEqual(seen, ['BULK'])
      const document = await app.inject({ method: 'GET', url: '/docs' })
      assert.equal(document.statusCode, 200, 'LIST stays open')
    })

    test('a scope with nothing that verifies tokens fails at startup, unless withoutTokens says the rules read none', async (t) => {
      const { db } = await testDatabase(t, dialect)
      for (const [option, rule] of [
        ['scope', { scope: tenantRule }],
        ['beforeWrite', { beforeWrite: (values: object) => values }],
      ] as const) {
        const late = testApp(t)
        void late.register(createViewset({ db, table: 'docs', schema: Doc, ...rule }), { prefix: '/docs' })
        // @fastify/jwt after the viewset: its tokens would be ignored there.
        void late.register(fastifyJwt, { secret })
        await assert.rejects(async () => await late.ready(), (error: Error & { code?: string }) => {
          assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
          assert.match(error.message, new RegExp(`Invalid viewset option ${option}: nothing can verify a token here`))
          assert.match(error.message, /withoutTokens: true/)
          return true
        })
      }
    })

    test('withoutTokens: true starts a viewset whose rule reads no token', async (t) => {
      const database = await testDatabase(t, dialect)
      const [idType, id] = autoIncrement(dialect.name)
      await database.db.schema
        .createTable('docs')
        .addColumn('id', idType as 'integer', id)
        .addColumn('title', 'varchar(100)', (column) => column.notNull().unique())
        .addColumn('tenant', 'varchar(64)', (column) => column.notNull())
        .addColumn('balance', 'integer', (column) => column.notNull().defaultTo(0))
        .execute()
      const app = testApp(t)
      await app.register(
        createViewset({
          db: database.db,
          table: 'docs',
          schema: Doc,
          withoutTokens: true,
          scope: (eb) => eb('tenant', '=', 'public'),
        }),
        { prefix: '/docs' }
      )
      await app.register(fastifyJwt, { secret })
      await app.ready()
      const refused = await app.inject({ method: 'POST', url: '/docs', payload: { title: 'x', tenant: 'other' } })
      assert.equal(refused.statusCode, 403)
      const created = await app.inject({ method: 'POST', url: '/docs', payload: { title: 'x', tenant: 'public' } })
      assert.equal(created.statusCode, 201)
      assert.deepEqual(await docs(database.db), [{ id: created.json().id, title: 'x', tenant: 'public', balance: 0 }])
    })
  })
}
