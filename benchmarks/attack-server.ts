import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'

// The server of `npm run bench -- --attack` (attack.ts forks it over the built package): the relations example's
// tables on a SQLite file (or a PostgreSQL database) of `rows` books, the filters and orderings the issue's
// attack used, listening on an ephemeral port reported over IPC.

const Publisher = Type.Object({ id: Type.Integer(), name: Type.String() })
const Author = Type.Object({ id: Type.Integer(), name: Type.String() })
const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  author_id: Type.Union([Type.Integer(), Type.Null()]),
  publisher_id: Type.Union([Type.Integer(), Type.Null()]),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
  publisher: Type.Optional(Type.Union([Publisher, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
const PublisherWithBooks = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  books: Type.Optional(Type.Array(Type.Object({ id: Type.Integer(), title: Type.String() }))),
})

/** Creates and fills the tables once: `rows` books over 1,000 authors, 4 publishers and 50 tags, two tags a book. */
async function seed (db: Kysely<any>, rows: number): Promise<void> {
  const existing = await sql<{ n: number }>`select count(*) as n from attack_books`.execute(db).catch(() => undefined)
  if (existing !== undefined && Number(existing.rows[0]?.n) === rows) return
  for (const table of ['attack_book_tags', 'attack_books', 'attack_tags', 'attack_authors', 'attack_publishers']) {
    await sql`drop table if exists ${sql.table(table)}`.execute(db)
  }
  await sql`create table attack_publishers (id integer primary key, name varchar(100) not null)`.execute(db)
  await sql`create table attack_authors (id integer primary key, name varchar(100) not null)`.execute(db)
  await sql`create table attack_tags (id integer primary key, name varchar(100) not null)`.execute(db)
  await sql`create table attack_books (id integer primary key, title varchar(200) not null,
    author_id integer references attack_authors (id), publisher_id integer references attack_publishers (id))`.execute(db)
  await sql`create table attack_book_tags (book_id integer not null references attack_books (id),
    tag_id integer not null references attack_tags (id), primary key (book_id, tag_id))`.execute(db)
  await sql`create index attack_books_author on attack_books (author_id)`.execute(db)
  await sql`create index attack_books_publisher on attack_books (publisher_id)`.execute(db)
  await sql`create index attack_book_tags_tag on attack_book_tags (tag_id)`.execute(db)
  const series = (count: number) =>
    sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${sql.lit(count)}) select i from n`
  await sql`insert into attack_publishers (id, name) select i, 'publisher ' || i from (${series(4)}) s`.execute(db)
  await sql`insert into attack_authors (id, name) select i, 'author ' || i from (${series(1000)}) s`.execute(db)
  await sql`insert into attack_tags (id, name) select i, 'tag ' || i from (${series(50)}) s`.execute(db)
  await sql`insert into attack_books (id, title, author_id, publisher_id)
    select i, 'book ' || i, i % 1000 + 1, i % 4 + 1 from (${series(rows)}) s`.execute(db)
  await sql`insert into attack_book_tags (book_id, tag_id) select i, i % 50 + 1 from (${series(rows)}) s`.execute(db)
  await sql`insert into attack_book_tags (book_id, tag_id) select i, (i + 7) % 50 + 1 from (${series(rows)}) s`
    .execute(db)
}

async function main (): Promise<void> {
  const url = process.env.ATTACK_DB_URL ?? 'sqlite:benchmarks/.data/attack.db'
  const rows = Number(process.env.ATTACK_ROWS ?? 1_000_000)
  const readWorkers = process.env.ATTACK_READ_WORKERS
  if (url.startsWith('sqlite:')) mkdirSync(dirname(url.slice('sqlite:'.length)), { recursive: true })
  // Filling a million rows takes longer than a statement may.
  const seeder = createDatabase<any>(url, { statementTimeout: 0, readWorkers: 0 })
  await seed(seeder, rows)
  await seeder.destroy()
  const heavyConnections = process.env.ATTACK_HEAVY_CONNECTIONS
  const db = createDatabase<any>(url, {
    ...(readWorkers === undefined ? {} : { readWorkers: Number(readWorkers) }),
    ...(heavyConnections === undefined ? {} : { heavyConnections: Number(heavyConnections) }),
  })
  const app = Fastify({ logger: false })
  await app.register(createViewset({
    db,
    table: 'attack_books',
    schema: Book,
    methods: ['LIST', 'GET'],
    filterFields: { 'tags.name': ['contains'], title: ['contains'] },
    orderingFields: ['author.name', 'id'],
    relatedConfig: {
      selectRelated: {
        author: { table: 'attack_authors', foreignKey: 'author_id' },
        publisher: { table: 'attack_publishers', foreignKey: 'publisher_id' },
      },
      prefetchRelated: {
        tags: { table: 'attack_tags', through: { table: 'attack_book_tags', sourceKey: 'book_id', targetKey: 'tag_id' } },
      },
    },
  }), { prefix: '/books' })
  await app.register(createViewset({
    db,
    table: 'attack_publishers',
    schema: PublisherWithBooks,
    methods: ['LIST', 'GET'],
    relatedConfig: {
      prefetchRelated: { books: { table: 'attack_books', foreignKey: 'publisher_id', orderBy: ['-id'] } },
    },
  }), { prefix: '/publishers' })
  app.addHook('onClose', async () => { await db.destroy() })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  process.send?.({ port: typeof address === 'object' && address !== null ? address.port : 0 })
  process.on('message', () => { void app.close().then(() => process.exit(0)) })
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
