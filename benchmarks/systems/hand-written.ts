import { hash } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import fastJson from 'fast-json-stringify'
import { Book, BookWithRelations, VersionedBook } from '../data.js'
import type { Author, Tag } from '../data.js'

// The routes a user writes by hand, shared by `raw` and `kysely`: the same URLs, schemas and status
// codes as the viewset, so that the systems differ only in how they reach the database. GET, POST and
// PATCH do the work the viewset's do: a strong ETag that hashes the body sent (SHA-1, base64url, as
// lib/conditional-requests.ts), serialized once from the same schema. They honour nothing else
// (no If-None-Match, no If-Match): the load never sends one. `/books-untagged/:id` is the same GET without the tag,
// and `/versioned-books/:id` takes the tag from a version column, as `versionField` does.

/** Why a system has no naive N+1 row. */
export const naiveOnce = 'the naive N+1 version is written once, with Kysely'

/** The scenarios that isolate the ETag's cost: measured on raw and ours only. */
export const etagCostOnRaw = {
  'get-versioned': 'the cost of the ETag is measured on raw and viewsets',
  'get-untagged': 'the cost of the ETag is measured on raw (ours always sends one)',
} as const

/** The scenarios of the library's row rules (`scope`): measured on ours, scoped against unscoped. */
/** Nested writes are measured against the hand-written raw transaction only. */
export const nestedOnRaw = {
  'nested-post': 'nested writes: measured against the hand-written transaction of raw',
} as const

export const rulesOnOurs = {
  'get-scoped': 'row rules are the library\'s: measured as ours scoped against ours unscoped',
  'list-author': 'row rules are the library\'s: measured as ours scoped against ours unscoped',
  'list-author-scoped': 'row rules are the library\'s: measured as ours scoped against ours unscoped',
  'get-history': 'the history is the library\'s: measured as ours with it against ours without',
  'patch-history': 'the history is the library\'s: measured as ours with it against ours without',
} as const

/** Issue 43's rule scenarios: raw writes the same WHERE and field hiding by hand; the others do not serve them. */
export const ruledOnRaw = {
  'get-ruled': 'the rules written by hand are measured on raw, against the viewset\'s scope and fieldAccess',
  'list10-ruled': 'the rules written by hand are measured on raw, against the viewset\'s scope and fieldAccess',
  'list100-ruled': 'the rules written by hand are measured on raw, against the viewset\'s scope and fieldAccess',
  'filter-ruled': 'the rules written by hand are measured on raw, against the viewset\'s scope and fieldAccess',
  'patch-ruled': 'the rules written by hand are measured on raw, against the viewset\'s scope and fieldAccess',
  'delete-ruled': 'the rules written by hand are measured on raw, against the viewset\'s scope and fieldAccess',
} as const

/** The hand-written equivalent of AGGREGATE: measured on raw (a GROUP BY over prepared statements) and ours. */
export const aggregateOnRaw = 'the hand-written GROUP BY is measured on raw, against the viewset\'s AGGREGATE'

/** Fields a client may sort by, with `-` for descending (`?order_by=-year`). */
export const orderingFields = ['id', 'title', 'year', 'price'] as const
export type OrderingField = (typeof orderingFields)[number]

export const ListQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
    offset: Type.Integer({ minimum: 0, default: 0 }),
    author_id: Type.Optional(Type.Integer()),
    /** Two author ids, `3,7`: the books of either (the OR-filter scenario; viewsets spell it `or=(…)`). */
    authors: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8},[1-9][0-9]{0,8}$' })),
    order_by: Type.Optional(
      Type.Union(orderingFields.flatMap((field) => [Type.Literal(field), Type.Literal(`-${field}`)]))
    ),
  },
  { additionalProperties: false }
)
export type ListQuery = Static<typeof ListQuery>

export const PageQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
    offset: Type.Integer({ minimum: 0, default: 0 }),
  },
  { additionalProperties: false }
)
export type PageQuery = Static<typeof PageQuery>

