import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { Generated } from 'kysely'
import { createViewset } from 'fastify-viewsets'
import type { ViewsetOptions, WriteMethod } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

// An upsert is an update where it updates (issue 35, item 4): beforeWrite is told PATCH on the updating branch,
// If-Match and requireIfMatch apply to it (412, 428), and an If-Match on an upsert that would create is a 412. Before,
// `POST` with `Prefer: resolution=merge-duplicates` and `If-Match: "999"` answered 200 and changed the balance.

const secret = 'test-secret-that-is-long-enough-for-hs256'

const Account = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String({ minLength: 1, maxLength: 100 }),
  balance: Type.Optional(Type.Integer()),
  tenant: Type.Optional(Type.String({ readOnly: true })),
})

interface AccountsDB {
  accounts: { id: Generated<number>; title: string; tenant: string; balance: Generated<number> }
}

type AccountsOptions = Partial<ViewsetOptions<AccountsDB, 'accounts', typeof Account>>

interface AccountsApp extends TestDatabase {
  app: FastifyInstance
  alice: Record<string, string>
  bob: Record<string, string>
  /** The methods beforeWrite was told, in order. */
  told: WriteMethod[]
}

const merge = { prefer: 'resolution=merge-duplicates' }

/** alice's account `a1` (balance 10) and bob's `b1`; each tenant reaches its own rows; POST stamps the tenant. */
async function accountsApp (t: TestContext, dialect: TestDialect, options: AccountsOptions = {}): Promise<AccountsApp> {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema
    .createTable('accounts')
    .addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(100)', (column) => column.notNull().unique())
    .addColumn('tenant', 'varchar(64)', (column) => column.notNull())
    .addColumn('balance', 'integer', (column) => column.notNull().defaultTo(0))
    .execute()
  await db.insertInto('accounts').values([
    { title: 'a1', tenant: 'alice', balance: 10 },
    { title: 'b1', tenant: 'bob', balance: 20 },
  ]).execute()
  const told: WriteMethod[] = []
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  await app.register(createViewset({
    db,
    table: 'accounts',
    schema: Account,
    methods: ['LIST', 'GET', 'POST', 'BULK', 'PATCH'],
    conflictFields: ['title'],
    scope: (eb, { token }) => eb('tenant', '=', token?.sub ?? ''),
    beforeWrite: (values, { token, method }) => {
      told.push(method)
      return method === 'PATCH' ? values : { ...values, tenant: token?.sub ?? '' }
    },
    ...options,
  }), { prefix: '/accounts' })
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { ...database, app, alice: { ...bearer('alice'), ...merge }, bob: { ...bearer('bob'), ...merge }, told }
}

async function accounts (db: TestDatabase['db']) {
  const rows = await db.selectFrom('accounts').select(['title', 'tenant', 'balance']).orderBy('id').execute()
  return rows.map((row) => ({ ...row, balance: Number(row.balance) }))
}

