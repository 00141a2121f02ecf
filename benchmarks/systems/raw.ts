import type { Statement } from 'better-sqlite3'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { Author, Book, bookColumns } from '../data.js'
import type { BookWithRelations, Tag, VersionedBook } from '../data.js'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { handWrittenRoutes, naiveOnce, orderOf, rulesOnOurs, stitch, yearGroup } from './hand-written.js'
import type { BookPatch, BookStore, ListQuery, NewBook, PageQuery } from './hand-written.js'
import { openPool, openSqlite } from './connections.js'
import { ruledRoutes } from './raw-ruled.js'

// The ceiling of the stack: Fastify with response schemas over prepared statements
// (better-sqlite3 statements prepared once; pg named statements, parsed once per connection).

const columns = bookColumns.join(', ')
const writable = ['author_id', 'title', 'year', 'price'] as const

function sqliteStore (file: string): BookStore {
  const db = openSqlite(file)
  const byId = db.prepare<[number], Book>(`select ${columns} from books where id = ?`)
  const versionedById = db.prepare<[number], VersionedBook>(
    `select ${columns}, version from versioned_books where id = ?`
  )
  const remove = db.prepare<[number]>('delete from books where id = ?')
  // Writes with RETURNING run to their end (`.all()`, not `.get()`): SQLite checkpoints its WAL only when a
  // statement returns SQLITE_DONE, and a write reset after its first row leaves the WAL growing.
  const insert = db.prepare<[NewBook], Book>(
    `insert into books (author_id, title, year, price) values (@author_id, @title, @year, @price) returning ${columns}`
  )
  const authors = db.prepare<[string], Author>(
    'select id, name, email from authors where id in (select value from json_each(?))'
  )
  const tags = db.prepare<[string], Tag & { book_id: number }>(
    'select book_tags.book_id, tags.id, tags.name from book_tags join tags on tags.id = book_tags.tag_id where book_tags.book_id in (select value from json_each(?)) order by tags.id'
  )
  // One prepared statement per shape, built from allow-listed names only.
  const shapes = new Map<string, Statement>()
  const shaped = (key: string, sql: () => string): Statement => {
    let statement = shapes.get(key)
    if (statement === undefined) shapes.set(key, (statement = db.prepare(sql())))
    return statement
  }
  // The LIMIT written into the SQL, one statement per page size: SQLite plans an index-ordered LIMIT with its
  // value, so a bound LIMIT is prepared again on every step (the library does the same, ViewsetDialect.literalLimit).
  // The filter's value is written `+@author_id` for the same reason: the table is analyzed, and STAT4 would
  // prepare the statement again for each value bound (the library's statementPlugin, sqlite-stable-plans.ts).
  const byYear = db.prepare<[number], { year: number; count: number; sum: number | null }>(
    'select year, count(*) as count, sum(price) as sum from books where author_id = +? group by year order by year limit 20'
  )
  const page = (limit: number): Statement<[number], Book> =>
    shaped(`page:${limit}`, () => `select ${columns} from books order by id limit ${limit} offset ?`) as Statement<
      [number],
      Book
    >
  return {
    byId: (id) => byId.get(id),
    versionedById: (id) => versionedById.get(id),
    remove: (id) => remove.run(id).changes > 0,
    list (query: ListQuery) {
      if (query.author_id === undefined && query.order_by === undefined && query.authors === undefined) {
        return page(query.limit).all(query.offset)
      }
      const { field, descending } = orderOf(query.order_by)
      const order = `order by ${field} ${descending ? 'desc' : 'asc'}${field === 'id' ? '' : ', id asc'}`
      if (query.authors !== undefined) {
        const [a, b] = query.authors.split(',').map(Number)
        const either = shaped(
          `or:${field}:${String(descending)}:${query.limit}`,
          () => `select ${columns} from books where (author_id = +@a or author_id = +@b) ${order} limit ${query.limit} offset @offset`
        )
        return either.all({ a, b, offset: query.offset }) as Book[]
      }
      const filtered = query.author_id !== undefined
      const statement = shaped(
        `list:${String(filtered)}:${field}:${String(descending)}:${query.limit}`,
        () =>
          `select ${columns} from books${filtered ? ' where author_id = +@author_id' : ''} order by ${field} ${descending ? 'desc' : 'asc'}${field === 'id' ? '' : ', id asc'} limit ${query.limit} offset @offset`
      )
      return statement.all({ author_id: query.author_id, offset: query.offset }) as Book[]
    },
    aggregate: (authorId) => byYear.all(authorId).map(yearGroup),
    insert: (values: NewBook) => insert.all(values)[0] as Book,
    patch (id: number, values: BookPatch) {
      const fields = writable.filter((field) => values[field] !== undefined)
      const statement = shaped(
        `patch:${fields.join(',')}`,
        () =>
          `update books set ${fields.map((field) => `${field} = @${field}`).join(', ')} where id = @id returning ${columns}`
      )
      return statement.all({ ...values, id })[0] as Book | undefined
    },
    patchWhere (authorId: number, values: BookPatch) {
      const fields = writable.filter((field) => values[field] !== undefined)
      const statement = shaped(
        `patch-where:${fields.join(',')}`,
        () => `update books set ${fields.map((field) => `${field} = @${field}`).join(', ')} where author_id = +@author_id`
      )
      return statement.run({ ...values, author_id: authorId }).changes
    },
    withRelations (query: PageQuery) {
      const books: BookWithRelations[] = page(query.limit).all(query.offset)
      const authorIds = JSON.stringify([...new Set(books.map((book) => book.author_id))])
      const bookIds = JSON.stringify(books.map((book) => book.id))
      return stitch(books, authors.all(authorIds), tags.all(bookIds))
    },
    close: () => {
      db.close()
    },
  }
}

