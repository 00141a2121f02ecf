import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { TProperties } from '@sinclair/typebox'
import { sql } from 'kysely'
import { createViewset } from 'fastify-viewsets'
import type { ViewsetMethod } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// Mounting checks each schema field against its column's type (issue 34 item 5): a NULL or a text the field
// cannot hold would otherwise be served as "", 0 or false, or as a number it is not.

async function createThings ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema
    .createTable('things')
    .addColumn('id', idType as 'integer', id)
    .addColumn('label', 'varchar(50)', (column) => column.notNull())
    .addColumn('note', 'varchar(100)')
    .addColumn('code', 'varchar(20)', (column) => column.notNull())
    .addColumn('big', 'bigint', (column) => column.notNull())
    .addColumn('stamp', 'varchar(30)', (column) => column.defaultTo('fresh'))
    .addColumn('rank', 'integer')
    .execute()
  await db.schema.createView('thing_view').as(db.selectFrom('things').select(['id', 'label', 'note'])).execute()
  await db.insertInto('things').values({ label: 'kept', code: 'c-1', big: 1 }).execute()
}

const id = { id: Type.Optional(Type.Integer({ readOnly: true })) }

/** The app's startup error, or `undefined` when it starts and serves the table's one row. */
async function startWith (
  t: TestContext,
  database: TestDatabase,
  fields: TProperties,
  table = 'things',
  methods: ViewsetMethod[] = ['LIST', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE']
): Promise<Error | undefined> {
  const app = testApp(t)
  try {
    const schema = Type.Object({ ...id, ...fields })
    // A view has no primary key in the catalog: it is named.
    await app.register(createViewset({ db: database.db, table, schema, methods, primaryKey: 'id' }), { prefix: '/things' })
    await app.ready()
  } catch (error) {
    assert.ok(error instanceof Error)
    return error
  }
  const response = await app.inject({ method: 'GET', url: '/things' })
  assert.equal(response.statusCode, 200)
  assert.equal(response.json().length, 1)
  return undefined
}

/** Asserts a startup error: FST_VIEWSET_INVALID_OPTION, naming the field and the column. */
function assertMismatch (error: Error | undefined, message: RegExp): void {
  assert.ok(error instanceof TypeError, `expected a startup error, got ${String(error)}`)
  assert.equal(Reflect.get(error, 'code'), 'FST_VIEWSET_INVALID_OPTION')
  assert.match(error.message, message)
}

for (const dialect of dialects) {
  describe(`schema against column types at startup (${dialect.name})`, () => {
    test('a nullable column behind a field that does not allow null fails startup, required or optional', async (t) => {
      const database = await testDatabase(t, dialect)
      await createThings(database)
      const label = Type.String()
      assertMismatch(
        await startWith(t, database, { label, note: Type.String() }),
        /schema: field "note" does not allow null, but column "things\.note" is nullable/
      )
      assertMismatch(
        await startWith(t, database, { label, note: Type.Optional(Type.String()) }),
        /field "note" does not allow null, but column "things\.note" is nullable: add Type\.Null\(\)/
      )
      assertMismatch(
        await startWith(t, database, { label, rank: Type.Optional(Type.Integer()) }),
        /field "rank" does not allow null, but column "things\.rank" is nullable/
      )
      // Read-only is no exemption without a default: the NULL would still be served as a string.
      assertMismatch(
        await startWith(t, database, { label, note: Type.Optional(Type.String({ readOnly: true })) }),
        /field "note" does not allow null, but column "things\.note" is nullable/
      )
      // Nothing was written by the failed startups.
      const rows = await database.db.selectFrom('things').select(['label', 'note']).execute()
      assert.deepEqual(rows, [{ label: 'kept', note: null }])
    })

    test('an integer, number or boolean field over a text column fails startup', async (t) => {
      const database = await testDatabase(t, dialect)
      await createThings(database)
      assertMismatch(
        await startWith(t, database, { label: Type.String(), code: Type.Integer() }),
        /schema: field "code" allows integer, but column "things\.code" \((?:character varying|varchar)\(20\)\) holds text/
      )
      assertMismatch(
        await startWith(t, database, { label: Type.Number(), code: Type.String() }),
        /field "label" allows number, but column "things\.label" \((?:character varying|varchar)\(50\)\) holds text/
      )
      assertMismatch(
        await startWith(t, database, { label: Type.String(), code: Type.Boolean() }),
        /field "code" allows boolean, but column "things\.code" \((?:character varying|varchar)\(20\)\) holds text/
      )
    })

    test('allowed: null in the field, a read-only field over a column with a default, a string over a bigint, untyped fields', async (t) => {
      const database = await testDatabase(t, dialect)
      await createThings(database)
      const started = await startWith(t, database, {
        label: Type.String(),
        note: Type.Optional(Type.Union([Type.String(), Type.Null()])),
        code: Type.String(),
        // The README's exact-BIGINT pattern.
        big: Type.String({ pattern: '^-?\\d+$' }),
        stamp: Type.Optional(Type.String({ readOnly: true })),
        rank: Type.Optional(Type.Unknown()),
      })
      assert.equal(started, undefined)
      const openApiNullable = { label: Type.String(), note: Type.String({ nullable: true }) }
      assert.equal(await startWith(t, database, openApiNullable), undefined)
    })

    test('a view is exempt: its columns all look nullable', async (t) => {
      const database = await testDatabase(t, dialect)
      await createThings(database)
      const fields = { label: Type.String(), note: Type.String() }
      const started = await startWith(t, database, fields, 'thing_view', ['LIST', 'GET'])
      // The view's one row has a NULL note: the field is the user's to fix, the check does not look at views.
      assert.equal(started, undefined)
      const count = await sql<{ n: number }>`select count(*) as n from things`.execute(database.db)
      assert.equal(Number(count.rows[0]?.n), 1)
    })
  })
}
