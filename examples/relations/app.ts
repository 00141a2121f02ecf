import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Generated } from 'kysely'
import { createViewset, viewsetDocs } from 'fastify-viewsets'
import { exampleApp } from '../shared.js'
import type { BuildOptions } from '../shared.js'
import { migrate } from './migrations.js'

// ---- the related rows, as they appear inside other resources --------------------------------

export const Publisher = Type.Object({ id: Type.Integer(), name: Type.String() })
export const Author = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  country: Type.Union([Type.String(), Type.Null()]),
})
export const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })

// ---- the resources ----------------------------------------------------------------------------

/** A book with its author (many-to-one), its publisher (many-to-one) and its tags (many-to-many). */
export const Book = Type.Object(
  {
    id: Type.Optional(Type.Integer({ readOnly: true })),
    title: Type.String({ minLength: 1, maxLength: 255 }),
    year: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    author_id: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    publisher_id: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    author: Type.Optional(Type.Union([Author, Type.Null()])),
    publisher: Type.Optional(Type.Union([Publisher, Type.Null()])),
    tags: Type.Optional(Type.Array(Tag)),
  },
  { description: 'A book; author, publisher and tags are read-only and loaded in batches' }
)
export type Book = Static<typeof Book>

/** A book as listed under its author: the next level loads its publisher and tags. */
export const AuthorBook = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  year: Type.Union([Type.Integer(), Type.Null()]),
  publisher: Type.Optional(Type.Union([Publisher, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})

/** An author with their books (one-to-many), each with its publisher and tags (nested). */
export const AuthorWithBooks = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  country: Type.Optional(Type.Union([Type.String({ minLength: 2, maxLength: 2 }), Type.Null()])),
  books: Type.Optional(Type.Array(AuthorBook)),
})

const BookSummary = Type.Object({ id: Type.Integer(), title: Type.String() })

/**
 * A tag with its books: the same join table, read the other way. The config travels with the schema.
 * (`Type.Object({...}, { relatedConfig })` works too; `Object.assign` also lets the type checker see it.)
 */
export const TagWithBooks = Object.assign(
  Type.Object({
    id: Type.Optional(Type.Integer({ readOnly: true })),
    name: Type.String({ minLength: 1, maxLength: 64 }),
    books: Type.Optional(Type.Array(BookSummary)),
  }),
  {
    relatedConfig: {
      prefetchRelated: {
        books: {
          table: 'books',
          through: { table: 'book_tags', sourceKey: 'tag_id', targetKey: 'book_id' },
          orderBy: 'title',
        },
      },
    },
  } as const
)

/** A publisher with its catalogue, newest first. */
export const PublisherWithBooks = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  books: Type.Optional(Type.Array(BookSummary)),
})

export interface DB {
  publishers: { id: Generated<number>; name: string }
  authors: { id: Generated<number>; name: string; country: string | null }
  tags: { id: Generated<number>; name: string }
  books: {
    id: Generated<number>
    title: string
    year: number | null
    author_id: number | null
    publisher_id: number | null
  }
  book_tags: { book_id: number; tag_id: number }
}

/** Builds the example app without listening, so tests can inject requests into it. */
export async function build (options: BuildOptions<DB> = {}): Promise<FastifyInstance> {
  const { app, db } = await exampleApp(options, migrate)
  await app.register(viewsetDocs, { title: 'Library API', version: '1.0.0' })

  await app.register(
    createViewset({
      db,
      table: 'books',
      schema: Book,
      tags: ['books'],
      relatedConfig: {
        selectRelated: {
          author: { table: 'authors', foreignKey: 'author_id' }, // books.author_id → authors.id
          publisher: { table: 'publishers', foreignKey: 'publisher_id' },
        },
        prefetchRelated: {
          tags: {
            table: 'tags',
            through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' },
            orderBy: 'name',
          },
        },
      },
    }),
    { prefix: '/books' }
  )

  await app.register(
    createViewset({
      db,
      table: 'authors',
      schema: AuthorWithBooks,
      tags: ['authors'],
      relatedConfig: {
        prefetchRelated: {
          books: {
            table: 'books',
            foreignKey: 'author_id', // authors.id ← books.author_id
            orderBy: 'year',
            relatedConfig: {
              selectRelated: { publisher: { table: 'publishers', foreignKey: 'publisher_id' } },
              prefetchRelated: {
                tags: {
                  table: 'tags',
                  through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' },
                  orderBy: 'name',
                },
              },
            },
          },
        },
      },
    }),
    { prefix: '/authors' }
  )

  await app.register(createViewset({ db, table: 'tags', schema: TagWithBooks, tags: ['tags'] }), { prefix: '/tags' })

  await app.register(
    createViewset({
      db,
      table: 'publishers',
      schema: PublisherWithBooks,
      tags: ['publishers'],
      relatedConfig: {
        prefetchRelated: { books: { table: 'books', foreignKey: 'publisher_id', orderBy: ['-year', 'title'] } },
      },
    }),
    { prefix: '/publishers' }
  )
  return app
}
