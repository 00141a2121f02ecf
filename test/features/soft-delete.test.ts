import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { createViewset, softDeleteMethods, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { RelatedConfig, ViewsetOptions } from 'fastify-viewsets'
import { costOf } from '../../lib/execution/cost-class.js'
import { deletedTerm } from '../../lib/query/soft-delete-term.js'
import { autoIncrement, compileOnlySqlite, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

// Issue 39 item 2: soft delete. DELETE marks a row deleted; LIST, GET, counts, aggregates, relations from other
// viewsets (to-one, to-many, many-to-many), relation paths and child counts treat it as absent; `?deleted=` shows
// it to callers showDeleted admits (a 403 to the others); RESTORE and PURGE undelete and hard-delete, under the
// rules, with If-Match. Two tenants (the x-tenant header) share every table: a rule holds everywhere.

const DeletedAt = Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()]))
const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const AuthorRef = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  isbn: Type.String(),
  tenant: Type.Optional(Type.String({ readOnly: true })),
  author_id: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  deleted_at: DeletedAt,
  author: Type.Optional(Type.Union([AuthorRef, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
const AuthorBook = Type.Object({ id: Type.Integer(), title: Type.String() })
const Author = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  tenant: Type.Optional(Type.String({ readOnly: true })),
  books: Type.Optional(Type.Array(AuthorBook)),
})
const TagRow = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })

const bookRelations: RelatedConfig = {
  selectRelated: { author: { table: 'sd_authors', foreignKey: 'author_id' } },
  prefetchRelated: {
    tags: { table: 'sd_tags', through: { table: 'sd_book_tags', sourceKey: 'book_id', targetKey: 'tag_id' }, orderBy: 'id' },
  },
}
const authorRelations: RelatedConfig = {
  prefetchRelated: { books: { table: 'sd_books', foreignKey: 'author_id', orderBy: 'id' } },
}

const alice = { 'x-tenant': 'alice' }
const bob = { 'x-tenant': 'bob' }
const aliceAdmin = { ...alice, 'x-admin': 'yes' }
const bobAdmin = { ...bob, 'x-admin': 'yes' }
const defaultMethods = ['LIST', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

/** Every method of the tenant's rows only; writes stamp the tenant. */
const tenantRules = {
  withoutTokens: true,
  scope: (eb: any, { request }: any) => eb('tenant', '=', String(request.headers['x-tenant'] ?? 'none')),
  beforeWrite: (values: any, { request }: any) => ({ ...values, tenant: String(request.headers['x-tenant'] ?? 'none') }),
}
const showDeleted = ({ request }: { request: { headers: Record<string, unknown> } }) => request.headers['x-admin'] === 'yes'

/** A nullable timestamp column in each dialect's spelling (SQLite: DATETIME, stored as RFC 3339 text). */
function timestampType (dialect: TestDatabase['dialect']): string {
  return dialect === 'postgres' ? 'timestamptz' : dialect === 'mysql' ? 'datetime(3)' : 'datetime'
}

async function createTables ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable('sd_authors')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(100)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(20)', (column) => column.notNull())
    .addColumn('deleted_at', sql.raw(timestampType(dialect)))
    .execute()
  await db.schema.createTable('sd_books')
    .addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(100)', (column) => column.notNull())
    .addColumn('isbn', 'varchar(20)', (column) => column.notNull().unique())
    .addColumn('tenant', 'varchar(20)', (column) => column.notNull())
    .addColumn('author_id', 'integer')
    .addColumn('deleted_at', sql.raw(timestampType(dialect)))
    .execute()
  await db.schema.createTable('sd_tags')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(100)', (column) => column.notNull())
    .addColumn('removed', 'boolean', (column) => column.notNull().defaultTo(false))
    .execute()
  await db.schema.createTable('sd_book_tags')
    .addColumn('book_id', 'integer', (column) => column.notNull())
    .addColumn('tag_id', 'integer', (column) => column.notNull())
    .execute()
  await db.insertInto('sd_authors').values([
    { name: 'Ada', tenant: 'alice' }, // 1
    { name: 'Bea', tenant: 'alice' }, // 2
    { name: 'Cy', tenant: 'bob' }, // 3
  ]).execute()
  await db.insertInto('sd_books').values([
    { title: 'A1', isbn: 'i1', tenant: 'alice', author_id: 1 }, // 1
    { title: 'A2', isbn: 'i2', tenant: 'alice', author_id: 1 }, // 2
    { title: 'B1', isbn: 'i3', tenant: 'alice', author_id: 2 }, // 3
    { title: 'C1', isbn: 'i4', tenant: 'bob', author_id: 3 }, // 4
  ]).execute()
  await db.insertInto('sd_tags').values([{ name: 'red' }, { name: 'blue' }]).execute()
  await db.insertInto('sd_book_tags').values([{ book_id: 1, tag_id: 1 }, { book_id: 1, tag_id: 2 }]).execute()
}

