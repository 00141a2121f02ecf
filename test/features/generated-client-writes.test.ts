import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import openapiTS, { astToString } from 'openapi-typescript'
import { createViewset, viewsetBatch, viewsetDocs } from 'fastify-viewsets'
import { sqliteFullText } from '../../lib/dialect/sqlite/sqlite-full-text.js'
import { postgresFullText } from '../../lib/dialect/postgres/postgres-full-text.js'
import { mysqlFullText } from '../../lib/dialect/mysql/mysql-full-text.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// Issues 37 and 38: the routes and parameters they added (PATCH_MANY, DELETE_MANY, BULK_PATCH, AGGREGATE, a nested
// body, POST /batch, an OR group, nin/startswith/endswith, a child count, a JSON path, full-text `q` ordered by
// relevance) are usable from a client
// generated with openapi-typescript, without a cast: test/generated-client/writes-client.ts type-checks under the
// project's strict settings against the live document, then runs against the live app.

const root = fileURLToPath(new URL('../../', import.meta.url))
const clientSnippet = join(root, 'test/generated-client/writes-client.ts')
const run = promisify(execFile)

const Review = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })), item_id: Type.Integer(), body: Type.String(),
})
const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1 }),
  price: Type.Number(),
  status: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  meta: Type.Optional(Type.Union([Type.Object({ color: Type.Optional(Type.String()) }), Type.Null()])),
  reviews: Type.Optional(Type.Array(Type.Object({ id: Type.Integer(), body: Type.String() }))),
})
const Note = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  body: Type.Union([Type.String(), Type.Null()]),
})
const fullTextSeams = { sqlite: sqliteFullText, postgres: postgresFullText, mysql: mysqlFullText }

for (const dialect of dialects) {
  describe(`a generated client of the new routes (${dialect.name})`, () => {
    test('type-checks without casts and runs against the live app', async (t) => {
      const { db } = await testDatabase(t, dialect)
      const [idType, id] = autoIncrement(dialect.name)
      await db.schema.createTable('items').addColumn('id', idType as 'integer', id)
        .addColumn('name', 'varchar(100)', (column) => column.notNull())
        .addColumn('price', 'double precision', (column) => column.notNull())
        .addColumn('status', 'varchar(20)').addColumn('meta', dialect.name === 'postgres' ? 'jsonb' : 'json').execute()
      await db.schema.createTable('reviews').addColumn('id', idType as 'integer', id)
        .addColumn('item_id', 'integer', (column) => column.notNull().references('items.id'))
        .addColumn('body', 'varchar(100)', (column) => column.notNull()).execute()
      await db.schema.createIndex('reviews_item_id').on('reviews').column('item_id').execute()
      await db.insertInto('items').values({ name: 'Lantern', price: 4, status: 'open', meta: '{"color":"red"}' }).execute()
      // Full-text search needs each database's own index: the README's migration, as test/features/full-text.test.ts
      // runs it (PostgreSQL GIN on the statement's to_tsvector, SQLite FTS5 external content with triggers, MariaDB
      // FULLTEXT).
      await db.schema.createTable('notes').addColumn('id', idType as 'integer', id)
        .addColumn('title', 'varchar(100)', (column) => column.notNull()).addColumn('body', 'varchar(200)').execute()
      await db.insertInto('notes').values([
        { title: 'bread bread bread', body: 'rye' }, { title: 'fresh bread', body: null },
        { title: 'butter knife', body: 'steel' },
      ]).execute()
      const index = { table: 'notes', key: 'id', fields: ['title', 'body'], language: 'simple', ftsTable: 'notes_fts' }
      for (const statement of fullTextSeams[dialect.name].migration(index).split('\n')) {
        await sql.raw(statement).execute(db)
      }
      const app = testApp(t)
      await app.register(viewsetDocs)
      await app.register(createViewset({
        db,
        table: 'items',
        schema: Item,
        withoutTokens: true,
        methods: ['LIST', 'GET', 'POST', 'PATCH', 'DELETE', 'PATCH_MANY', 'DELETE_MANY', 'BULK_PATCH', 'AGGREGATE'],
        filterFields: {
          name: ['eq', 'startswith', 'endswith', 'nin'], price: ['gte', 'lt'], 'reviews.count': ['gte'], 'meta->color': ['eq'],
        },
        orderingFields: ['price', 'reviews.count'],
        groupByFields: ['status'],
        aggregateFields: { price: ['sum', 'avg'] },
        relatedConfig: {
          prefetchRelated: { reviews: { table: 'reviews', foreignKey: 'item_id', orderBy: 'id', writable: true } },
        },
      } as never), { prefix: '/items' }) // the test's DB type is Kysely<any>: the options are checked at startup
      await app.register(createViewset({ db, table: 'reviews', schema: Review, withoutTokens: true } as never), {
        prefix: '/reviews',
      })
      await app.register(createViewset({
        db,
        table: 'notes',
        schema: Note,
        withoutTokens: true,
        methods: ['LIST'],
        orderingFields: ['title'],
        fullText: { fields: ['title', 'body'] },
      } as never), { prefix: '/notes' })
      await app.register(viewsetBatch())
      await app.ready()

      const dir = join(root, 'test-output', `writes-client-${dialect.name}-${randomBytes(4).toString('hex')}`)
      await mkdir(dir, { recursive: true })
      t.after(() => rm(dir, { recursive: true, force: true }))
      const document: unknown = (await app.inject('/docs/json')).json()
      // the generator reads any OpenAPI 3.x object
      await writeFile(join(dir, 'api.d.ts'), astToString(await openapiTS(document as Parameters<typeof openapiTS>[0])))
      await copyFile(clientSnippet, join(dir, 'client.ts'))
      await writeFile(join(dir, 'tsconfig.json'),
        JSON.stringify({ extends: '../../tsconfig.json', include: ['./*.ts'], exclude: [] }))
      const checked = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: dir })
        .then(() => '', (error: { stdout?: unknown }) => String(error.stdout ?? error))
      assert.equal(checked, '', 'the client type-checks without a cast')

      const origin = await app.listen({ host: '127.0.0.1', port: 0 })
      const { stdout } = await run(process.execPath, ['--import', 'tsx', join(dir, 'client.ts')], {
        cwd: dir,
        env: { ...process.env, API_URL: origin },
      })
      assert.deepEqual(stdout.trim().split('\n'), [
        'nested 1',
        'patched-many {"affected":2}',
        'bulk-patched 9',
        'aggregated 2',
        'counted 1',
        'json [{"id":1,"meta":{"color":"red"}}]',
        'searched [2,1] most-relevant [1,2]',
        'batched 1',
        'deleted-many {"affected":2}',
      ])
      const left = await db.selectFrom('items').select(['name', 'price']).orderBy('id').execute()
      assert.deepEqual(left.map((row) => ({ name: row.name, price: Number(row.price) })), [{ name: 'Lamp', price: 9 }])
      assert.equal((await db.selectFrom('reviews').select('body').execute()).length, 1)
    })
  })
}
