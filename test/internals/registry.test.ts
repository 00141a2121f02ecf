import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset, Viewset } from 'fastify-viewsets'
import { findViewsets, viewsetsOf } from '../../lib/mount/registry.js'
import type { RegisteredViewset } from '../../lib/mount/registry.js'
import { dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

for (const dialect of dialects) {
  describe(`the app's registry of mounted viewsets on ${dialect.name}`, () => {
    test('lists every viewset of the app by table and database, from any encapsulated instance', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      await database.db.schema
        .createTable('notes')
        .addColumn('id', 'integer', (column) => column.primaryKey())
        .addColumn('body', 'varchar(64)')
        .execute()
      const Note = Type.Object({ id: Type.Integer(), body: Type.Optional(Type.Union([Type.String(), Type.Null()])) })
      const app = testApp(t)
      const items = new Viewset({ db: database.db, table: 'items', schema: Item })
      let seenInside: readonly RegisteredViewset[] = []
      await app.register(items.register(), { prefix: '/items' })
      await app.register(
        async (admin) => {
          await admin.register(createViewset({ db: database.db, table: 'notes', schema: Note, methods: ['LIST'] }), {
            prefix: '/notes',
          })
          // An encapsulated child reads the same list as the root.
          seenInside = viewsetsOf(admin)
        },
        { prefix: '/admin' }
      )
      await app.ready()

      const listed = viewsetsOf(app).map(({ table, prefix, db }) => ({ table, prefix, sameDb: db === database.db }))
      assert.deepEqual(listed, [
        { table: 'items', prefix: '/items', sameDb: true },
        { table: 'notes', prefix: '/admin/notes', sameDb: true },
      ])
      assert.equal(seenInside, viewsetsOf(app))
      const [found, ...others] = findViewsets(app, database.db, 'items')
      assert.equal(found?.viewset, items)
      assert.ok(found?.viewset instanceof Viewset)
      assert.deepEqual(others, [])
      // Another database's `items` is another table.
      assert.deepEqual(findViewsets(app, {}, 'items'), [])
      assert.deepEqual(findViewsets(app, database.db, 'nowhere'), [])
      // Another app has a registry of its own.
      assert.deepEqual(viewsetsOf(testApp(t)), [])
      // The registry still serves: the routes are there.
      assert.equal((await app.inject({ url: '/admin/notes' })).statusCode, 200)
    })

    test('is read-only once the app is ready', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      await app.ready()
      const registry = viewsetsOf(app)
      assert.ok(Object.isFrozen(registry))
      assert.ok(Object.isFrozen(registry[0]))
      assert.throws(() => {
        Reflect.apply(Array.prototype.push, registry, [{ table: 'x', db: {}, prefix: '', viewset: {} }])
      }, TypeError)
      assert.throws(() => {
        'use strict'
        Object.assign(registry[0] ?? {}, { table: 'other' })
      }, TypeError)
      assert.equal(viewsetsOf(app).length, 1)
      assert.equal(viewsetsOf(app)[0]?.table, 'items')
    })
  })
}