const IdParams = Type.Object({ id: Type.Integer() })
const NewBook = Type.Omit(Book, ['id'], { additionalProperties: false })
export type NewBook = Static<typeof NewBook>
const BookPatch = Type.Partial(NewBook, { additionalProperties: false, minProperties: 1 })
export type BookPatch = Static<typeof BookPatch>

/** The filter of the bulk PATCH, and its answer: how many books changed. */
const AuthorFilter = Type.Object({ author_id: Type.Integer() }, { additionalProperties: false })
const Affected = Type.Object({ affected: Type.Integer() })

/** The order of a LIST: the client's field, then the key so that pages are stable. */
export function orderOf (orderBy: string | undefined): { field: OrderingField; descending: boolean } {
  if (orderBy === undefined) return { field: 'id', descending: false }
  const descending = orderBy.startsWith('-')
  return { field: (descending ? orderBy.slice(1) : orderBy) as OrderingField, descending }
}

/** How a hand-written system reaches the database. Each method may answer synchronously (better-sqlite3). */
export interface BookStore {
  byId(id: number): Promise<Book | undefined> | Book | undefined
  list(query: ListQuery): Promise<Book[]> | Book[]
  insert(values: NewBook): Promise<Book> | Book
  patch(id: number, values: BookPatch): Promise<Book | undefined> | Book | undefined
  /** Sets `values` on every book of the author: how many books changed (the bulk PATCH by filter). */
  patchWhere?(authorId: number, values: BookPatch): Promise<number> | number
  /** Deletes a book: false when there was none. */
  remove(id: number): Promise<boolean> | boolean
  versionedById(id: number): Promise<VersionedBook | undefined> | VersionedBook | undefined
  /** A page of books with author and tags, in a fixed number of queries. */
  withRelations(query: PageQuery): Promise<BookWithRelations[]> | BookWithRelations[]
  /** The books of one author grouped by year, counted and their prices summed, by year (the AGGREGATE scenario). */
  aggregate?(authorId: number): Promise<YearGroup[]> | YearGroup[]
  /** The same page, one query per book and relation: the naive N+1 version. */
  withRelationsNaive?(query: PageQuery): Promise<BookWithRelations[]>
  close(): Promise<void> | void
}

/** One group of the AGGREGATE scenario, as a viewset with AGGREGATE answers it. */
export const YearGroup = Type.Object({
  year: Type.Integer(),
  count: Type.Integer(),
  sum: Type.Object({ price: Type.Union([Type.Number(), Type.Null()]) }),
})
export type YearGroup = Static<typeof YearGroup>

/** A row of the hand-written GROUP BY as a group (pg answers count(*) as a string). */
export function yearGroup (row: { year: number; count: number | string; sum: number | string | null }): YearGroup {
  return { year: row.year, count: Number(row.count), sum: { price: row.sum === null ? null : Number(row.sum) } }
}

const AggregateQuery = Type.Object({
  author_id: Type.Integer(),
  group_by: Type.Literal('year'),
  count: Type.Literal(true),
  sum: Type.Literal('price'),
}, { additionalProperties: false })

/** Puts each author and the tags of each book onto a page of books, in place. */
export function stitch (
  books: BookWithRelations[],
  authors: Author[],
  tags: Array<Tag & { book_id: number }>
): BookWithRelations[] {
  const authorsById = new Map<number, Author>()
  for (const author of authors) authorsById.set(author.id, author)
  const tagsByBook = new Map<number, Tag[]>()
  for (const book of books) {
    book.author = authorsById.get(book.author_id) ?? null
    const list: Tag[] = []
    book.tags = list
    tagsByBook.set(book.id as number, list)
  }
  for (const { book_id: bookId, id, name } of tags) tagsByBook.get(bookId)?.push({ id, name })
  return books
}

