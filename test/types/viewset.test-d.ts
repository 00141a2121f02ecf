// Type tests: `npm run test:types` compiles this file. Each @ts-expect-error must be an error,
// so a wrong table or field that compiled would fail the run.
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import type { Generated, Kysely } from 'kysely'
import { expectTypeOf } from 'expect-type'
import { createDatabase, createViewset, Viewset, ViewsetErrors } from 'fastify-viewsets'
import type { ListRequest, ViewsetToken } from 'fastify-viewsets'

interface DB {
  items: { id: Generated<number>; name: string; price: number }
  authors: { id: Generated<number>; name: string }
  books: { id: Generated<number>; title: string; author_id: number }
}
const db: Kysely<DB> = createDatabase<DB>('sqlite::memory:')

const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
const Author = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer()),
  title: Type.String(),
  author_id: Type.Integer(),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
})
const WithColour = Type.Object({ id: Type.Optional(Type.Integer()), name: Type.String(), colour: Type.String() })

// a table of DB and a schema of its columns compile, and the result is a Fastify plugin
expectTypeOf(createViewset({ db, table: 'items', schema: Item })).toEqualTypeOf<FastifyPluginAsync>()

// @ts-expect-error 'orders' is not a table of DB
createViewset({ db, table: 'orders', schema: Item })

// @ts-expect-error 'colour' is not a column of items
createViewset({ db, table: 'items', schema: WithColour })

// @ts-expect-error 'author' is neither a column of books nor a declared relation
createViewset({ db, table: 'books', schema: Book })

// a relation field declared in relatedConfig is allowed
createViewset({
  db,
  table: 'books',
  schema: Book,
  relatedConfig: { selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } } },
})

createViewset({
  db,
  table: 'books',
  schema: Book,
  // @ts-expect-error a relation must name a table of DB
  relatedConfig: { selectRelated: { author: { table: 'writers', foreignKey: 'author_id' } } },
})

// @ts-expect-error primaryKey must be a field of the schema
createViewset({ db, table: 'items', schema: Item, primaryKey: 'uuid' })

// a composite key: its columns in key order, each a field of the schema
createViewset({ db, table: 'items', schema: Item, primaryKey: ['id', 'name'] })

// @ts-expect-error every column of a composite key must be a field of the schema
createViewset({ db, table: 'items', schema: Item, primaryKey: ['id', 'uuid'] })

// @ts-expect-error a composite key has at least one column
createViewset({ db, table: 'items', schema: Item, primaryKey: [] })

// @ts-expect-error methods are LIST GET POST PUT PATCH DELETE
createViewset({ db, table: 'items', schema: Item, methods: ['FETCH'] })

// the bulk writes are methods too (issue 38), and maxAffected bounds the ones by filter
createViewset({ db, table: 'items', schema: Item, methods: ['PATCH_MANY', 'BULK_PATCH', 'DELETE_MANY'], maxAffected: 50 })
// @ts-expect-error maxAffected is a number of rows
createViewset({ db, table: 'items', schema: Item, maxAffected: 'all' })

// @ts-expect-error searchFields are schema fields
createViewset({ db, table: 'items', schema: Item, searchFields: ['title'] })

// fullText fields are schema fields (the index is checked against the catalog at startup)
createViewset({ db, table: 'items', schema: Item, fullText: { fields: ['name'], language: 'english' } })
// @ts-expect-error fullText fields are schema fields
createViewset({ db, table: 'items', schema: Item, fullText: { fields: ['title'] } })

// conflictFields are schema fields (the unique key is checked against the catalog at startup)
createViewset({ db, table: 'items', schema: Item, conflictFields: ['name'] })
// @ts-expect-error conflictFields are schema fields
createViewset({ db, table: 'items', schema: Item, conflictFields: ['email'] })

// @ts-expect-error filter operators are a fixed set
createViewset({ db, table: 'items', schema: Item, filterFields: { name: ['like'] } })

