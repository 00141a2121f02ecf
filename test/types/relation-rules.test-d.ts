// Type tests of issue 35 (rules across relations): `npm run test:types` compiles this file; each @ts-expect-error must
// be an error.
import { Type } from '@sinclair/typebox'
import type { Generated, Kysely } from 'kysely'
import { createDatabase, createViewset, Viewset } from 'fastify-viewsets'
import type { RelationRule } from 'fastify-viewsets'

interface DB {
  authors: { id: Generated<number>; name: string; owner: string }
  books: { id: Generated<number>; title: string; author_id: number }
}
const db: Kysely<DB> = createDatabase<DB>('sqlite::memory:')

const Author = Type.Object({ id: Type.Integer(), name: Type.String(), owner: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer()),
  title: Type.String(),
  author_id: Type.Integer(),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
})
const authors = new Viewset({ db, table: 'authors', schema: Author, scope: (eb, { token }) => eb('owner', '=', token?.sub ?? '') })

// rulesFrom: the viewset, its prefix, or a rule of its own
for (const rulesFrom of [authors, '/authors', { scope: (eb, { token }) => eb('owner', '=', token?.sub ?? '') }] satisfies Array<RelationRule<DB> | string>) {
  createViewset({
    db,
    table: 'books',
    schema: Book,
    relatedConfig: { selectRelated: { author: { table: 'authors', foreignKey: 'author_id', rulesFrom } } },
  })
}

createViewset({
  db,
  table: 'books',
  schema: Book,
  // @ts-expect-error: a rule is a viewset, a prefix or an object with a scope method
  relatedConfig: { selectRelated: { author: { table: 'authors', foreignKey: 'author_id', rulesFrom: 42 } } },
})