/** Registers the books routes over a store. */
export function handWrittenRoutes (app: FastifyInstance, store: BookStore): void {
  const notFound = { statusCode: 404, error: 'Not Found', message: 'No such book' }
  const serializeBook = fastJson(Book)
  // A string with a JSON content type is sent as it is (the response schema's serializer does not run again).
  const sendTagged = (reply: FastifyReply, book: Book): string => {
    const body = serializeBook(book)
    reply.header('etag', `"${hash('sha1', body, 'base64url')}"`).type('application/json; charset=utf-8')
    return body
  }
  app.get<{ Querystring: ListQuery }>(
    '/books',
    {
      schema: { querystring: ListQuery, response: { 200: Type.Array(Book) } },
    },
    async (request) => await store.list(request.query)
  )

  app.get<{ Params: { id: number } }>(
    '/books/:id',
    {
      schema: { params: IdParams, response: { 200: Book } },
    },
    async (request, reply) => {
      const book = await store.byId(request.params.id)
      return book === undefined ? await reply.code(404).send(notFound) : sendTagged(reply, book)
    }
  )

  app.get<{ Params: { id: number } }>(
    '/books-untagged/:id',
    {
      schema: { params: IdParams, response: { 200: Book } },
    },
    async (request, reply) => (await store.byId(request.params.id)) ?? reply.code(404).send(notFound)
  )

  app.get<{ Params: { id: number } }>(
    '/versioned-books/:id',
    {
      schema: { params: IdParams, response: { 200: VersionedBook } },
    },
    async (request, reply) => {
      const book = await store.versionedById(request.params.id)
      if (book === undefined) return await reply.code(404).send(notFound)
      return reply.header('etag', `"${book.version}"`).send(book)
    }
  )

  app.delete<{ Params: { id: number } }>(
    '/books/:id',
    {
      schema: { params: IdParams },
    },
    async (request, reply) =>
      (await store.remove(request.params.id)) ? reply.code(204).send() : reply.code(404).send(notFound)
  )

  app.post<{ Body: NewBook }>(
    '/books',
    {
      schema: { body: NewBook, response: { 201: Book } },
    },
    async (request, reply) => {
      const book = await store.insert(request.body)
      return sendTagged(reply.code(201).header('location', `/books/${book.id as number}`), book)
    }
  )

  app.patch<{ Params: { id: number }; Body: BookPatch }>(
    '/books/:id',
    {
      schema: { params: IdParams, body: BookPatch, response: { 200: Book } },
    },
    async (request, reply) => {
      const book = await store.patch(request.params.id, request.body)
      return book === undefined ? await reply.code(404).send(notFound) : sendTagged(reply, book)
    }
  )

  const patchWhere = store.patchWhere?.bind(store)
  if (patchWhere !== undefined) {
    app.patch<{ Querystring: { author_id: number }; Body: BookPatch }>(
      '/books',
      {
        schema: { querystring: AuthorFilter, body: BookPatch, response: { 200: Affected } },
      },
      async (request) => ({ affected: await patchWhere(request.query.author_id, request.body) })
    )
  }

  app.get<{ Querystring: PageQuery }>(
    '/books-full',
    {
      schema: { querystring: PageQuery, response: { 200: Type.Array(BookWithRelations) } },
    },
    async (request) => await store.withRelations(request.query)
  )

  const aggregate = store.aggregate?.bind(store)
  if (aggregate !== undefined) {
    app.get<{ Querystring: Static<typeof AggregateQuery> }>(
      '/books-aggregate/aggregate',
      { schema: { querystring: AggregateQuery, response: { 200: Type.Array(YearGroup) } } },
      async (request) => await aggregate(request.query.author_id)
    )
  }

  const naive = store.withRelationsNaive?.bind(store)
  if (naive !== undefined) {
    app.get<{ Querystring: PageQuery }>(
      '/books-n1',
      {
        schema: { querystring: PageQuery, response: { 200: Type.Array(BookWithRelations) } },
      },
      async (request) => await naive(request.query)
    )
  }

  app.addHook('onClose', async () => {
    await store.close()
  })
}