// the bounds of issue 12 are numbers; a prefetch relation's limit is a number or false
createViewset({ db, table: 'items', schema: Item, maxOffset: 1000, maxSearchLength: 50 })
const AuthorWithBooks = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  books: Type.Array(Type.Object({ id: Type.Integer(), title: Type.String() })),
})
createViewset({
  db,
  table: 'authors',
  schema: AuthorWithBooks,
  relatedConfig: { prefetchRelated: { books: { table: 'books', foreignKey: 'author_id', limit: 5 } } },
})
createViewset({
  db,
  table: 'authors',
  schema: AuthorWithBooks,
  relatedConfig: { prefetchRelated: { books: { table: 'books', foreignKey: 'author_id', limit: false } } },
})
createViewset({
  db,
  table: 'authors',
  schema: AuthorWithBooks,
  // @ts-expect-error limit is a number or false, never true
  relatedConfig: { prefetchRelated: { books: { table: 'books', foreignKey: 'author_id', limit: true } } },
})
// @ts-expect-error maxOffset is a number
createViewset({ db, table: 'items', schema: Item, maxOffset: '1000' })

class ItemViewset extends Viewset<DB, 'items', typeof Item> {
  override async list (
    request: ListRequest<{ limit: number; offset: number }>,
    _reply: FastifyReply,
    token: ViewsetToken | null
  ) {
    expectTypeOf(token).toEqualTypeOf<ViewsetToken | null>()
    expectTypeOf(request.query.limit).toEqualTypeOf<number>()
    const rows = await this.query().where('name', '=', 'x').limit(request.query.limit).execute()
    expectTypeOf(rows).toEqualTypeOf<Static<typeof Item>[]>()
    // @ts-expect-error the typed query builder knows the table's columns
    this.query().where('colour', '=', 'x')
    // The helpers without the row rule are typed as the scoped ones.
    expectTypeOf(await this.unscoped.query().execute()).toEqualTypeOf<Static<typeof Item>[]>()
    expectTypeOf(await this.unscoped.findById(1)).toEqualTypeOf<Static<typeof Item> | undefined>()
    expectTypeOf(await this.unscoped.deleteById(1)).toEqualTypeOf<boolean>()
    // @ts-expect-error so is their query builder
    this.unscoped.query().where('colour', '=', 'x')
    return rows
  }
}
expectTypeOf(new ItemViewset({ db, table: 'items', schema: Item }).register()).toEqualTypeOf<FastifyPluginAsync>()

// @ts-expect-error the class checks the table too
void new Viewset<DB, 'orders', typeof Item>({ db, table: 'orders', schema: Item })

const BookRow = Type.Object({ id: Type.Optional(Type.Integer()), title: Type.String(), author_id: Type.Integer() })
// `parent` binds a prefix parameter to a column of the table (issue 42, item 3)
createViewset({ db, table: 'books', schema: BookRow, parent: { authorId: 'author_id' } })
// @ts-expect-error 'writer_id' is not a column of books
createViewset({ db, table: 'books', schema: BookRow, parent: { authorId: 'writer_id' } })

// the answer helpers of custom routes take rows of the schema and answer the body to return
class BookViewset extends Viewset<DB, 'books', typeof BookRow> {
  async answer (reply: FastifyReply, row: Static<typeof BookRow>): Promise<string> {
    expectTypeOf(this.routeSchema('POST', { operationId: 'closeBook', precondition: true })).toBeObject()
    // @ts-expect-error a row of another schema
    await this.represent(reply, { name: 'x' })
    return await this.representList(reply, [row])
  }
}
void BookViewset

// idempotency (issue 38, item 5): true, or the table, createTable, retention and lease; nothing else
createViewset({ db, table: 'items', schema: Item, idempotency: true })
createViewset({ db, table: 'items', schema: Item, idempotency: { table: 'keys', createTable: true, retention: 60_000 } })
// @ts-expect-error a misspelt key of the option
createViewset({ db, table: 'items', schema: Item, idempotency: { tabel: 'keys' } })
// @ts-expect-error the lease is milliseconds, a number
createViewset({ db, table: 'items', schema: Item, idempotency: { lease: '1m' } })
expectTypeOf(new ViewsetErrors.IdempotencyKeyInUse().statusCode).toEqualTypeOf<409>()
expectTypeOf(new ViewsetErrors.IdempotencyKeyReused().code).toEqualTypeOf<'FST_VIEWSET_IDEMPOTENCY_KEY_REUSED'>()
