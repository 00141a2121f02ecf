import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { createViewset } from 'fastify-viewsets'
import type { RelatedConfig } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// A many-to-many relation with a limit, ordered by its target's key, whose join table binds its targets by a foreign
// key and orders them after the source key by an index: PostgreSQL reads each parent's first join rows, then their
// targets in one join (relations/relation-limit.ts, linksFirstStatement); SQLite's correlated subquery reads the join
// table's index alone. The answers are `limit: false`'s cut to
// the first `limit` of each parent, under the join table's rule and the targets' (then read the other way), for two
// tenants; a join table without the foreign key is read the other way.

const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({ id: Type.Integer(), title: Type.String(), tags: Type.Optional(Type.Array(Tag)) })
const Link = Type.Object({ id: Type.Integer(), book_id: Type.Integer(), tag_id: Type.Integer(), tenant: Type.String() })

const bookCount = 8
const tagCount = 20

/** Book n links n + 1 distinct tags; tags and links alternate between the tenants blue and red. */
async function createShelf ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable('lf_books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull()).execute()
  await db.schema.createTable('lf_tags').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(8)', (column) => column.notNull()).execute()
  for (const [table, bound] of [['lf_links', true], ['lf_loose_links', false]] as const) {
    await db.schema.createTable(table).addColumn('id', idType as 'integer', id)
      .addColumn('book_id', 'integer', (column) => column.notNull())
      .addColumn('tag_id', 'integer', (column) => bound ? column.notNull().references('lf_tags.id') : column.notNull())
      .addColumn('tenant', 'varchar(8)', (column) => column.notNull()).execute()
    await db.schema.createIndex(`${table}_book_tag`).on(table).columns(['book_id', 'tag_id']).unique().execute()
  }
  await db.insertInto('lf_books')
    .values(Array.from({ length: bookCount }, (_, i) => ({ title: `Book ${i + 1}` }))).execute()
  await db.insertInto('lf_tags').values(Array.from({ length: tagCount }, (_, i) => ({
    name: `tag ${String((i * 7) % tagCount).padStart(2, '0')}`, tenant: i % 2 === 0 ? 'blue' : 'red',
  }))).execute()
  const links = []
  for (let book = 1; book <= bookCount; book++) {
    for (let k = 0; k <= book; k++) {
      const tag = ((book * 3 + k * 7) % tagCount) + 1
      links.push({ book_id: book, tag_id: tag, tenant: (book + k) % 3 === 0 ? 'red' : 'blue' })
    }
  }
  await db.insertInto('lf_links').values(links).execute()
  await db.insertInto('lf_loose_links').values(links).execute()
}

/** The tenant's row rule, as the viewsets below declare it. */
const byTenant = (eb: any, { request }: { request: { headers: Record<string, unknown> } }) =>
  eb('tenant', '=', String(request.headers['x-tenant'] ?? 'none'))

interface Shape {
  readonly limit: number | false
  readonly orderBy?: string
  readonly links?: string
  /** A rule on the join table (a viewset serving it), on the targets (`rulesFrom`), or none. */
  readonly rule?: 'links' | 'tags'
}

async function booksApp (t: TestContext, { db }: TestDatabase, shape: Shape) {
  const app = testApp(t)
  const relatedConfig: RelatedConfig = {
    prefetchRelated: {
      tags: {
        table: 'lf_tags',
        through: { table: shape.links ?? 'lf_links', sourceKey: 'book_id', targetKey: 'tag_id' },
        limit: shape.limit,
        ...(shape.orderBy === undefined ? {} : { orderBy: shape.orderBy }),
        ...(shape.rule === 'tags' ? { rulesFrom: { scope: byTenant } } : {}),
      },
    },
  }
  await app.register(createViewset({ db, table: 'lf_books', schema: Book, relatedConfig }), { prefix: '/books' })
  if (shape.rule === 'links') {
    const links = { db, table: shape.links ?? 'lf_links', schema: Link, methods: ['LIST'], withoutTokens: true, scope: { LIST: byTenant } }
    await app.register(createViewset(links as never), { prefix: '/links' }) // the options as the README writes them
  }
  await app.ready()
  return app
}

type Served = Array<{ id: number; tags: Array<{ id: number }> }>

async function served (database: TestDatabase, app: Awaited<ReturnType<typeof booksApp>>, tenant = 'blue') {
  database.queries.length = 0
  const response = await app.inject({ url: '/books', headers: { 'x-tenant': tenant } })
  assert.equal(response.statusCode, 200, response.body)
  return { body: response.json<Served>(), statements: [...database.queries] }
}

const cut = (all: Served, limit: number): Served => all.map((book) => ({ ...book, tags: book.tags.slice(0, limit) }))

