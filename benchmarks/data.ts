import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Generated } from 'kysely'

// The benchmark's data set, shared by every system: authors (10,000 parents), books (20,000 children),
// tags and the book_tags join table for the eager-loading scenario, and versioned_books (the books again,
// with a version column) for the cost of the ETag on GET.

export const sizes = { authors: 10_000, books: 20_000, tags: 50, tagsPerBook: 2 } as const

/** The column list every system serves for a book, in one order. */
export const bookColumns = ['id', 'author_id', 'title', 'year', 'price'] as const

export const Author = Type.Object({
  id: Type.Integer({ readOnly: true }),
  name: Type.String({ maxLength: 200 }),
  email: Type.String({ maxLength: 200 }),
})
export type Author = Static<typeof Author>

export const Tag = Type.Object({
  id: Type.Integer({ readOnly: true }),
  name: Type.String({ maxLength: 100 }),
})
export type Tag = Static<typeof Tag>

/** A book as every system serves it: the same schema validates bodies and serializes responses. */
export const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  author_id: Type.Integer({ minimum: 1 }),
  title: Type.String({ minLength: 1, maxLength: 200 }),
  year: Type.Integer({ minimum: 0, maximum: 3000 }),
  price: Type.Number({ minimum: 0 }),
})
export type Book = Static<typeof Book>

/** A book of the `versioned_books` table (a copy of `books`): its `version` column is the ETag, so GET hashes nothing.
 * */
export const VersionedBook = Type.Object({
  ...Book.properties,
  version: Type.Integer({ readOnly: true }),
})
export type VersionedBook = Static<typeof VersionedBook>

/** A book with its author and tags, for the eager-loading scenario. */
export const BookWithRelations = Type.Object({
  ...Book.properties,
  author: Type.Optional(Type.Union([Author, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
export type BookWithRelations = Static<typeof BookWithRelations>

/** The Kysely view of the benchmark tables. */
export interface BenchDB {
  authors: { id: Generated<number>; name: string; email: string }
  books: { id: Generated<number>; author_id: number; title: string; year: number; price: number }
  tags: { id: Generated<number>; name: string }
  book_tags: { book_id: number; tag_id: number }
  versioned_books: {
    id: Generated<number>
    author_id: number
    title: string
    year: number
    price: number
    version: Generated<number>
  }
}

/** The prefix of the PostgreSQL databases that hold the benchmark tables. */
export const postgresDatabasePrefix = 'fastify_viewsets_bench_'

/**
 * The PostgreSQL database of this run, created and dropped by it. One per runner process: several sessions
 * run `npm run bench` on one server, and a shared name let one run's `drop database … with (force)` cut
 * another's connections in the middle of its measurements.
 */
export const postgresDatabase = `${postgresDatabasePrefix}${process.pid}`

/** A small deterministic generator, so that every run seeds the same data and draws the same ids. */
export function random (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** An integer from 1 to `max`. */
export function pick (next: () => number, max: number): number {
  return 1 + Math.floor(next() * max)
}

export interface SeedRows {
  authors: Array<[number, string, string]>
  books: Array<[number, number, string, number, number]>
  tags: Array<[number, string]>
  bookTags: Array<[number, number]>
}

/** The rows of the seed, identical for every database. */
export function seedRows (): SeedRows {
  const next = random(42)
  const authors: SeedRows['authors'] = []
  for (let id = 1; id <= sizes.authors; id++) authors.push([id, `Author ${id}`, `author${id}@example.com`])
  const books: SeedRows['books'] = []
  for (let id = 1; id <= sizes.books; id++) {
    books.push([
      id,
      pick(next, sizes.authors),
      `Book ${id}`,
      1950 + Math.floor(next() * 75),
      Math.round(next() * 10_000) / 100,
    ])
  }
  const tags: SeedRows['tags'] = []
  for (let id = 1; id <= sizes.tags; id++) tags.push([id, `tag-${id}`])
  const bookTags: SeedRows['bookTags'] = []
  for (let book = 1; book <= sizes.books; book++) {
    const first = pick(next, sizes.tags)
    // A second tag that differs from the first: shift by 1 to tags - 1, wrapping around.
    const second = ((first - 1 + pick(next, sizes.tags - 1)) % sizes.tags) + 1
    bookTags.push([book, first], [book, second])
  }
  return { authors, books, tags, bookTags }
}
