// Type tests of issue 13 (precise types at the edges): `npm run test:types` compiles this file. Every
// expected-error line below must be an error; every other line must compile.
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { FastifyReply } from 'fastify'
import type { Generated, Kysely } from 'kysely'
import { expectTypeOf } from 'expect-type'
import { createDatabase, createViewset, Viewset } from 'fastify-viewsets'
import type { CreateRequest, ElementRequest, IdOf, ListRequest, UpdateRequest, ViewsetToken } from 'fastify-viewsets'

interface DB {
  items: { id: Generated<number>; name: string; price: number; owner: string }
  books: { id: Generated<number>; title: string; author_id: number }
  authors: { id: Generated<number>; name: string }
  codes: { code: string; label: string | null }
}
const db: Kysely<DB> = createDatabase<DB>('sqlite::memory:')

// `owner` is a column outside the schema, required by the table: a handler must supply it.
const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  price: Type.Number(),
})
type Item = Static<typeof Item>
void Item
const Code = Type.Object({ code: Type.String(), label: Type.Union([Type.String(), Type.Null()]) })
const Author = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer()),
  title: Type.String(),
  author_id: Type.Integer(),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
})
const WithColour = Type.Object({ id: Type.Optional(Type.Integer()), name: Type.String(), colour: Type.String() })

// ---- handlers return the schema's rows -----------------------------------------------------------
class Items extends Viewset<DB, 'items', typeof Item> {
  override async list () {
    return await this.query().execute() // the rows this.query() returns
  }

  override async getElement (request: ElementRequest<typeof Item>) {
    return (await this.findById(request.params.id)) ?? this.notFound(request.params.id)
  }

  override async createElement (request: CreateRequest<typeof Item>, _reply: FastifyReply, token: ViewsetToken | null) {
    // writable(): a pick of Insertable; spread with the table's other required column, insert takes it
    return await this.insert({ ...this.writable(request.body), owner: token?.sub ?? 'nobody' })
  }

  override async updateElement (request: UpdateRequest<typeof Item>) {
    return (await this.update(request.params.id, this.writable(request.body))) ?? this.notFound(request.params.id)
  }
}
void Items

class WrongGet extends Viewset<DB, 'items', typeof Item> {
  // @ts-expect-error getElement returns a row of the schema, not a string
  override async getElement () {
    return 'not a row'
  }
}
void WrongGet

class WrongList extends Viewset<DB, 'items', typeof Item> {
  // @ts-expect-error list returns rows of the schema
  override async list () {
    return [{ title: 'x' }]
  }
}
void WrongList

class WrongCreate extends Viewset<DB, 'items', typeof Item> {
  // @ts-expect-error createElement returns the row (POST answers it with 201 and Location)
  override async createElement () {
    return undefined
  }
}
void WrongCreate

// ---- ids have the key's type ---------------------------------------------------------------------
expectTypeOf<IdOf<typeof Item>>().toEqualTypeOf<number>()
expectTypeOf<ElementRequest<typeof Item>['params']['id']>().toEqualTypeOf<number>()
expectTypeOf<UpdateRequest<typeof Item>['params']['id']>().toEqualTypeOf<number>()
// a bare ElementRequest still compiles, with the path's string or number
expectTypeOf<ElementRequest['params']['id']>().toEqualTypeOf<string | number>()
class Ids extends Viewset<DB, 'items', typeof Item> {
  async ids (): Promise<void> {
    await this.findById(1)
    await this.deleteById(1)
    // @ts-expect-error the key of items is a number
    await this.findById('1')
    // @ts-expect-error the key of items is a number
    await this.deleteById('1')
    // @ts-expect-error the key of items is a number
    await this.update('1', { name: 'x' })
  }

  override async getElement (request: ElementRequest) {
    // a bare ElementRequest still compiles as an override's parameter
    return await super.getElement(request, undefined as never, null)
  }
}
void Ids