function postgresStore (url: string): BookStore {
  const pool = openPool(url)
  // `name` makes pg parse each statement once per connection and then only bind and execute it.
  const run = async <T>(name: string, text: string, values: unknown[]): Promise<T[]> =>
    (await pool.query({ name, text, values })).rows as T[]
  const patchStatements = new Map<string, string>()
  return {
    byId: async (id) => (await run<Book>('book_by_id', `select ${columns} from books where id = $1`, [id]))[0],
    versionedById: async (id) =>
      (
        await run<VersionedBook>(
          'versioned_book_by_id',
          `select ${columns}, version from versioned_books where id = $1`,
          [id]
        )
      )[0],
    remove: async (id) =>
      ((await pool.query({ name: 'book_delete', text: 'delete from books where id = $1', values: [id] })).rowCount ??
        0) > 0,
    async list (query: ListQuery) {
      if (query.author_id === undefined && query.order_by === undefined && query.authors === undefined) {
        return await run<Book>('book_page', `select ${columns} from books order by id limit $1 offset $2`, [
          query.limit,
          query.offset,
        ])
      }
      const { field, descending } = orderOf(query.order_by)
      if (query.authors !== undefined) {
        const order = `order by ${field} ${descending ? 'desc' : 'asc'}${field === 'id' ? '' : ', id asc'}`
        return await run<Book>(
          `book_or_${field}_${String(descending)}`,
          `select ${columns} from books where (author_id = $3 or author_id = $4) ${order} limit $1 offset $2`,
          [query.limit, query.offset, ...query.authors.split(',').map(Number)]
        )
      }
      const filtered = query.author_id !== undefined
      const name = `book_list_${String(filtered)}_${field}_${String(descending)}`
      const text = `select ${columns} from books${filtered ? ' where author_id = $3' : ''} order by ${field} ${descending ? 'desc' : 'asc'}${field === 'id' ? '' : ', id asc'} limit $1 offset $2`
      return await run<Book>(
        name,
        text,
        filtered ? [query.limit, query.offset, query.author_id] : [query.limit, query.offset]
      )
    },
    aggregate: async (authorId) =>
      (await run<{ year: number; count: string; sum: number | null }>(
        'book_aggregate',
        'select year, count(*) as count, sum(price) as sum from books where author_id = $1 group by year order by year limit 20',
        [authorId]
      )).map(yearGroup),
    insert: async (values: NewBook) =>
      (
        await run<Book>(
          'book_insert',
          `insert into books (author_id, title, year, price) values ($1, $2, $3, $4) returning ${columns}`,
          [values.author_id, values.title, values.year, values.price]
        )
      )[0] as Book,
    async patch (id: number, values: BookPatch) {
      const fields = writable.filter((field) => values[field] !== undefined)
      const name = `book_patch_${fields.join('_')}`
      let text = patchStatements.get(name)
      if (text === undefined) {
        patchStatements.set(
          name,
          (text = `update books set ${fields.map((field, index) => `${field} = $${index + 2}`).join(', ')} where id = $1 returning ${columns}`)
        )
      }
      return (await run<Book>(name, text, [id, ...fields.map((field) => values[field])]))[0]
    },
    async patchWhere (authorId: number, values: BookPatch) {
      const fields = writable.filter((field) => values[field] !== undefined)
      const set = fields.map((field, index) => `${field} = $${index + 2}`).join(', ')
      const text = `update books set ${set} where author_id = $1`
      const name = `book_patch_where_${fields.join('_')}`
      const bound = [authorId, ...fields.map((field) => values[field])]
      return (await pool.query({ name, text, values: bound })).rowCount ?? 0
    },
    async withRelations (query: PageQuery) {
      const books = await run<BookWithRelations>(
        'book_page',
        `select ${columns} from books order by id limit $1 offset $2`,
        [query.limit, query.offset]
      )
      const [authors, tags] = await Promise.all([
        run<Author>('authors_by_ids', 'select id, name, email from authors where id = any($1::int[])', [
          [...new Set(books.map((book) => book.author_id))],
        ]),
        run<Tag & { book_id: number }>(
          'tags_by_books',
          'select book_tags.book_id, tags.id, tags.name from book_tags join tags on tags.id = book_tags.tag_id where book_tags.book_id = any($1::int[]) order by tags.id',
          [books.map((book) => book.id)]
        ),
      ])
      return stitch(books, authors, tags)
    },
    close: async () => {
      await pool.end()
    },
  }
}

