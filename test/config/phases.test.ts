import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import { DummyDriver, Kysely, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from 'kysely'
import { createViewset, Viewset } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

// Options are checked in two named phases: the constructor (no database) and mounting (the catalog, at
// app.ready()). Nothing is left to fail in a request.

/** A Kysely instance that cannot reach any database: every statement would answer nothing. */
function unreachable (): Kysely<ItemsDB> {
  return new Kysely<ItemsDB>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new SqliteIntrospector(db),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  })
}

/** A configuration error: a TypeError with its FST_VIEWSET_* code and a message naming the option. */
function configError (code: string, message: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof TypeError, `expected a TypeError, got ${String(error)}`)
    assert.equal(Reflect.get(error, 'code'), code)
    assert.match(error.message, message)
    return true
  }
}

describe('phase 1: the constructor checks every option that needs no database, synchronously', () => {
  const db = unreachable()

  test('new Viewset(bad options) throws at once, without any database', () => {
    assert.throws(() => new Viewset({ db, table: 'items', schema: Item, maxLimit: 0 }), configError('FST_VIEWSET_INVALID_OPTION', /maxLimit/))
    assert.throws(
      () => new Viewset({ db, table: 'items', schema: Item, alwaysCount: 'yes' as never }),
      configError('FST_VIEWSET_INVALID_OPTION', /alwaysCount: expected a boolean/)
    )
    assert.throws(
      () => new Viewset({ db, table: 'items', schema: Item, defaultOrder: 3 as never }),
      configError('FST_VIEWSET_INVALID_OPTION', /defaultOrder: expected a string/)
    )
    assert.throws(
      () => new Viewset({ db, table: 'items', schema: Item, filterFields: ['name'] as never }),
      configError('FST_VIEWSET_INVALID_OPTION', /filterFields: expected an object/)
    )
    assert.throws(
      () => new Viewset({ db, table: 'items', schema: Item, protectMethods: ['POST'] } as never),
      configError('FST_VIEWSET_INVALID_OPTION', /protectMethods: unknown key; did you mean protectedMethods\?/)
    )
  })

  test('createViewset throws at once too, before any route or database', () => {
    assert.throws(
      () => createViewset({ db, table: 'items', schema: Item, versionField: 'name' as never }),
      configError('FST_VIEWSET_INVALID_OPTION', /versionField: "name" must be an integer field/)
    )
  })

  test('good options construct without touching the database', () => {
    const viewset = new Viewset({ db, table: 'items', schema: Item, alwaysCount: true, defaultOrder: '-id' })
    assert.equal(typeof viewset.register(), 'function')
  })
})

for (const dialect of dialects) {
  describe(`phase 2 on ${dialect.name}: mounting checks the options against the catalog, at ready()`, () => {
    test('a schema field that is not a column, and conflictFields that are not a unique key, fail ready()', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const Wrong = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), colour: Type.String() })
      // Constructed fine: the catalog is not read yet.
      const plugin = createViewset({ db: database.db, table: 'items', schema: Wrong as never })
      const app = testApp(t)
      // The plugin is loaded by app.ready() (or by awaiting register): the catalog is read then.
      void app.register(plugin, { prefix: '/items' })
      await assert.rejects(async () => await app.ready(), configError('FST_VIEWSET_UNKNOWN_COLUMN', /"colour" is not a column of table "items"/))

      const other = testApp(t)
      void other.register(createViewset({ db: database.db, table: 'items', schema: Item, conflictFields: ['price'] }), {
        prefix: '/items',
      })
      await assert.rejects(async () => await other.ready(), configError('FST_VIEWSET_INVALID_OPTION', /conflictFields: \(price\) is not the set of columns of a unique/))
    })

    test('a key that a new row could not be read back by fails at ready() on MySQL, never in a request', async (t) => {
      const database = await testDatabase(t, dialect)
      await database.db.schema
        .createTable('codes')
        .addColumn('code', 'varchar(32)', (column) => column.primaryKey())
        .addColumn('label', 'varchar(64)', (column) => column.notNull())
        .execute()
      const Code = Type.Object({ code: Type.Optional(Type.String({ readOnly: true })), label: Type.String() })
      const db: Kysely<{ codes: { code: string; label: string } }> = database.db
      const app = testApp(t)
      void app.register(createViewset({ db, table: 'codes', schema: Code, primaryKey: 'code' }), { prefix: '/codes' })
      if (dialect.name === 'mysql') {
        await assert.rejects(async () => await app.ready(), configError('FST_VIEWSET_INVALID_OPTION', /primaryKey: "code" of "codes" is not AUTO_INCREMENT/))
      } else {
        await app.ready()
      }
      // With beforeWrite to set the key, or without POST, the viewset mounts on every database, and POST works.
      const keyed = testApp(t)
      await keyed.register(
        createViewset({ db, table: 'codes', schema: Code, primaryKey: 'code', withoutTokens: true, beforeWrite: (values) => ({ ...values, code: 'A1' }) }),
        { prefix: '/codes' }
      )
      await keyed.register(createViewset({ db, table: 'codes', schema: Code, primaryKey: 'code', methods: ['LIST', 'GET'] }), {
        prefix: '/read',
      })
      await keyed.ready()
      const created = await keyed.inject({ method: 'POST', url: '/codes', payload: { label: 'first' } })
      assert.equal(created.statusCode, 201)
      assert.deepEqual(created.json(), { code: 'A1', label: 'first' })
      assert.equal(created.headers.location, '/codes/A1')
      assert.deepEqual(await db.selectFrom('codes').selectAll().execute(), [{ code: 'A1', label: 'first' }])
    })
  })
}
