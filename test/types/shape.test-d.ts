// Type tests of issue 33 (shape), item 9: `npm run test:types` compiles this file. Every expected-error line
// below must be an error; every other line must compile.
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { FastifyReply } from 'fastify'
import type { Generated, Kysely } from 'kysely'
import { expectTypeOf } from 'expect-type'
import { createDatabase, createViewset, Viewset } from 'fastify-viewsets'
import type { CreateRequest, IdOf, PageParameters, Pagination, UpdateRequest } from 'fastify-viewsets'

interface DB {
  items: { id: Generated<number>; name: string; price: number }
  books: { id: Generated<number>; title: string; author_id: number }
  codes: { code: string; label: string }
}
const db: Kysely<DB> = createDatabase<DB>('sqlite::memory:')

const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  price: Type.Number(),
})
const WithColour = Type.Object({ id: Type.Optional(Type.Integer()), name: Type.String(), colour: Type.String() })
const Code = Type.Object({ code: Type.String(), label: Type.String() })
// author_id is required by the table and read-only in the schema: the server sets it.
const Book = Type.Object({
  id: Type.Optional(Type.Readonly(Type.Integer())),
  title: Type.String(),
  author_id: Type.Readonly(Type.Integer()),
})
void Code
void Book

// ---- params.id of the base class's handlers is the key's type ------------------------------------
type GetRequest = Parameters<Viewset<DB, 'items', typeof Item>['getElement']>[0]
expectTypeOf<GetRequest['params']['id']>().toEqualTypeOf<number>()
expectTypeOf<GetRequest['params']['id']>().toEqualTypeOf<IdOf<typeof Item>>()
type DeleteRequest = Parameters<Viewset<DB, 'items', typeof Item>['deleteElement']>[0]
expectTypeOf<DeleteRequest['params']['id']>().toEqualTypeOf<number>()
// Without an `id` field the key's type is not known to the schema type.
expectTypeOf<IdOf<typeof Code>>().toEqualTypeOf<string | number>()
type PatchRequest = Parameters<Viewset<DB, 'items', typeof Item>['updateElement']>[0]
expectTypeOf<PatchRequest['params']['id']>().toEqualTypeOf<number>()
// @ts-expect-error the key of items is a number, not a string
expectTypeOf<GetRequest['params']['id']>().toEqualTypeOf<string | number>()

// ---- a schema field that is neither a column nor a relation fails, however the viewset is made -----
void new Viewset({ db, table: 'items', schema: Item })
createViewset({ db, table: 'items', schema: Item })
class Items extends Viewset<DB, 'items', typeof Item> {}
void new Items({ db, table: 'items', schema: Item })
// @ts-expect-error 'colour' is not a column of items
void new Viewset({ db, table: 'items', schema: WithColour })
// @ts-expect-error createViewset refuses it too
createViewset({ db, table: 'items', schema: WithColour })
// @ts-expect-error and so does a subclass's declaration
class Paint extends Viewset<DB, 'items', typeof WithColour> {}
void Paint

// ---- writable() leaves out the schema's read-only (Type.Readonly) fields ------------------------
class Books extends Viewset<DB, 'books', typeof Book> {
  override async createElement (request: CreateRequest<typeof Book>, _reply: FastifyReply) {
    expectTypeOf(this.writable(request.body)).toEqualTypeOf<{ title: string }>()
    // The server supplies the read-only column the table requires: this compiles.
    return await this.insert({ ...this.writable(request.body), author_id: 1 })
  }

  override async updateElement (request: UpdateRequest<typeof Book>, _reply: FastifyReply) {
    expectTypeOf(this.writable(request.body)).toEqualTypeOf<{ title?: string }>()
    return (await this.update(request.params.id, this.writable(request.body))) ?? this.notFound(request.params.id)
  }

  async forgetsTheAuthor (body: Static<typeof Book>) {
    // @ts-expect-error author_id is read-only, so writable() drops it, and the table requires it
    return await this.insert(this.writable(body))
  }
}
void Books

// ---- Pagination stays the public name of the page parameters ------------------------------------
expectTypeOf<Pagination>().toEqualTypeOf<PageParameters>()
expectTypeOf<PageParameters>().toEqualTypeOf<{ limit: number; offset: number }>()
