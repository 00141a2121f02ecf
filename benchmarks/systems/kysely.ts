import Fastify from 'fastify'
import type { Kysely } from 'kysely'
import { bookColumns } from '../data.js'
import type { BenchDB, Book, BookWithRelations } from '../data.js'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { usersKysely } from './connections.js'
import { aggregateOnRaw, etagCostOnRaw, handWrittenRoutes, orderOf, nestedOnRaw, ruledOnRaw, rulesOnOurs, stitch } from './hand-written.js'
import type { BookPatch, BookStore, ListQuery, NewBook, PageQuery } from './hand-written.js'

// What a user writes by hand: Fastify routes with the same schemas, and a Kysely query per request,
// built, compiled and executed on every call (Kysely's own dialects, no statement cache).

function kyselyStore (db: Kysely<BenchDB>): BookStore {
  const books = () => db.selectFrom('books').select(bookColumns)
  const page = async ({ limit, offset }: PageQuery): Promise<BookWithRelations[]> =>
    await books().orderBy('id').limit(limit).offset(offset).execute()
  return {
    byId: async (id) => await books().where('id', '=', id).executeTakeFirst(),
    versionedById: async (id) => await db.selectFrom('versioned_books').select([...bookColumns, 'version']).where('id', '=', id).executeTakeFirst(),
    remove: async (id) => (await db.deleteFrom('books').where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n,
    async list (query: ListQuery) {
      const { field, descending } = orderOf(query.order_by)
      let select = books()
      if (query.author_id !== undefined) select = select.where('author_id', '=', query.author_id)
      const either = query.authors?.split(',').map(Number)
      if (either !== undefined) select = select.where((eb) => eb.or(either.map((id) => eb('author_id', '=', id))))
      select = select.orderBy(field, descending ? 'desc' : 'asc')
      if (field !== 'id') select = select.orderBy('id', 'asc')
      return await select.limit(query.limit).offset(query.offset).execute()
    },
    insert: async (values: NewBook) => await db.insertInto('books').values(values).returning(bookColumns).executeTakeFirstOrThrow(),
    patch: async (id: number, values: BookPatch) =>
      await db.updateTable('books').set(values).where('id', '=', id).returning(bookColumns).executeTakeFirst() as Book | undefined,
    patchWhere: async (authorId: number, values: BookPatch) =>
      Number((await db.updateTable('books').set(values).where('author_id', '=', authorId).executeTakeFirst()).numUpdatedRows),
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
  handWrittenRoutes(app, kyselyStore(usersKysely(target).db))
  const unsupported = { ...etagCostOnRaw, ...rulesOnOurs, ...nestedOnRaw, ...ruledOnRaw, aggregate: aggregateOnRaw }
  return { app, unsupported }
}
