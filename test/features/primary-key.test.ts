import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { createViewset } from 'fastify-viewsets'
import type { ViewsetMethod } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

const BookTag = Type.Object({ book_id: Type.Integer(), tag_id: Type.Integer() })
const Account = Type.Object({
  id: Type.Optional(Type.Integer()),
  email: Type.String(),
  nickname: Type.Union([Type.String(), Type.Null()]),
})
const Summary = Type.Object({ id: Type.Integer(), email: Type.String() })

/** books(id) ← book_tags(book_id, tag_id) composite key; accounts with a unique email and a partially unique nickname;
 * a view. */
async function schema (t: TestContext, dialect: TestDialect): Promise<TestDatabase> {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema
    .createTable('book_tags')
    .addColumn('book_id', 'integer', (column) => column.notNull())
    .addColumn('tag_id', 'integer', (column) => column.notNull())
    .addPrimaryKeyConstraint('book_tags_pk', ['book_id', 'tag_id'])
    .execute()
  await db.schema
    .createTable('accounts')
    .addColumn('id', idType as 'integer', id)
    .addColumn('email', 'varchar(100)', (column) => column.notNull().unique())
    .addColumn('nickname', 'varchar(100)')
    .execute()
  if (dialect.name !== 'mysql') {
    await db.schema
      .createIndex('accounts_nickname')
      .on('accounts')
      .column('nickname')
      .unique()
      .where(sql.ref('nickname'), 'is not', null)
      .execute()
  }
  await db.schema
    .createView('account_emails')
    .as(db.selectFrom('accounts').select(['id', 'email']))
    .execute()
  await db
    .insertInto('accounts')
    .values([{ email: 'a@example.com' }, { email: 'b@example.com' }])
    .execute()
  await db
    .insertInto('book_tags')
    .values([
      { book_id: 1, tag_id: 1 },
      { book_id: 1, tag_id: 2 },
    ])
    .execute()
  return database
}

async function startup (t: TestContext, register: (app: ReturnType<typeof testApp>) => Promise<unknown>) {
  const app = testApp(t)
  try {
    await register(app)
    await app.ready()
  } catch (error) {
    return error
  }
  return undefined
}

