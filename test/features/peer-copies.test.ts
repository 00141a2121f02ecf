import assert from 'node:assert/strict'
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, test } from 'node:test'
import { pathToFileURL } from 'node:url'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import Database from 'better-sqlite3'
import { createPool } from 'mysql2'
import pg from 'pg'
import { createViewset, withPreparedStatements } from 'fastify-viewsets'
import type * as kyselyModule from 'kysely'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

// kysely and @sinclair/typebox are peer dependencies (issue 42, 1): the app's copy is the library's. When an app
// ends up with two copies anyway (two versions installed, a linked checkout with its own node_modules), a viewset
// given the other copy's Kysely instance or TypeBox schema fails when it is created, naming the package and how to
// keep one copy, instead of failing later with a misleading "unsupported Kysely dialect".

type KyselyModule = typeof kyselyModule

const root = resolve(import.meta.dirname, '../..')

/** The module of a second copy of the installed kysely: the same files, loaded from another folder. */
async function anotherKysely (t: TestContext): Promise<KyselyModule> {
  const folder = mkdtempSync(join(tmpdir(), 'viewsets-kysely-copy-'))
  t.after(() => rmSync(folder, { recursive: true, force: true }))
  cpSync(join(root, 'node_modules/kysely'), join(folder, 'node_modules/kysely'), { recursive: true })
  writeFileSync(join(folder, 'entry.mjs'), "export * from 'kysely'\n")
  return await import(pathToFileURL(join(folder, 'entry.mjs')).href)
}

/** A Kysely instance of the other copy on the test's database, closed when the test ends. */
function otherInstance (t: TestContext, kysely: KyselyModule, database: TestDatabase) {
  const dialect =
    database.dialect === 'postgres'
      ? new kysely.PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 1 }) })
      : database.dialect === 'mysql'
        ? new kysely.MysqlDialect({ pool: createPool({ uri: database.url, connectionLimit: 1 }) })
        : new kysely.SqliteDialect({ database: new Database(':memory:') })
  const db = new kysely.Kysely<any>({ dialect })
  t.after(() => db.destroy())
  return db
}

const anotherCopyMessage = (option: string) =>
  new RegExp(`${option}: this Kysely instance comes from another copy of the kysely package.*npm ls kysely.*` +
    'npm dedupe.*overrides')

for (const dialect of dialects) {
  describe(`peer dependency copies on ${dialect.name}`, () => {
    test('a Kysely instance of another copy of kysely is refused when the viewset is created', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const kysely = await anotherKysely(t)
      const other = otherInstance(t, kysely, database)
      // It is a working Kysely instance, only not of the library's copy.
      const { rows } = await kysely.sql<{ one: number }>`select 1 as one`.execute(other)
      assert.equal(Number(rows[0]?.one), 1)
      assert.equal(other instanceof database.db.constructor, false)

      assert.throws(() => createViewset({ db: other, table: 'items', schema: Item }), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: anotherCopyMessage('db'),
      })
      assert.throws(() => createViewset({ db: database.db, readDb: other, table: 'items', schema: Item }), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: anotherCopyMessage('readDb'),
      })
      assert.throws(() => withPreparedStatements(other, {}), { message: anotherCopyMessage('db') })

      // The library's own copy serves the same table, which the refusals left as it was.
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'one copy' } })
      assert.equal(created.statusCode, 201)
      assert.match(String(created.headers['content-type']), /application\/json/)
      assert.equal(created.json().name, 'one copy')
      const stored = await database.db.selectFrom('items').select('name').execute()
      assert.deepEqual(stored, [{ name: 'one copy' }])
    })

    test('a schema of another TypeBox is refused when the viewset is created; a copy of 0.26-0.34 reads the same',
      async (t) => {
        const database = await testDatabase(t, dialect)
        await createItemsTable(database)
        // TypeBox 1.x (the `typebox` package) marks kinds with a hidden `~kind` key, and Readonly with `~readonly`,
        // which this library would not read: what its Type.Object({ ... }) builds.
        const id = Object.defineProperties({ type: 'integer' }, {
          '~kind': { value: 'Integer', enumerable: false },
          '~readonly': { value: true, enumerable: false },
        })
        const fromTypeBox1 = Object.defineProperty(
          { type: 'object', required: ['name'], properties: { id, name: { type: 'string' } } },
          '~kind',
          { value: 'Object', enumerable: false }
        )
        assert.throws(() => createViewset({ db: database.db, table: 'items', schema: fromTypeBox1 as never }), {
          code: 'FST_VIEWSET_INVALID_OPTION',
          message: /schema: this schema was built by the `typebox` package \(TypeBox 1\.x\).*npm ls @sinclair\/typebox.*npm dedupe.*overrides/,
        })
        // @sinclair/typebox before 0.26 marks Readonly and Optional with Symbol.for('TypeBox.Modifier').
        const fromOldTypeBox = {
          type: 'object',
          properties: { id: { type: 'integer', [Symbol.for('TypeBox.Modifier')]: 'ReadonlyOptional' }, name: { type: 'string' } },
          required: ['name'],
          [Symbol.for('TypeBox.Kind')]: 'Object',
        }
        assert.throws(() => createViewset({ db: database.db, table: 'items', schema: fromOldTypeBox as never }), {
          message: /schema: this schema was built by @sinclair\/typebox older than 0\.26/,
        })

        // Another copy of @sinclair/typebox 0.26-0.34 builds the same objects under the same global symbols: its
        // read-only field stays read-only, so it is served (TypeScript alone tells the copies apart).
        const sameShape = Type.Object({
          id: Type.Optional(Type.Integer({ readOnly: true })),
          name: Type.String(),
          price: Type.Readonly(Type.Optional(Type.Number())),
        })
        const app = testApp(t)
        await app.register(createViewset({ db: database.db, table: 'items', schema: sameShape }), { prefix: '/items' })
        const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'kept', price: 5 } })
        assert.equal(created.statusCode, 201)
        assert.equal(created.json().price, 0)
        const stored = await database.db.selectFrom('items').select(['name', 'price']).execute()
        assert.deepEqual(stored.map((row) => ({ name: row.name, price: Number(row.price) })), [{ name: 'kept', price: 0 }])
      })
  })
}