/**
 * The tags statement's form: on PostgreSQL, the join rows first (a materialized CTE) or the targets with them; on
 * SQLite, each book's correlated subquery over the join table alone, or joined to the targets.
 */
function assertForm (database: TestDatabase, statements: readonly string[], linksFirst: boolean): void {
  // MariaDB may add the windowed statement (relations/relation-queries.ts, limitedQuery).
  assert.ok(statements.length === 2 || (database.dialect === 'mysql' && statements.length === 3), statements.join('\n'))
  if (database.dialect === 'sqlite') {
    assert.match(statements[1] ?? '', / in \(select "j"\."tag_id" from "lf_(loose_)?links" as "j" /i)
    assert.equal(/ in \(select [^()]*inner join "lf_tags"/i.test(statements[1] ?? ''), !linksFirst, statements[1])
    return
  }
  if (database.dialect !== 'postgres') return
  assert.match(statements[1] ?? '', /inner join lateral/i)
  assert.equal(/as materialized/i.test(statements[1] ?? ''), linksFirst, statements[1])
}

for (const dialect of dialects) {
  describe(`many-to-many links read first [${dialect.name}]`, () => {
    for (const orderBy of [undefined, '-id']) {
      test(`each book's first tags by the target's key (orderBy ${String(orderBy)}) are limit: false's`, async (t) => {
        const database = await testDatabase(t, dialect)
        await createShelf(database)
        const ordered = orderBy === undefined ? {} : { orderBy }
        const all = await served(database, await booksApp(t, database, { limit: false, ...ordered }))
        assert.ok(all.body.every((book) => book.tags.length === book.id + 1))
        for (const limit of [1, 3, 100]) {
          const app = await booksApp(t, database, { limit, ...ordered })
          const { body, statements } = await served(database, app)
          assert.deepEqual(body, cut(all.body, limit), `limit ${limit}`)
          assertForm(database, statements, true)
        }
      })
    }

    for (const rule of ['links', 'tags'] as const) {
      test(`a rule on the ${rule} applies before the limit: each tenant gets its own first tags`, async (t) => {
        const database = await testDatabase(t, dialect)
        await createShelf(database)
        const everything = await booksApp(t, database, { limit: false, rule })
        const limited = await booksApp(t, database, { limit: 2, rule })
        const table = rule === 'links' ? 'lf_links' : 'lf_tags'
        for (const tenant of ['blue', 'red']) {
          const all = await served(database, everything, tenant)
          const { body, statements } = await served(database, limited, tenant)
          assert.deepEqual(body, cut(all.body, 2), tenant)
          assertForm(database, statements, rule === 'links')
          const rows = await database.db.selectFrom(table).selectAll().where('tenant', '=', tenant).execute()
          const own = rule === 'links'
            ? new Set(rows.map((row: any) => `${String(row.book_id)}:${String(row.tag_id)}`))
            : new Set(rows.map((row: any) => `${String(row.id)}`))
          const read = body.flatMap((book) => book.tags.map((tag) => rule === 'links' ? `${book.id}:${tag.id}` : `${tag.id}`))
          assert.ok(read.length > 0 && read.every((key) => own.has(key)), `${tenant} reads its own ${rule} only`)
          assert.ok(body.some((book) => book.tags.length === 2), `${tenant}: the limit cuts`)
        }
      })
    }

    test('on SQLite with foreign_keys off, the foreign key is not relied on: read with its targets', async (t) => {
      const database = await testDatabase(t, dialect)
      await createShelf(database)
      // A link whose tag does not exist, which SQLite lets in while it does not check foreign keys.
      if (dialect.name === 'sqlite') {
        await sql`pragma foreign_keys = off`.execute(database.db)
        await database.db.insertInto('lf_links').values({ book_id: 1, tag_id: 0, tenant: 'blue' }).execute()
      }
      const all = await served(database, await booksApp(t, database, { limit: false }))
      const { body, statements } = await served(database, await booksApp(t, database, { limit: 1 }))
      // Book 1's first tag is a real one, not the dangling link's place.
      assert.deepEqual(body, cut(all.body, 1))
      assert.ok(body.every((book) => book.tags.length === 1))
      assertForm(database, statements, dialect.name !== 'sqlite')
    })

    test('a join table without a foreign key to the targets is read with its targets', async (t) => {
      const database = await testDatabase(t, dialect)
      await createShelf(database)
      const all = await served(database, await booksApp(t, database, { limit: false, links: 'lf_loose_links' }))
      const { body, statements } = await served(database, await booksApp(t, database, { limit: 2, links: 'lf_loose_links' }))
      assert.deepEqual(body, cut(all.body, 2))
      assertForm(database, statements, false)
    })
  })
}