/** A new author and its books, as the nested POST sends them. */
interface NewAuthor { name: string; email: string; books: Array<Omit<NewBook, 'author_id'>> }

const NestedAuthor = Type.Object({
  name: Type.String({ maxLength: 200 }),
  email: Type.String({ maxLength: 200 }),
  books: Type.Array(Type.Omit(Book, ['id', 'author_id']), { maxItems: 1000 }),
}, { additionalProperties: false })
const AuthorWithBooks = Type.Object({ ...Author.properties, books: Type.Array(Book) })

/** The nested POST written by hand: the author and its books inserted in one transaction, answered with the books. */
function nestedRoute (app: FastifyInstance, target: DatabaseTarget): void {
  let write: (body: NewAuthor) => Promise<Author & { books: Book[] }>
  if (target.kind === 'sqlite') {
    const db = openSqlite(target.file)
    const author = db.prepare<[Omit<NewAuthor, 'books'>], Author>(
      'insert into authors (name, email) values (@name, @email) returning id, name, email')
    const book = db.prepare<[NewBook], Book>(
      `insert into books (author_id, title, year, price) values (@author_id, @title, @year, @price) returning ${columns}`)
    const transaction = db.transaction((body: NewAuthor) => {
      const [row] = author.all({ name: body.name, email: body.email }) as [Author]
      return { ...row, books: body.books.map((each) => book.all({ ...each, author_id: row.id })[0] as Book) }
    })
    write = async (body) => transaction(body)
    app.addHook('onClose', async () => { db.close() })
  } else {
    const pool = openPool(target.url)
    write = async (body) => {
      const client = await pool.connect()
      try {
        await client.query('begin')
        const row = (await client.query<Author>({
          name: 'author_insert',
          text: 'insert into authors (name, email) values ($1, $2) returning id, name, email',
          values: [body.name, body.email],
        })).rows[0] as Author
        const books: Book[] = []
        for (const each of body.books) {
          books.push((await client.query<Book>({
            name: 'book_insert',
            text: `insert into books (author_id, title, year, price) values ($1, $2, $3, $4) returning ${columns}`,
            values: [row.id, each.title, each.year, each.price],
          })).rows[0] as Book)
        }
        await client.query('commit')
        return { ...row, books }
      } catch (error) {
        await client.query('rollback')
        throw error
      } finally {
        client.release()
      }
    }
    app.addHook('onClose', async () => { await pool.end() })
  }
  app.post<{ Body: NewAuthor }>('/authors-nested', {
    schema: { body: NestedAuthor, response: { 201: AuthorWithBooks } },
  }, async (request, reply) => await reply.code(201).send(await write(request.body)))
}

export async function build (target: DatabaseTarget): Promise<SystemServer> {
  const app = Fastify({ logger: false })
  handWrittenRoutes(app, target.kind === 'sqlite' ? sqliteStore(target.file) : postgresStore(target.url))
  nestedRoute(app, target)
  ruledRoutes(app, target)
  return { app, unsupported: { 'eager-n1': naiveOnce, ...rulesOnOurs } }
}
