import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { createViewset, statementChannel, viewsetIndexReport } from 'fastify-viewsets'
import type { IndexReportEntry, RelatedConfig, StatementContext } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// Issue 36 item 8: the index report lists every filter, ordering, cursor ordering, search field and relation key
// whose statement would scan a table for want of an index, read from each dialect's catalog (only an index's
// leading column serves); `strictIndexes: true` makes it a startup failure that names the table and the fields.

const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  sku: Type.String(),
  category: Type.String(),
  rank: Type.Integer(),
  price: Type.Union([Type.Integer(), Type.Null()]),
})

const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({ id: Type.Integer(), title: Type.String(), author_id: Type.Integer() })
const Author = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  books: Type.Optional(Type.Array(Book)),
})
const TaggedBook = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  author_id: Type.Integer(),
  tags: Type.Optional(Type.Array(Tag)),
  labels: Type.Optional(Type.Array(Tag)),
})

/** Items: name and price indexed, (category, rank) a composite index, sku unindexed. */
async function createItems ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable('ir_items').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull())
    .addColumn('sku', 'varchar(64)', (column) => column.notNull())
    .addColumn('category', 'varchar(64)', (column) => column.notNull())
    .addColumn('rank', 'integer', (column) => column.notNull())
    .addColumn('price', 'integer').execute()
  await db.schema.createIndex('ir_items_name').on('ir_items').column('name').execute()
  await db.schema.createIndex('ir_items_price').on('ir_items').column('price').execute()
  await db.schema.createIndex('ir_items_category_rank').on('ir_items').columns(['category', 'rank']).execute()
  await db.insertInto('ir_items').values([
    { name: 'lamp', sku: 'L-1', category: 'light', rank: 2, price: 30 },
    { name: 'desk', sku: 'D-1', category: 'furniture', rank: 1, price: null },
  ]).execute()
}

/** Authors, books (author_id unindexed, no foreign key: MySQL would index one), tags and two join tables. */
async function createShelf ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable('ir_authors').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull()).execute()
  await db.schema.createTable('ir_books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('author_id', 'integer', (column) => column.notNull()).execute()
  await db.schema.createTable('ir_tags').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull()).execute()
  // Keyed (book_id, tag_id): the book's key leads. Keyed (tag_id, book_id): it does not.
  const joins: Array<[string, Array<'book_id' | 'tag_id'>]> = [
    ['ir_book_tags', ['book_id', 'tag_id']], ['ir_book_labels', ['tag_id', 'book_id']],
  ]
  for (const [table, key] of joins) {
    await db.schema.createTable(table)
      .addColumn('book_id', 'integer', (column) => column.notNull())
      .addColumn('tag_id', 'integer', (column) => column.notNull())
      .addPrimaryKeyConstraint(`${table}_pk`, key).execute()
  }
  await db.insertInto('ir_authors').values([{ name: 'Ann' }, { name: 'Bo' }]).execute()
  await db.insertInto('ir_books').values([{ title: 'One', author_id: 1 }, { title: 'Two', author_id: 2 }]).execute()
  await db.insertInto('ir_tags').values([{ name: 'red' }, { name: 'blue' }]).execute()
  await db.insertInto('ir_book_tags').values([{ book_id: 1, tag_id: 2 }]).execute()
  await db.insertInto('ir_book_labels').values([{ book_id: 2, tag_id: 1 }]).execute()
}

/** The report as `field use` strings, sorted, for one viewset. */
function summary (entries: readonly IndexReportEntry[]): string[] {
  return entries.map((entry) => `${entry.field} ${entry.use} ${entry.table}`).sort()
}

function itemsViewset (database: TestDatabase, extra: Record<string, unknown> = {}) {
  return createViewset({
    db: database.db,
    table: 'ir_items',
    schema: Item,
    filterFields: {
      name: ['eq', 'contains'], sku: ['eq'], category: ['eq'], rank: ['gte'], price: ['lt'], id: ['ne'],
    },
    orderingFields: ['name', 'rank', 'price', 'category'],
    defaultOrder: '-sku',
    searchFields: ['name'],
    ...extra,
  } as any)
}

