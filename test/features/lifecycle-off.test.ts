import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { createViewset } from '../../lib/index.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// Issue 39's lifecycle options cost nothing when they are off: a viewset without `history` or `softDelete`, on a
// single-column key, runs the statements it ran before them (one per request; where MariaDB has no RETURNING, the
// write and its read back in one transaction), with no soft-delete term and no history statement; the same table
// served with both options on runs them, so the assertions can tell the two apart. On the three databases.

const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ maxLength: 40 }),
})

type Items = TestDatabase & { app: ReturnType<typeof testApp> }

async function itemsApp (t: TestContext, dialect: TestDialect): Promise<Items> {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema.createTable('lo_items').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull())
    .addColumn('deleted_at', 'timestamp').execute()
  await db.insertInto('lo_items').values([{ name: 'a' }, { name: 'b' }]).execute()
  const app = testApp(t)
  const methods = ['LIST', 'GET', 'POST', 'PATCH', 'DELETE']
  const common = { db, table: 'lo_items', schema: Item, methods, withoutTokens: true }
  await app.register(createViewset(common as never), { prefix: '/plain' })
  const lifecycle = { ...common, history: { createTable: true }, softDelete: 'deleted_at' }
  await app.register(createViewset(lifecycle as never), { prefix: '/kept' })
  await app.ready()
  return { ...database, app }
}

/** The statements one request ran, each as its first two words and whether it names the history or the soft delete. */
async function ran (items: Items, method: string, url: string, payload?: object) {
  items.queries.length = 0
  const response = await items.app.inject({ method: method as 'GET', url, ...(payload === undefined ? {} : { payload }) })
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`)
  const texts = items.queries.map((text) => text.replace(/[`"]/g, '').toLowerCase())
  return {
    statements: texts.map((text) => text.trim().split(/\s+/).slice(0, 2).join(' ')),
    history: texts.some((text) => text.includes('viewset_history')),
    softDelete: texts.some((text) => text.includes('deleted_at')),
  }
}

for (const dialect of dialects) {
  describe(`lifecycle options off cost nothing [${dialect.name}]`, () => {
    test('a viewset without history or softDelete runs one statement per request (and MariaDB\'s read back)',
      async (t) => {
        const items = await itemsApp(t, dialect)
        // MariaDB reads a written row back (by its key, an inserted one by its insert id) in the write's transaction.
        const readBack = (write: string) => dialect.name === 'mysql' ? ['begin', write, 'select id,', 'commit'] : [write]
        const expected: Array<[string, string, object | undefined, string[]]> = [
          ['GET', '/plain', undefined, ['select id,']],
          ['GET', '/plain/1', undefined, ['select id,']],
          ['POST', '/plain', { name: 'c' }, readBack('insert into')],
          ['PATCH', '/plain/1', { name: 'd' }, readBack('update lo_items')],
          ['DELETE', '/plain/2', undefined, ['delete from']],
        ]
        for (const [method, url, payload, statements] of expected) {
          const seen = await ran(items, method, url, payload)
          assert.deepEqual(seen, { statements, history: false, softDelete: false }, `${method} ${url}`)
        }
        // The plain DELETE removed the row: no soft delete happened behind it.
        const left = await items.db.selectFrom('lo_items').select('id').orderBy('id').execute()
        assert.deepEqual(left.map((row: any) => Number(row.id)), [1, 3])
      })

    test('the same table with both options on: the soft-delete term and the history\'s statements', async (t) => {
      const items = await itemsApp(t, dialect)
      const get = await ran(items, 'GET', '/kept/1')
      assert.deepEqual(get, { statements: ['select id,'], history: false, softDelete: true })
      const patch = await ran(items, 'PATCH', '/kept/1', { name: 'd' })
      assert.ok(patch.history && patch.statements.length > 2, patch.statements.join(', '))
      const deleted = await ran(items, 'DELETE', '/kept/2')
      assert.ok(deleted.history && deleted.softDelete, deleted.statements.join(', '))
      const row = await items.db.selectFrom('lo_items').select(['id', 'deleted_at']).where('id', '=', 2).executeTakeFirst()
      assert.ok(row !== undefined && row.deleted_at !== null, 'soft-deleted, still stored')
    })
  })
}