// ---- insert and update take the table's Insertable and Updateable ----------------------------------
class Writes extends Viewset<DB, 'items', typeof Item> {
  async writes (body: Item, patch: Partial<Item>): Promise<void> {
    await this.insert({ name: 'x', price: 1, owner: 'me' })
    await this.update(1, { price: 2 })
    // @ts-expect-error colour is not a column of items
    await this.insert({ name: 'x', price: 1, owner: 'me', colour: 1 })
    // @ts-expect-error name is a string
    await this.update(1, { name: 1 })
    // @ts-expect-error owner is required by the table and is not a field of the schema
    await this.insert(this.writable(body))
    // a PATCH body: a pick of Updateable, every field optional
    expectTypeOf(this.writable(patch)).toEqualTypeOf<{ id?: number; name?: string; price?: number }>()
    await this.update(1, this.writable(patch))
    // @ts-expect-error a PATCH body lacks the required columns of an insert
    await this.insert({ ...this.writable(patch), owner: 'me' })
  }
}
void Writes

// ---- POST's body requires what the schema requires; PATCH's does not -----------------------------
expectTypeOf<CreateRequest<typeof Item>['body']>().toEqualTypeOf<Item>()
// @ts-expect-error name and price are required in a POST body
const emptyPost: CreateRequest<typeof Item>['body'] = {}
void emptyPost
const emptyPatch: UpdateRequest<typeof Item>['body'] = {}
void emptyPatch

// ---- ViewsetToken: without a declared @fastify/jwt user, any claims with sub a string -------------
expectTypeOf<ViewsetToken['sub']>().toEqualTypeOf<string | undefined>()
// @ts-expect-error sub is a string when present
const subject: number | undefined = ({} as ViewsetToken).sub
void subject

// ---- LIST's query: ListRequest<typeof listQuery> is the validated query ---------------------------
const StockQuery = Type.Object({ in_stock: Type.Optional(Type.Boolean()), min_price: Type.Optional(Type.Number()) })
expectTypeOf<ListRequest<typeof StockQuery>['query']>().toEqualTypeOf<{
  limit: number
  offset: number
  in_stock?: boolean
  min_price?: number
}>()
// @ts-expect-error nothing else is in the query
void ({} as ListRequest<typeof StockQuery>['query']).search
interface SearchQuery {
  limit: number
  offset: number
  search?: string
}
class Lists extends Viewset<DB, 'items', typeof Item> {
  static override listQuery = StockQuery
  override async list (request: ListRequest<typeof StockQuery>) {
    expectTypeOf(request.query.limit).toEqualTypeOf<number>()
    let query = this.query().limit(request.query.limit).offset(request.query.offset)
    if (request.query.min_price !== undefined) query = query.where('price', '>=', request.query.min_price)
    return await query.execute()
  }
}
void Lists
// an interface and a type literal still compile as an override's parameter
class InterfaceList extends Viewset<DB, 'items', typeof Item> {
  override async list (request: ListRequest<SearchQuery>) {
    return await this.query().limit(request.query.limit).execute()
  }
}
class LiteralList extends Viewset<DB, 'items', typeof Item> {
  override async list (request: ListRequest<{ limit: number; offset: number }>) {
    return await this.query().limit(request.query.limit).execute()
  }
}
void InterfaceList
void LiteralList

// ---- a subclass's constructor is checked like createViewset ---------------------------------------
class Books extends Viewset<DB, 'books', typeof Book> {}
// @ts-expect-error a subclass declared with a schema field that is not a column fails where it is declared
class Coloured extends Viewset<DB, 'items', typeof WithColour> {}
class Codes extends Viewset<DB, 'codes', typeof Code> {}
createViewset({
  db,
  table: 'books',
  schema: Book,
  relatedConfig: { selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } } },
})
void new Books({
  db,
  table: 'books',
  schema: Book,
  relatedConfig: { selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } } },
})
void new Codes({ db, table: 'codes', schema: Code, primaryKey: 'code' })
// @ts-expect-error 'colour' is not a column of items: createViewset refuses it
createViewset({ db, table: 'items', schema: WithColour })
// @ts-expect-error and so does the subclass's constructor
void new Coloured({ db, table: 'items', schema: WithColour })
// @ts-expect-error the subclass checks the table name too
void new Codes({ db, table: 'items', schema: Code })
// @ts-expect-error and the options: primaryKey is a field of the schema
void new Codes({ db, table: 'codes', schema: Code, primaryKey: 'id' })