type AnyOptions = Partial<ViewsetOptions<any, string, any>>

/** The library: authors (soft delete, showDeleted, RESTORE and PURGE), books (soft delete), tags (a boolean). */
async function libraryApp (t: TestContext, dialect: TestDialect, authors: AnyOptions = {}) {
  const database = await testDatabase(t, dialect)
  await createTables(database)
  const app = testApp(t)
  await app.register(viewsetDocs)
  const { db } = database
  await app.register(createViewset({
    db,
    table: 'sd_authors',
    schema: Author,
    ...tenantRules,
    relatedConfig: authorRelations,
    softDelete: { column: 'deleted_at', showDeleted },
    methods: [...defaultMethods, ...softDeleteMethods, 'DELETE_MANY'],
    filterFields: { name: ['eq'], 'books.count': ['eq', 'gte'] },
    allowCount: true,
    ...authors,
  } as ViewsetOptions<any, string, typeof Author>), { prefix: '/authors' })
  await app.register(createViewset({
    db,
    table: 'sd_books',
    schema: Book,
    ...tenantRules,
    relatedConfig: bookRelations,
    softDelete: 'deleted_at',
    conflictFields: ['isbn'],
    methods: [...defaultMethods, 'AGGREGATE'],
    filterFields: { title: ['eq'], 'author.name': ['eq'] },
    groupByFields: ['author_id'],
    allowCount: true,
  } as ViewsetOptions<any, string, typeof Book>), { prefix: '/books' })
  await app.register(createViewset({
    db, table: 'sd_tags', schema: TagRow, softDelete: 'removed', methods: ['LIST', 'GET', 'DELETE'],
  } as ViewsetOptions<any, string, typeof TagRow>), { prefix: '/tags' })
  await app.ready()
  return { app, db }
}

const ids = (rows: Array<{ id: number }>) => rows.map((row) => row.id)

test('cost classes: a soft DELETE and a RESTORE are UPDATEs by key (cheap), PURGE a DELETE (heavy, as DELETE)', () => {
  const db = compileOnlySqlite()
  const live = deletedTerm({ column: 'deleted_at', kind: 'timestamp' }, false)
  const deleted = deletedTerm({ column: 'deleted_at', kind: 'timestamp' }, true)
  const marked = db.updateTable('t').set({ deleted_at: 'now' }).where('id', '=', 1).where(live)
  assert.equal(costOf(marked.compile().query), 'cheap')
  const restored = db.updateTable('t').set({ deleted_at: null }).where('id', '=', 1)
  assert.equal(costOf(restored.compile().query), 'cheap')
  assert.equal(costOf(db.deleteFrom('t').where('id', '=', 1).compile().query), 'heavy')
  // `?deleted=only` adds no scan of its own: a page by key of the deleted rows is as cheap as one of the live rows.
  const page = db.selectFrom('t').select('id').where(deleted).orderBy('id').limit(20)
  assert.equal(costOf(page.compile().query), 'cheap')
})