for (const dialect of dialects) {
  describe(`index report on ${dialect.name}`, () => {
    test('filters, orderings and search read from the catalog: only an index\'s leading column serves', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItems(database)
      const app = testApp(t)
      await app.register(itemsViewset(database), { prefix: '/items' })
      await app.ready()
      const report = viewsetIndexReport(app)
      // Where NULLs sort first (SQLite, MySQL) a nullable column is ordered with an `is null` key no index serves.
      const nullsFirst = dialect.name !== 'postgres'
      assert.deepEqual(summary(report), [
        'name filter ir_items', // contains
        'name search ir_items',
        ...(nullsFirst ? ['price ordering ir_items'] : []),
        'rank filter ir_items', // second column of (category, rank)
        'rank ordering ir_items',
        'sku filter ir_items',
        'sku ordering ir_items', // defaultOrder
      ])
      for (const entry of report) assert.equal(entry.viewset, '/items')
      const sku = report.find((entry) => entry.field === 'sku' && entry.use === 'filter')
      assert.match(sku?.reason ?? '', /no index of "ir_items" starts with "sku"/)
      assert.match(report.find((entry) => entry.use === 'search')?.reason ?? '', /substring/)
      assert.ok(Object.isFrozen(report[0]))
      // The viewset serves as usual, and the rows are the database's.
      const response = await app.inject({ method: 'GET', url: '/items?sku=L-1&order_by=rank' })
      assert.equal(response.statusCode, 200)
      assert.match(String(response.headers['content-type']), /^application\/json/)
      assert.deepEqual(response.json().map((row: { name: string }) => row.name), ['lamp'])
      const stored = await database.db.selectFrom('ir_items').select('name').where('sku', '=', 'L-1').execute()
      assert.deepEqual(stored, [{ name: 'lamp' }])
      // A page in an order no index gives is a heavy statement on every dialect; one an index gives is cheap.
      const heavy: Record<string, boolean> = {}
      const start = (context: StatementContext): void => {
        const key = /order by [`"](\w+)/.exec(context.sql)?.[1]
        if (key !== undefined) heavy[key] = context.heavy === true
      }
      statementChannel.start.subscribe(start as (message: unknown) => void)
      try {
        const byRank = await app.inject({ method: 'GET', url: '/items?order_by=-rank' })
        assert.deepEqual(byRank.json().map((row: { name: string }) => row.name), ['lamp', 'desk'])
        const byName = await app.inject({ method: 'GET', url: '/items?order_by=name&category=light' })
        assert.deepEqual(byName.json().map((row: { name: string }) => row.name), ['lamp'])
      } finally {
        statementChannel.start.unsubscribe(start as (message: unknown) => void)
      }
      assert.deepEqual(heavy, { rank: true, name: false })
    })

    test('an index added is read at the next startup; cursor pagination reports its orderings as cursor', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItems(database)
      await database.db.schema.createIndex('ir_items_sku').on('ir_items').column('sku').execute()
      await database.db.schema.createIndex('ir_items_rank').on('ir_items').columns(['rank', 'id']).execute()
      const app = testApp(t)
      await app.register(itemsViewset(database, { pagination: 'cursor' }), { prefix: '/items' })
      await app.ready()
      const nullsFirst = dialect.name !== 'postgres'
      assert.deepEqual(summary(viewsetIndexReport(app)), [
        'name filter ir_items',
        'name search ir_items',
        ...(nullsFirst ? ['price cursor ir_items'] : []),
      ])
      const response = await app.inject({ method: 'GET', url: '/items?order_by=rank&limit=1' })
      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json().map((row: { name: string }) => row.name), ['desk'])
      assert.match(String(response.headers.link), /cursor=/)
    })

    test('relation keys: the children\'s key, the join table\'s key of the parent, every level', async (t) => {
      const database = await testDatabase(t, dialect)
      await createShelf(database)
      const app = testApp(t)
      const authors: RelatedConfig = { prefetchRelated: { books: { table: 'ir_books', foreignKey: 'author_id' } } }
      await app.register(createViewset({
        db: database.db, table: 'ir_authors', schema: Author, relatedConfig: authors, methods: ['LIST', 'GET'],
      } as any), { prefix: '/authors' })
      const books: RelatedConfig = {
        prefetchRelated: {
          tags: { table: 'ir_tags', through: { table: 'ir_book_tags', sourceKey: 'book_id', targetKey: 'tag_id' } },
          labels: { table: 'ir_tags', through: { table: 'ir_book_labels', sourceKey: 'book_id', targetKey: 'tag_id' } },
        },
      }
      await app.register(createViewset({
        db: database.db,
        table: 'ir_books',
        schema: TaggedBook,
        relatedConfig: books,
        methods: ['LIST', 'GET'],
        filterFields: { 'tags.name': ['eq'] },
      } as any), { prefix: '/books' })
      await app.ready()
      const report = viewsetIndexReport(app)
      assert.deepEqual(report.map((entry) => `${entry.viewset} ${entry.field} ${entry.use} ${entry.table}`).sort(), [
        '/authors books relation ir_books',
        '/books labels relation ir_book_labels',
        '/books tags.name filter ir_books',
      ])
      const books1 = report.find((entry) => entry.field === 'books')
      assert.match(books1?.reason ?? '', /"ir_books" starts with "author_id"/)
      // The loads still answer the database's rows.
      const response = await app.inject({ method: 'GET', url: '/books/2' })
      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json().labels, [{ id: 1, name: 'red' }])
    })

    test('a to-many load with a limit is cheap only when an index gives each parent\'s children in order', async (t) => {
      const database = await testDatabase(t, dialect)
      await createShelf(database)
      const authors: RelatedConfig = {
        prefetchRelated: { books: { table: 'ir_books', foreignKey: 'author_id', orderBy: '-id', limit: 1 } },
      }
      // Whether the statement that loads the books ran as a heavy one (the statement channel's `heavy`).
      const loadIsHeavy = async (): Promise<{ heavy: boolean[], report: string[], books: unknown }> => {
        const app = testApp(t)
        await app.register(createViewset({
          db: database.db, table: 'ir_authors', schema: Author, relatedConfig: authors, methods: ['LIST', 'GET'],
        } as any), { prefix: '/authors' })
        await app.ready()
        const heavy: boolean[] = []
        const start = (context: StatementContext): void => {
          if (context.sql.includes('ir_books')) heavy.push(context.heavy === true)
        }
        statementChannel.start.subscribe(start as (message: unknown) => void)
        try {
          const response = await app.inject({ method: 'GET', url: '/authors/1' })
          assert.equal(response.statusCode, 200)
          const report = viewsetIndexReport(app).map((entry) => `${entry.field} ${entry.use} ${entry.reason}`)
          return { heavy, report, books: response.json().books }
        } finally {
          statementChannel.start.unsubscribe(start as (message: unknown) => void)
        }
      }
      // The window fallback (MariaDB) learns its class from the rows it reads; the per-parent forms know it now.
      const perParent = dialect.name !== 'mysql'
      const scan = await loadIsHeavy()
      assert.deepEqual(scan.books, [{ id: 1, title: 'One', author_id: 1 }])
      assert.deepEqual(scan.heavy, [perParent])
      assert.match(scan.report.join('\n'), /^books relation no index of "ir_books" starts with "author_id"/)

      // The children's key alone: each parent's children are found, but all read and sorted to keep the first one;
      // except on SQLite, where each entry of an index ends with the rowid, which the INTEGER PRIMARY KEY id is.
      await database.db.schema.createIndex('ir_books_author').on('ir_books').column('author_id').execute()
      const sorted = await loadIsHeavy()
      const rowidOrder = dialect.name === 'sqlite'
      assert.deepEqual(sorted.heavy, [perParent && !rowidOrder])
      if (rowidOrder) assert.deepEqual(sorted.report, [])
      else {
        assert.match(sorted.report.join('\n'),
          /^books relation each parent's children are all read and sorted to keep the first 1: .*\(author_id, id\)/)
      }

      // (author_id, id): read in order, a LIMIT reads only what it keeps; cheap, and nothing reported.
      await database.db.schema.createIndex('ir_books_author_id').on('ir_books').columns(['author_id', 'id']).execute()
      const served = await loadIsHeavy()
      assert.deepEqual(served.heavy, [false])
      assert.deepEqual(served.report, [])
      assert.deepEqual(served.books, [{ id: 1, title: 'One', author_id: 1 }])
    })

    test('strictIndexes: true fails the startup naming the option, the table and each field', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItems(database)
      const app = testApp(t)
      app.register(createViewset({
        db: database.db,
        table: 'ir_items',
        schema: Item,
        strictIndexes: true,
        filterFields: { sku: ['eq'], category: ['eq'], rank: ['eq'] },
        orderingFields: ['name'],
      } as any), { prefix: '/items' })
      await assert.rejects(async () => { await app.ready() }, (error: Error & { code?: string }) => {
        assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
        assert.match(error.message, /^Invalid viewset option strictIndexes: "ir_items" /)
        assert.match(error.message, /sku \(filter: no index of "ir_items" starts with "sku"/)
        assert.match(error.message, /rank \(filter: /)
        assert.doesNotMatch(error.message, /category|name \(/)
        return true
      })
      // Nothing was written by the failed startup.
      assert.equal((await sql<{ n: number | string }>`select count(*) as n from ir_items`.execute(database.db))
        .rows.map((row) => Number(row.n))[0], 2)

      // Every field served by an index: the viewset starts and serves.
      const served = testApp(t)
      await served.register(createViewset({
        db: database.db,
        table: 'ir_items',
        schema: Item,
        strictIndexes: true,
        filterFields: { category: ['eq'], name: ['eq'] },
        orderingFields: ['name'],
      } as any), { prefix: '/items' })
      const response = await served.inject({ method: 'GET', url: '/items?category=light&order_by=-name' })
      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json().map((row: { sku: string }) => row.sku), ['L-1'])
      assert.deepEqual(viewsetIndexReport(served), [])
    })

    test('strictIndexes must be a boolean', async (t) => {
      const database = await testDatabase(t, dialect)
      assert.throws(() => createViewset({ db: database.db, table: 'ir_items', schema: Item, strictIndexes: 'yes' } as any),
        /Invalid viewset option strictIndexes: expected a boolean/)
    })
  })
}
