import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { createDatabase, createViewset, databaseUrl, Viewset } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

for (const dialect of dialects) {
  describe(`configuration on ${dialect.name}`, () => {
    test('register() adds LIST before GET whatever the order given', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      const added: string[] = []
      app.addHook('onRoute', (route) => {
        if (route.method !== 'HEAD') added.push(`${String(route.method)} ${route.url}`)
      })
      await app.register(
        new Viewset({ db: database.db, table: 'items', schema: Item }).register(['DELETE', 'GET', 'POST', 'LIST']),
        { prefix: '/items' }
      )
      await app.ready()
      // Then, on each path, one route for OPTIONS and the 405s of the methods it lacks (issue 11), every method
      // Fastify's router knows (TRACE and QUERY too: issue 34); one route, as each costs startup (issue 43).
      assert.deepEqual(added, [
        'GET /items',
        'GET /items/:id',
        'POST /items',
        'DELETE /items/:id',
        'OPTIONS,PUT,PATCH,DELETE,TRACE,QUERY /items',
        'OPTIONS,POST,PUT,PATCH,TRACE,QUERY /items/:id',
      ])
    })

    test('register() rejects a non-array, an unknown name or a duplicate before any route is added', async (t) => {
      const database = await testDatabase(t, dialect)
      const viewset = new Viewset({ db: database.db, table: 'items', schema: Item })
      assert.throws(() => viewset.register('LIST' as never), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /methods: expected an array/,
      })
      assert.throws(() => viewset.register(['LIST', 'FETCH' as never]), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /unknown method "FETCH"/,
      })
      assert.throws(() => viewset.register(['GET', 'LIST', 'GET']), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /"GET" is listed twice/,
      })
      assert.throws(
        () => createViewset({ db: database.db, table: 'items', schema: Item, methods: ['PUSH' as never] }),
        { code: 'FST_VIEWSET_INVALID_OPTION' }
      )
    })

    test('options are checked when the viewset is created, with messages that name the option', async (t) => {
      const database = await testDatabase(t, dialect)
      const { db } = database
      assert.throws(() => createViewset({ db, table: 'items', schema: Item, primaryKey: 'uuid' as never }), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /primaryKey: "uuid" is not a field of the schema/,
      })
      assert.throws(() => createViewset({ db, table: 'items', schema: Type.String() as never }), {
        message: /schema: expected a TypeBox object schema/,
      })
      assert.throws(() => createViewset({ db: {} as typeof db, table: 'items', schema: Item }), {
        message: /db: expected a Kysely instance/,
      })
      assert.throws(() => createViewset({ db, table: '' as never, schema: Item }), {
        message: /table: expected a table name/,
      })
      assert.throws(() => createViewset({ db, table: 'items', schema: Item, maxLimit: 0 }), { message: /maxLimit/ })
      assert.throws(() => createViewset({ db, table: 'items', schema: Item, defaultLimit: 500 }), {
        message: /defaultLimit/,
      })
      assert.throws(() => createViewset({ db, table: 'items', schema: Item, tags: 'items' as never }), {
        message: /tags/,
      })
    })

    test('a table that does not exist fails at ready() and names the table', async (t) => {
      const database = await testDatabase(t, dialect)
      const app = testApp(t)
      await assert.rejects(
        async () => {
          await app.register(createViewset({ db: database.db, table: 'nowhere', schema: Item }), { prefix: '/items' })
          await app.ready()
        },
        { code: 'FST_VIEWSET_UNKNOWN_TABLE', message: /"nowhere"/ }
      )
    })

    test('a schema field that is not a column fails at ready() and names the field', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      const Wrong = Type.Object({
        id: Type.Optional(Type.Integer({ readOnly: true })),
        name: Type.String(),
        colour: Type.String(),
      })
      await assert.rejects(
        async () => {
          await app.register(createViewset({ db: database.db, table: 'items', schema: Wrong as never }), {
            prefix: '/items',
          })
          await app.ready()
        },
        { code: 'FST_VIEWSET_UNKNOWN_COLUMN', message: /"colour" is not a column of table "items"/ }
      )
    })

    test('a viewset never closes the database it is given', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      await app.ready()
      await app.close()
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(database.db)
      assert.equal(Number(rows[0]?.one), 1)
    })
  })
}

describe('createDatabase', () => {
  test('an unsupported URL fails at once and hides the password', () => {
    assert.throws(
      () => createDatabase('mongodb://user:hunter2@host/db'),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, 'FST_VIEWSET_INVALID_DATABASE_URL')
        assert.doesNotMatch(error.message, /hunter2/)
        assert.match(error.message, /postgres:\/\//)
        return true
      }
    )
    assert.throws(() => createDatabase('sqlite:'), { code: 'FST_VIEWSET_INVALID_DATABASE_URL' })
  })

  test('without a URL it uses DATABASE_URL, else ./base.db', () => {
    const saved = process.env.DATABASE_URL
    try {
      process.env.DATABASE_URL = 'sqlite::memory:'
      assert.equal(databaseUrl(), 'sqlite::memory:')
      process.env.DATABASE_URL = ''
      assert.equal(databaseUrl(), 'sqlite:base.db')
      assert.equal(databaseUrl('postgres://x@y/z'), 'postgres://x@y/z')
    } finally {
      if (saved === undefined) delete process.env.DATABASE_URL
      else process.env.DATABASE_URL = saved
    }
  })

  test('a SQLite file it opens gets WAL, a busy timeout and foreign keys, lazily', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'viewsets-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'lazy.db')
    const db = createDatabase<any>(`sqlite:${file}`)
    t.after(() => db.destroy())
    const { rows: journal } = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db)
    assert.equal(journal[0]?.journal_mode, 'wal')
    const { rows: timeout } = await sql<{ timeout: number }>`pragma busy_timeout`.execute(db)
    assert.equal(timeout[0]?.timeout, 5000)
    const { rows: keys } = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db)
    assert.equal(keys[0]?.foreign_keys, 1)
  })
})