for (const dialect of dialects) {
  describe(`soft delete (${dialect.name})`, () => {
    test('DELETE marks the row; LIST, GET, count, PUT, PATCH, DELETE then treat it as absent', async (t) => {
      const { app, db } = await libraryApp(t, dialect)
      const other = await app.inject({ method: 'DELETE', url: '/authors/1', headers: bob })
      assert.equal(other.statusCode, 404, 'another tenant cannot delete it')
      const deleted = await app.inject({ method: 'DELETE', url: '/authors/1', headers: alice })
      assert.equal(deleted.statusCode, 204, deleted.body)
      const stored = await db.selectFrom('sd_authors').selectAll().where('id', '=', 1).executeTakeFirstOrThrow()
      assert.notEqual(stored.deleted_at, null, 'the row is kept, marked')
      // A Date (pg, mysql2), or SQLite's text as written: RFC 3339 in UTC.
      const at = stored.deleted_at instanceof Date ? stored.deleted_at : new Date(String(stored.deleted_at))
      assert.ok(Math.abs(at.getTime() - Date.now()) < 60_000, `the time of deletion: ${String(stored.deleted_at)}`)

      const list = await app.inject({ url: '/authors?count=true', headers: alice })
      assert.equal(list.statusCode, 200, list.body)
      assert.deepEqual(ids(list.json()), [2])
      assert.equal(list.headers['x-total-count'], '1')
      assert.equal((await app.inject({ url: '/authors/1', headers: alice })).statusCode, 404)
      for (const method of ['PUT', 'PATCH'] as const) {
        const write = await app.inject({ method, url: '/authors/1', headers: alice, payload: { name: 'Zed' } })
        assert.equal(write.statusCode, 404, `${method}: ${write.body}`)
        assert.equal(problemOf(write).code, 'FST_VIEWSET_NOT_FOUND')
      }
      assert.equal((await app.inject({ method: 'DELETE', url: '/authors/1', headers: alice })).statusCode, 404)
      const after = await db.selectFrom('sd_authors').select(['name']).where('id', '=', 1).executeTakeFirstOrThrow()
      assert.equal(after.name, 'Ada', 'nothing changed')
    })

    test('?deleted=include|only: a 403 without showDeleted\'s yes, the rows with it, still under the row rule',
      async (t) => {
        const { app } = await libraryApp(t, dialect)
        await app.inject({ method: 'DELETE', url: '/authors/1', headers: alice })
        for (const url of ['/authors?deleted=include', '/authors?deleted=only', '/authors/1?deleted=include']) {
          const refused = await app.inject({ url, headers: alice })
          assert.equal(refused.statusCode, 403, url)
          assert.equal(problemOf(refused).code, 'FST_VIEWSET_DELETED_ROWS_HIDDEN')
        }
        // Books have softDelete without showDeleted: nobody sees their deleted rows.
        const books = await app.inject({ url: '/books?deleted=include', headers: aliceAdmin })
        assert.equal(books.statusCode, 403)
        const bad = await app.inject({ url: '/authors?deleted=all', headers: aliceAdmin })
        assert.equal(bad.statusCode, 400)

        const included = await app.inject({ url: '/authors?deleted=include', headers: aliceAdmin })
        assert.equal(included.statusCode, 200, included.body)
        assert.deepEqual(ids(included.json()), [1, 2])
        const only = await app.inject({ url: '/authors?deleted=only&count=true', headers: aliceAdmin })
        assert.deepEqual(ids(only.json()), [1])
        assert.equal(only.headers['x-total-count'], '1')
        const one = await app.inject({ url: '/authors/1?deleted=only', headers: aliceAdmin })
        assert.equal(one.statusCode, 200, one.body)
        assert.equal(one.json().name, 'Ada')
        assert.equal((await app.inject({ url: '/authors/2?deleted=only', headers: aliceAdmin })).statusCode, 404)
        // Bob, an admin of his tenant, never sees alice's rows, deleted or not.
        const theirs = await app.inject({ url: '/authors?deleted=include', headers: bobAdmin })
        assert.deepEqual(ids(theirs.json()), [3])
        assert.equal((await app.inject({ url: '/authors/1?deleted=include', headers: bobAdmin })).statusCode, 404)
      })

    test('field rules hold with ?deleted= and on RESTORE: the hidden field stays hidden', async (t) => {
      const { app } = await libraryApp(t, dialect, { fieldAccess: () => ({ hidden: ['tenant'] }) })
      await app.inject({ method: 'DELETE', url: '/authors/1', headers: alice })
      const one = await app.inject({ url: '/authors/1?deleted=include', headers: aliceAdmin })
      assert.equal(one.statusCode, 200, one.body)
      assert.equal(one.json().tenant, undefined)
      const list = await app.inject({ url: '/authors?deleted=only', headers: aliceAdmin })
      assert.equal(list.statusCode, 200, list.body)
      assert.deepEqual(list.json().map((row: Record<string, unknown>) => Object.keys(row).sort()), [['books', 'id', 'name']])
      const restored = await app.inject({ method: 'POST', url: '/authors/1/restore', headers: alice })
      assert.equal(restored.statusCode, 200, restored.body)
      assert.equal(restored.json().tenant, undefined)
    })

    test('the helpers of an override leave deleted rows out; unscoped sees them', async (t) => {
      const database = await testDatabase(t, dialect)
      await createTables(database)
      class Tags extends Viewset<any, 'sd_tags', typeof TagRow> {
        override customRoutes (fastify: FastifyInstance) {
          fastify.get('/names', async () => ({
            live: (await this.query().orderBy('id').execute()).map((row) => row.name),
            found: (await this.findById(2)) === undefined ? 'none' : 'found',
            all: (await this.unscoped.query().orderBy('id').execute()).map((row) => row.name),
          }))
        }
      }
      const app = testApp(t)
      await app.register(new Tags({ db: database.db, table: 'sd_tags', schema: TagRow, softDelete: 'removed' }).register(),
        { prefix: '/tags' })
      await app.ready()
      assert.equal((await app.inject({ method: 'DELETE', url: '/tags/2' })).statusCode, 204)
      const names = await app.inject({ url: '/tags/names' })
      assert.equal(names.statusCode, 200, names.body)
      assert.deepEqual(names.json(), { live: ['red'], found: 'none', all: ['red', 'blue'] })
    })

    test('relations from other viewsets: to-one, to-many and many-to-many leave deleted rows out', async (t) => {
      const { app } = await libraryApp(t, dialect)
      assert.equal((await app.inject({ method: 'DELETE', url: '/authors/1', headers: alice })).statusCode, 204)
      assert.equal((await app.inject({ method: 'DELETE', url: '/books/2', headers: alice })).statusCode, 204)
      assert.equal((await app.inject({ method: 'DELETE', url: '/tags/2' })).statusCode, 204)

      const book = await app.inject({ url: '/books/1', headers: alice })
      assert.equal(book.statusCode, 200, book.body)
      assert.equal(book.json().author, null, 'the to-one target is deleted')
      assert.deepEqual(book.json().tags, [{ id: 1, name: 'red' }], 'the many-to-many target is deleted')
      const author = await app.inject({ url: '/authors/2', headers: alice })
      assert.deepEqual(author.json().books, [{ id: 3, title: 'B1' }])
      // Restored, the author's to-many list still leaves the deleted book out.
      const restored = await app.inject({ method: 'POST', url: '/authors/1/restore', headers: alice })
      assert.equal(restored.statusCode, 200, restored.body)
      assert.deepEqual(restored.json().books, [{ id: 1, title: 'A1' }])
      const tags = await app.inject({ url: '/tags' })
      assert.deepEqual(ids(tags.json()), [1])
    })

    test('relation paths, child counts and aggregates count live rows only', async (t) => {
      const { app } = await libraryApp(t, dialect)
      await app.inject({ method: 'DELETE', url: '/books/2', headers: alice })
      const counted = await app.inject({ url: '/authors?books.count__gte=2', headers: alice })
      assert.equal(counted.statusCode, 200, counted.body)
      assert.deepEqual(ids(counted.json()), [], 'Ada has one live book now')
      const one = await app.inject({ url: '/authors?books.count=1', headers: alice })
      assert.deepEqual(ids(one.json()), [1, 2])

      await app.inject({ method: 'DELETE', url: '/authors/2', headers: alice })
      const byAuthor = await app.inject({ url: '/books?author.name=Bea', headers: alice })
      assert.equal(byAuthor.statusCode, 200, byAuthor.body)
      assert.deepEqual(ids(byAuthor.json()), [], 'a deleted author matches no path')
      const byLive = await app.inject({ url: '/books?author.name=Ada', headers: alice })
      assert.deepEqual(ids(byLive.json()), [1])

      const aggregate = await app.inject({ url: '/books/aggregate?count=true', headers: alice })
      assert.equal(aggregate.statusCode, 200, aggregate.body)
      assert.deepEqual(aggregate.json(), [{ count: 2 }])
    })

    test('DELETE_MANY marks every row its filters select in the rule', async (t) => {
      const { app, db } = await libraryApp(t, dialect)
      const response = await app.inject({ method: 'DELETE', url: '/authors?name=Ada', headers: alice })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json(), { affected: 1 })
      const rows = await db.selectFrom('sd_authors').select(['id', 'deleted_at']).orderBy('id').execute()
      assert.deepEqual(rows.map((row) => row.deleted_at !== null), [true, false, false])
    })

    test('an upsert whose conflicting row is deleted answers 409 and never revives it', async (t) => {
      const { app, db } = await libraryApp(t, dialect)
      await app.inject({ method: 'DELETE', url: '/books/1', headers: alice })
      const upsert = await app.inject({
        method: 'POST',
        url: '/books',
        headers: { ...alice, prefer: 'resolution=merge-duplicates' },
        payload: { title: 'Again', isbn: 'i1' },
      })
      assert.equal(upsert.statusCode, 409, upsert.body)
      assert.equal(problemOf(upsert).code, 'FST_VIEWSET_CONFLICT')
      const row = await db.selectFrom('sd_books').select(['title', 'deleted_at']).where('id', '=', 1)
        .executeTakeFirstOrThrow()
      assert.equal(row.title, 'A1')
      assert.notEqual(row.deleted_at, null)
    })

    test('RESTORE: 200 with the row, If-Match, the rule, idempotent on a live row; the column is read-only',
      async (t) => {
        const { app, db } = await libraryApp(t, dialect)
        await app.inject({ method: 'DELETE', url: '/authors/1', headers: alice })
        const other = await app.inject({ method: 'POST', url: '/authors/1/restore', headers: bob })
        assert.equal(other.statusCode, 404, 'another tenant cannot restore it')
        const stale = await app.inject({
          method: 'POST', url: '/authors/1/restore', headers: { ...alice, 'if-match': '"nope"' },
        })
        assert.equal(stale.statusCode, 412, stale.body)
        const deletedTag = (await app.inject({ url: '/authors/1?deleted=include', headers: aliceAdmin })).headers.etag
        assert.equal(typeof deletedTag, 'string')
        const restored = await app.inject({
          method: 'POST', url: '/authors/1/restore', headers: { ...alice, 'if-match': String(deletedTag) },
        })
        assert.equal(restored.statusCode, 200, restored.body)
        assert.equal(restored.json().name, 'Ada')
        assert.equal(typeof restored.headers.etag, 'string')
        const stored = await db.selectFrom('sd_authors').select('deleted_at').where('id', '=', 1).executeTakeFirstOrThrow()
        assert.equal(stored.deleted_at, null)
        assert.equal((await app.inject({ url: '/authors/1', headers: alice })).statusCode, 200)
        const again = await app.inject({ method: 'POST', url: '/authors/1/restore', headers: alice })
        assert.equal(again.statusCode, 200, 'restoring a live row answers it as it is')
        assert.equal((await app.inject({ method: 'POST', url: '/authors/99/restore', headers: alice })).statusCode, 404)

        // The column is the server's: a body cannot set it (books serve it, read-only).
        const patched = await app.inject({
          method: 'PATCH', url: '/books/1', headers: alice, payload: { deleted_at: '2020-01-01T00:00:00Z' },
        })
        assert.equal(patched.statusCode, 200, patched.body)
        assert.equal(patched.json().deleted_at, null)
        // RESTORE is registered only where methods list it.
        const absent = await app.inject({ method: 'POST', url: '/books/1/restore', headers: alice })
        assert.equal(absent.statusCode, 404)
      })

    test('PURGE removes the row, deleted or not, under the rule', async (t) => {
      const { app, db } = await libraryApp(t, dialect)
      await app.inject({ method: 'DELETE', url: '/authors/1', headers: alice })
      assert.equal((await app.inject({ method: 'DELETE', url: '/authors/1/purge', headers: bob })).statusCode, 404)
      const purged = await app.inject({ method: 'DELETE', url: '/authors/1/purge', headers: alice })
      assert.equal(purged.statusCode, 204, purged.body)
      const live = await app.inject({ method: 'DELETE', url: '/authors/2/purge', headers: alice })
      assert.equal(live.statusCode, 204, live.body)
      const rows = await db.selectFrom('sd_authors').select('id').orderBy('id').execute()
      assert.deepEqual(ids(rows), [3])
      assert.equal((await app.inject({ method: 'DELETE', url: '/authors/1/purge', headers: alice })).statusCode, 404)
    })

    test('OpenAPI documents ?deleted=, RESTORE and PURGE, and the column read-only', async (t) => {
      const { app } = await libraryApp(t, dialect)
      const document = (await app.inject('/docs/json')).json()
      const list = document.paths['/authors'].get
      const deleted = list.parameters.find((parameter: { name: string }) => parameter.name === 'deleted')
      assert.deepEqual(deleted.schema.enum, ['include', 'only'])
      assert.ok(list.responses['403'])
      assert.ok(document.paths['/authors/{id}'].get.parameters.some((p: { name: string }) => p.name === 'deleted'))
      assert.ok(document.paths['/authors/{id}/restore'].post.responses['200'])
      assert.ok(document.paths['/authors/{id}/purge'].delete.responses['204'])
      assert.equal(document.paths['/books/{id}/restore'], undefined)
      const schemas = document.components.schemas
      const book = Object.values(schemas).find((schema: any) => schema.properties?.isbn !== undefined &&
        schema.properties?.deleted_at !== undefined) as any
      assert.equal(book.properties.deleted_at.readOnly, true)
    })

    test('a unique key of live rows only: the partial unique index (PostgreSQL, SQLite), a generated column (MariaDB)',
      async (t) => {
        const database = await testDatabase(t, dialect)
        const { db } = database
        const [idType, id] = autoIncrement(dialect.name)
        await db.schema.createTable('sd_slugs')
          .addColumn('id', idType as 'integer', id)
          .addColumn('slug', 'varchar(50)', (column) => column.notNull())
          .addColumn('title', 'varchar(50)', (column) => column.notNull())
          .addColumn('deleted_at', sql.raw(timestampType(dialect.name)))
          .execute()
        // The README's recipe for each database.
        if (dialect.name === 'mysql') {
          await sql`alter table sd_slugs add live_slug varchar(50) as (if(deleted_at is null, slug, null)) stored,
            add unique key sd_slugs_live (live_slug)`.execute(db)
        } else {
          await sql`create unique index sd_slugs_live on sd_slugs (slug) where deleted_at is null`.execute(db)
        }
        const Slug = Type.Object({
          id: Type.Optional(Type.Integer({ readOnly: true })), slug: Type.String(), title: Type.String(),
        })
        const app = testApp(t)
        await app.register(createViewset({
          db,
          table: 'sd_slugs',
          schema: Slug,
          softDelete: 'deleted_at',
          // MariaDB has no partial index: its upserts need a plain unique key (the generated column is not `slug`).
          ...(dialect.name === 'mysql' ? {} : { conflictFields: ['slug'] }),
        } as ViewsetOptions<any, string, typeof Slug>), { prefix: '/slugs' })
        await app.ready()
        const merge = { prefer: 'resolution=merge-duplicates' }
        const first = await app.inject({ method: 'POST', url: '/slugs', headers: merge, payload: { slug: 'a', title: 'one' } })
        assert.equal(first.statusCode, 201, first.body)
        assert.equal((await app.inject({ method: 'DELETE', url: `/slugs/${first.json().id}` })).statusCode, 204)
        // The deleted row keeps its slug, and no longer holds it: a new row takes it.
        const second = await app.inject({ method: 'POST', url: '/slugs', headers: merge, payload: { slug: 'a', title: 'two' } })
        assert.equal(second.statusCode, 201, second.body)
        assert.notEqual(second.json().id, first.json().id)
        const duplicate = await app.inject({ method: 'POST', url: '/slugs', payload: { slug: 'a', title: 'three' } })
        assert.equal(duplicate.statusCode, 409, 'two live rows may not share it')
        if (dialect.name !== 'mysql') {
          const merged = await app.inject({ method: 'POST', url: '/slugs', headers: merge, payload: { slug: 'a', title: 'four' } })
          assert.equal(merged.statusCode, 200, merged.body)
          assert.equal(merged.json().id, second.json().id, 'merged into the live row, never the deleted one')
        }
        const rows = await db.selectFrom('sd_slugs').select(['id', 'title', 'deleted_at']).orderBy('id').execute()
        assert.deepEqual(rows.map((row) => [row.title, row.deleted_at !== null]),
          [['one', true], [dialect.name === 'mysql' ? 'two' : 'four', false]])
      })

    test('startup: the column is checked against the table, and RESTORE and PURGE need softDelete', async (t) => {
      const database = await testDatabase(t, dialect)
      await createTables(database)
      const problems: Array<[AnyOptions, RegExp]> = [
        [{ softDelete: 'gone_at' }, /softDelete\.column.*"gone_at" is not a column/],
        [{ softDelete: 'name' }, /neither a timestamp nor a boolean/],
        [{ methods: ['LIST', 'RESTORE'] }, /RESTORE need the softDelete option/],
        [{ softDelete: Object.assign({ column: 'deleted_at' }, { shown: true }) }, /softDelete\.shown: unknown key/],
        [{ softDelete: 'id' }, /primary key/],
      ]
      for (const [options, message] of problems) {
        const app = testApp(t)
        const error = await (async () => {
          await app.register(createViewset({
            db: database.db, table: 'sd_authors', schema: TagRow, withoutTokens: true, ...options,
          } as ViewsetOptions<any, string, typeof TagRow>), { prefix: '/x' })
          await app.ready()
        })().then(() => undefined, (error: unknown) => error)
        assert.match(String(error), message)
      }
    })
  })
}
