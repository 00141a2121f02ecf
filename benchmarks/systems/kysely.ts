import Database from 'better-sqlite3'
import Fastify from 'fastify'
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import { bookColumns } from '../data.js'
import type { BenchDB, Book, BookWithRelations } from '../data.js'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { handWrittenRoutes, orderOf, stitch } from './hand-written.js'
import type { BookPatch, BookStore, ListQuery, NewBook, PageQuery } from './hand-written.js'

// What a user writes by hand: Fastify routes with the same schemas, and a Kysely query per request,
// built, compiled and executed on every call (Kysely's own dialects, no statement cache).

function database (target: DatabaseTarget): Kysely<BenchDB> {
  if (target.kind === 'sqlite') {
    const sqlite = new Database(target.file)
    sqlite.pragma('journal_mode = WAL')
    sqlite.pragma('busy_timeout = 5000')
    sqlite.pragma('foreign_keys = ON')
    return new Kysely<BenchDB>({ dialect: new SqliteDialect({ database: sqlite }) })
  }
  const pool = new pg.Pool({ connectionString: target.url, max: 10 })
  pool.on('error', () => {})
  return new Kysely<BenchDB>({ dialect: new PostgresDialect({ pool }) })
}

function kyselyStore (db: Kysely<BenchDB>): BookStore {
  const books = () => db.selectFrom('books').select(bookColumns)
  const page = async ({ limit, offset }: PageQuery): Promise<BookWithRelations[]> =>
    await books().orderBy('id').limit(limit).offset(offset).execute()
  return {
    byId: async (id) => await books().where('id', '=', id).executeTakeFirst(),
    async list (query: ListQuery) {
      const { field, descending } = orderOf(query.order_by)
      let select = books()
      if (query.author_id !== undefined) select = select.where('author_id', '=', query.author_id)
      select = select.orderBy(field, descending ? 'desc' : 'asc')
      if (field !== 'id') select = select.orderBy('id', 'asc')
      return await select.limit(query.limit).offset(query.offset).execute()
    },
    insert: async (values: NewBook) => await db.insertInto('books').values(values).returning(bookColumns).executeTakeFirstOrThrow(),
    patch: async (id: number, values: BookPatch) =>
      await db.updateTable('books').set(values).where('id', '=', id).returning(bookColumns).executeTakeFirst() as Book | undefined,
    async withRelations (query: PageQuery) {
      const rows = await page(query)
      if (rows.length === 0) return rows
      const [authors, tags] = await Promise.all([
        db.selectFrom('authors').select(['id', 'name', 'email']).where('id', 'in', [...new Set(rows.map((book) => book.author_id))]).execute(),
        db.selectFrom('book_tags').innerJoin('tags', 'tags.id', 'book_tags.tag_id')
          .select(['book_tags.book_id', 'tags.id', 'tags.name'])
          .where('book_tags.book_id', 'in', rows.map((book) => book.id as number))
          .orderBy('tags.id')
          .execute(),
      ])
      return stitch(rows, authors, tags)
    },
    async withRelationsNaive (query: PageQuery) {
      const rows = await page(query)
      for (const book of rows) {
        book.author = await db.selectFrom('authors').select(['id', 'name', 'email']).where('id', '=', book.author_id).executeTakeFirst() ?? null
        book.tags = await db.selectFrom('tags').innerJoin('book_tags', 'book_tags.tag_id', 'tags.id')
          .select(['tags.id', 'tags.name'])
          .where('book_tags.book_id', '=', book.id as number)
          .orderBy('tags.id')
          .execute()
      }
      return rows
    },
    close: async () => { await db.destroy() },
  }
}

export async function build (target: DatabaseTarget): Promise<SystemServer> {
  const app = Fastify({ logger: false })
  handWrittenRoutes(app, kyselyStore(database(target)))
  return { app, unsupported: {} }
}
