// Type tests of issue 16 (related queries): `npm run test:types` compiles this file; each @ts-expect-error must be an
// error.
import { Type } from '@sinclair/typebox'
import type { Generated, Kysely } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'

interface DB {
  authors: { id: Generated<number>; name: string }
  books: { id: Generated<number>; title: string; author_id: number }
}
const db: Kysely<DB> = createDatabase<DB>('sqlite::memory:')

const Author = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer()),
  title: Type.String(),
  author_id: Type.Integer(),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
})
const relatedConfig = { selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } } } as const

// dotted paths through a relation field compile in filterFields, orderingFields and searchFields (checked at
// registration)
createViewset({
  db,
  table: 'books',
  schema: Book,
  relatedConfig,
  filterFields: { title: ['contains'], 'author.name': ['eq', 'contains'] },
  orderingFields: ['title', 'author.name'],
  searchFields: ['title', 'author.name'],
  defaultRelations: ['author'],
})

// a count of a to-many relation is a path too (`tags.count`: checked at registration to be a prefetchRelated one)
const Tagged = Type.Object({ id: Type.Integer(), title: Type.String(), tags: Type.Optional(Type.Array(Author)) })
createViewset({
  db,
  table: 'books',
  schema: Tagged,
  relatedConfig: { prefetchRelated: { tags: { table: 'authors', foreignKey: 'id' } } },
  filterFields: { 'tags.count': ['gte', 'in'] },
  orderingFields: ['tags.count'],
})

// @ts-expect-error a path starts with a relation field: `title` holds no object
createViewset({ db, table: 'books', schema: Book, relatedConfig, filterFields: { 'title.length': ['eq'] } })

// @ts-expect-error a path starts with a field of the schema
createViewset({ db, table: 'books', schema: Book, relatedConfig, orderingFields: ['writer.name'] })

// @ts-expect-error operators are still the fixed set
createViewset({ db, table: 'books', schema: Book, relatedConfig, filterFields: { 'author.name': ['like'] } })

// @ts-expect-error defaultRelations names fields of the schema
createViewset({ db, table: 'books', schema: Book, relatedConfig, defaultRelations: ['publisher'] })