for (const dialect of dialects) {
  describe(`an upsert is an update where it updates (${dialect.name})`, () => {
    test('If-Match: "999" on an upsert that updates is a 412, and the balance is unchanged', async (t) => {
      const { app, db, alice } = await accountsApp(t, dialect)
      const before = await accounts(db)
      const response = await app.inject({
        method: 'POST',
        url: '/accounts',
        headers: { ...alice, 'if-match': '"999"' },
        payload: { title: 'a1', balance: 1_000_000 },
      })
      assert.equal(response.statusCode, 412, response.body)
      assert.equal(problemOf(response).code, 'FST_VIEWSET_PRECONDITION_FAILED')
      assert.equal(response.headers['preference-applied'], undefined)
      assert.deepEqual(await accounts(db), before, 'balance unchanged')
    })

    test("If-Match with the row's ETag updates it (200); the same tag again is stale (412)", async (t) => {
      const { app, db, alice } = await accountsApp(t, dialect)
      const id = Number((await db.selectFrom('accounts').select('id').where('title', '=', 'a1').executeTakeFirstOrThrow()).id)
      const got = await app.inject({ method: 'GET', url: `/accounts/${id}`, headers: { authorization: alice.authorization ?? '' } })
      const etag = String(got.headers.etag)
      const updated = await app.inject({
        method: 'POST',
        url: '/accounts',
        headers: { ...alice, 'if-match': etag },
        payload: { title: 'a1', balance: 11 },
      })
      assert.equal(updated.statusCode, 200, updated.body)
      assert.equal(updated.json().balance, 11)
      assert.notEqual(updated.headers.etag, etag)
      const stale = await app.inject({
        method: 'POST',
        url: '/accounts',
        headers: { ...alice, 'if-match': etag },
        payload: { title: 'a1', balance: 12 },
      })
      assert.equal(stale.statusCode, 412)
      assert.equal((await accounts(db))[0]?.balance, 11)
    })

    test('If-Match on an upsert that would create is a 412 (no current representation), * included', async (t) => {
      const { app, db, alice, told } = await accountsApp(t, dialect)
      const before = await accounts(db)
      for (const tag of ['"999"', '*']) {
        const response = await app.inject({
          method: 'POST',
          url: '/accounts',
          headers: { ...alice, 'if-match': tag },
          payload: { title: 'new', balance: 5 },
        })
        assert.equal(response.statusCode, 412, tag)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_PRECONDITION_FAILED')
      }
      assert.deepEqual(await accounts(db), before, 'nothing created')
      assert.deepEqual(told, [], 'beforeWrite never ran: nothing was to be written')
    })

    test('requireIfMatch: the updating branch without If-Match is a 428, the creating one is a 201', async (t) => {
      const { app, db, alice } = await accountsApp(t, dialect, { requireIfMatch: true })
      const before = await accounts(db)
      const update = await app.inject({ method: 'POST', url: '/accounts', headers: alice, payload: { title: 'a1', balance: 0 } })
      assert.equal(update.statusCode, 428, update.body)
      assert.equal(problemOf(update).code, 'FST_VIEWSET_PRECONDITION_REQUIRED')
      assert.deepEqual(await accounts(db), before)
      const bulk = await app.inject({
        method: 'POST',
        url: '/accounts/bulk',
        headers: alice,
        payload: [{ title: 'fresh' }, { title: 'a1', balance: 0 }],
      })
      assert.equal(bulk.statusCode, 428, 'a bulk element that updates needs If-Match too')
      assert.deepEqual(await accounts(db), before, 'all or nothing')
      const create = await app.inject({ method: 'POST', url: '/accounts', headers: alice, payload: { title: 'new' } })
      assert.equal(create.statusCode, 201, create.body)
      assert.equal(create.json().tenant, 'alice')
    })

    test('beforeWrite is told POST (BULK) where an element creates and PATCH where it updates, once each', async (t) => {
      const { app, db, alice, told } = await accountsApp(t, dialect)
      const created = await app.inject({ method: 'POST', url: '/accounts', headers: alice, payload: { title: 'n1' } })
      assert.equal(created.statusCode, 201)
      const updated = await app.inject({ method: 'POST', url: '/accounts', headers: alice, payload: { title: 'a1', balance: 3 } })
      assert.equal(updated.statusCode, 200)
      assert.deepEqual(told, ['POST', 'PATCH'])
      told.length = 0
      const bulk = await app.inject({
        method: 'POST',
        url: '/accounts/bulk',
        headers: alice,
        payload: [{ title: 'a1', balance: 4 }, { title: 'n2' }, { title: 'n1', balance: 7 }],
      })
      assert.equal(bulk.statusCode, 201, bulk.body)
      assert.deepEqual(told, ['PATCH', 'BULK', 'PATCH'])
      assert.deepEqual(bulk.json().map((row: { title: string, balance: number, tenant: string }) =>
        [row.title, row.balance, row.tenant]), [['a1', 4, 'alice'], ['n2', 0, 'alice'], ['n1', 7, 'alice']])
      assert.equal((await accounts(db)).length, 4)
    })

    test("another tenant's row stays a 409 with or without If-Match: the precondition reveals nothing", async (t) => {
      const { app, db, bob } = await accountsApp(t, dialect)
      const before = await accounts(db)
      for (const headers of [bob, { ...bob, 'if-match': '"999"' }, { ...bob, 'if-match': '*' }]) {
        const response = await app.inject({ method: 'POST', url: '/accounts', headers, payload: { title: 'a1', balance: 0 } })
        assert.equal(response.statusCode, 409, JSON.stringify(headers))
        assert.equal(problemOf(response).code, 'FST_VIEWSET_CONFLICT')
      }
      assert.deepEqual(await accounts(db), before)
    })
  })
}