for (const dialect of dialects) {
  describe(`primaryKey must identify one row on ${dialect.name}`, () => {
    test('a column of a composite primary key fails at startup, naming primaryKey', async (t) => {
      const { db } = await schema(t, dialect)
      const error = await startup(
        t,
        async (app) =>
          await app.register(createViewset({ db, table: 'book_tags', schema: BookTag, primaryKey: 'book_id' }), {
            prefix: '/book-tags',
          })
      )
      assert.ok(error instanceof Error, 'startup must fail')
      assert.equal((error as { code?: string }).code, 'FST_VIEWSET_INVALID_OPTION')
      assert.match(
        error.message,
        /primaryKey: "book_id" does not identify one row of "book_tags" \(the primary key \(book_id, tag_id\)\)/
      )
    })

    test('a composite primary key and the default primaryKey fail too', async (t) => {
      const { db } = await schema(t, dialect)
      const WithId = Type.Object({ id: Type.Optional(Type.Integer()), book_id: Type.Integer(), tag_id: Type.Integer() })
      const error = await startup(
        t,
        async (app) => await app.register(createViewset({ db, table: 'book_tags', schema: WithId as never }))
      )
      assert.equal((error as { code?: string } | undefined)?.code, 'FST_VIEWSET_INVALID_OPTION')
      assert.match(String(error), /primaryKey/)
    })

    test('a NOT NULL column with a unique constraint is a key', async (t) => {
      const { db } = await schema(t, dialect)
      const app = testApp(t)
      // No POST: the email key is not AUTO_INCREMENT, so MySQL could not read a POSTed row back.
      const methods = ['LIST', 'GET', 'PATCH', 'DELETE'] as const
      await app.register(createViewset({ db, table: 'accounts', schema: Account, primaryKey: 'email', methods: [...methods] }), {
        prefix: '/accounts',
      })
      const found = await app.inject({ method: 'GET', url: '/accounts/b@example.com' })
      assert.equal(found.statusCode, 200, found.body)
      assert.deepEqual(found.json(), { id: 2, email: 'b@example.com', nickname: null })
      const deleted = await app.inject({ method: 'DELETE', url: '/accounts/a@example.com' })
      assert.equal(deleted.statusCode, 204)
      assert.equal((await db.selectFrom('accounts').select('id').execute()).length, 1)
    })

    test('a column without a unique constraint fails', async (t) => {
      const { db } = await schema(t, dialect)
      const error = await startup(
        t,
        async (app) =>
          await app.register(createViewset({ db, table: 'accounts', schema: Account, primaryKey: 'nickname' }), {
            prefix: '/accounts',
          })
      )
      assert.equal((error as { code?: string } | undefined)?.code, 'FST_VIEWSET_INVALID_OPTION')
      assert.match(String(error), /primaryKey: "nickname" does not identify one row of "accounts"/)
    })

    if (dialect.name !== 'mysql') {
      test('a partial unique index is not a key', async (t) => {
        const { db } = await schema(t, dialect)
        await db.schema
          .alterTable('accounts')
          .addColumn('handle', 'varchar(20)', (column) => column.notNull().defaultTo('x'))
          .execute()
        await db.schema
          .createIndex('accounts_handle')
          .on('accounts')
          .column('handle')
          .unique()
          .where(sql.ref('id'), '>', 10)
          .execute()
        const WithHandle = Type.Object({ id: Type.Optional(Type.Integer()), handle: Type.String() })
        const error = await startup(
          t,
          async (app) =>
            await app.register(createViewset({ db, table: 'accounts', schema: WithHandle, primaryKey: 'handle' }))
        )
        assert.equal((error as { code?: string } | undefined)?.code, 'FST_VIEWSET_INVALID_OPTION')
        assert.match(String(error), /primaryKey: "handle" does not identify one row/)
      })
    }

    if (dialect.name === 'postgres') {
      test('a schema-qualified table is read from that schema', async (t) => {
        const { db } = await schema(t, dialect)
        const {
          rows: [current],
        } = await sql<{ name: string }>`select current_schema() as name`.execute(db)
        const qualified = `${current?.name ?? ''}.book_tags`
        const error = await startup(
          t,
          async (app) =>
            await app.register(createViewset({ db, table: qualified, schema: BookTag, primaryKey: 'book_id' }))
        )
        assert.equal((error as { code?: string } | undefined)?.code, 'FST_VIEWSET_INVALID_OPTION')
        assert.match(String(error), /primaryKey: "book_id" does not identify one row/)
        const app = testApp(t)
        await app.register(
          createViewset({ db, table: `${current?.name ?? ''}.accounts`, schema: Account, primaryKey: 'email' }),
          { prefix: '/accounts' }
        )
        assert.equal((await app.inject({ method: 'GET', url: '/accounts/a@example.com' })).statusCode, 200)
      })
    }

    test('a view serves LIST and GET with an explicit primaryKey', async (t) => {
      const { db } = await schema(t, dialect)
      const app = testApp(t)
      await app.register(
        createViewset({ db, table: 'account_emails', schema: Summary, primaryKey: 'id', methods: ['LIST', 'GET'] }),
        { prefix: '/emails' }
      )
      const list = await app.inject({ method: 'GET', url: '/emails' })
      assert.equal(list.statusCode, 200, list.body)
      assert.deepEqual(list.json(), [
        { id: 1, email: 'a@example.com' },
        { id: 2, email: 'b@example.com' },
      ])
      const one = await app.inject({ method: 'GET', url: '/emails/2' })
      assert.equal(one.statusCode, 200)
      assert.deepEqual(one.json(), { id: 2, email: 'b@example.com' })
    })

    for (const methods of [['LIST', 'GET', 'POST'], undefined] as const) {
      test(`a view with ${methods === undefined ? 'every method' : 'POST'} fails at startup, naming methods`, async (t) => {
        const { db } = await schema(t, dialect)
        const error = await startup(
          t,
          async (app) =>
            await app.register(
              createViewset({
                db,
                table: 'account_emails',
                schema: Summary,
                primaryKey: 'id',
                ...(methods === undefined ? {} : { methods: methods as readonly ViewsetMethod[] }),
              })
            )
        )
        assert.equal((error as { code?: string } | undefined)?.code, 'FST_VIEWSET_INVALID_OPTION')
        assert.match(String(error), /methods: "account_emails" is a view, which serves LIST and GET only; remove POST/)
      })
    }

    test('a view without an explicit primaryKey fails, naming primaryKey', async (t) => {
      const { db } = await schema(t, dialect)
      const error = await startup(
        t,
        async (app) =>
          await app.register(createViewset({ db, table: 'account_emails', schema: Summary, methods: ['LIST', 'GET'] }))
      )
      assert.equal((error as { code?: string } | undefined)?.code, 'FST_VIEWSET_INVALID_OPTION')
      assert.match(String(error), /primaryKey: "account_emails" is a view/)
    })
  })
}
