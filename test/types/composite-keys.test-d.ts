// Type tests of issue 39 (composite keys): with the key's columns declared as the viewset's fifth type argument, the
// helpers, `params.id` and `IdOf` know the key's shape, and a wrong one fails to compile. `npm run test:types`
// compiles this file. Every expected-error line below must be an error; every other line must compile.
import { Type } from '@sinclair/typebox'
import type { Kysely } from 'kysely'
import { expectTypeOf } from 'expect-type'
import { createDatabase, Viewset } from 'fastify-viewsets'
import type { ElementRequest, IdOf, KeyOf, RelatedConfig, UpdateRequest } from 'fastify-viewsets'

interface DB {
  book_tags: { book_id: number; tag_id: number; note: string | null }
  cells: { sheet: string; big: string; seq: number; value: string | null }
  items: { id: number; name: string }
}
const db: Kysely<DB> = createDatabase<DB>('sqlite::memory:')
void db

const Note = Type.Union([Type.String(), Type.Null()])
const BookTag = Type.Object({ book_id: Type.Integer(), tag_id: Type.Integer(), note: Note })
const Cell = Type.Object({ sheet: Type.String(), big: Type.String(), seq: Type.Integer(), value: Note })
const Item = Type.Object({ id: Type.Integer(), name: Type.String() })
type BookTagKey = ['book_id', 'tag_id']
void BookTag
void Cell
void Item

// ---- the key's value: its parts in order, or an object of its columns -------------------------------
expectTypeOf<IdOf<typeof BookTag, BookTagKey>>().toEqualTypeOf<[number, number]>()
expectTypeOf<IdOf<typeof Cell, ['sheet', 'big', 'seq']>>().toEqualTypeOf<[string, string, number]>()
expectTypeOf<IdOf<typeof Cell, ['sheet']>>().toEqualTypeOf<string>()
expectTypeOf<ElementRequest<typeof BookTag, BookTagKey>['params']['id']>().toEqualTypeOf<[number, number]>()
expectTypeOf<UpdateRequest<typeof BookTag, BookTagKey>['params']['id']>().toEqualTypeOf<[number, number]>()
const asObject: KeyOf<typeof BookTag, BookTagKey> = { book_id: 1, tag_id: 2 }
void asObject
// @ts-expect-error a column that is not the schema's is no key column
type _NotAField = IdOf<typeof BookTag, ['book_id', 'title']>
// the types without a declared key are as before
expectTypeOf<IdOf<typeof Item>>().toEqualTypeOf<number>()
expectTypeOf<ElementRequest<typeof Item>['params']['id']>().toEqualTypeOf<number>()

class BookTags extends Viewset<DB, 'book_tags', typeof BookTag, RelatedConfig<DB>, BookTagKey> {
  async keys (): Promise<void> {
    await this.findById([1, 2])
    await this.findById({ book_id: 1, tag_id: 2 })
    await this.update([1, 2], { note: 'x' })
    await this.deleteById({ tag_id: 2, book_id: 1 })
    await this.purgeById([1, 2])
    await this.unscoped.deleteById([1, 2])
    // @ts-expect-error a composite key is not one value
    await this.findById(1)
    // @ts-expect-error every part of the key
    await this.findById([1])
    // @ts-expect-error each part has its column's type
    await this.deleteById(['1', 2])
    // @ts-expect-error three parts for a two-part key
    await this.update([1, 2, 3], { note: 'x' })
    // @ts-expect-error every column of the key
    await this.findById({ book_id: 1 })
    // @ts-expect-error note is not a column of the key
    await this.purgeById({ book_id: 1, tag_id: 2, note: 'x' })
    // @ts-expect-error the unscoped helpers take the same key
    await this.unscoped.findById(1)
  }

  override async getElement (request: ElementRequest<typeof BookTag, BookTagKey>) {
    const [book, tag] = request.params.id
    expectTypeOf(book).toEqualTypeOf<number>()
    expectTypeOf(tag).toEqualTypeOf<number>()
    return (await this.findById(request.params.id)) ?? this.notFound(request.params.id)
  }
}
void BookTags

class Items extends Viewset<DB, 'items', typeof Item> {
  async keys (): Promise<void> {
    await this.findById(1)
    await this.findById({ id: 1 })
    await this.purgeById(1)
    // @ts-expect-error the key of items is a number
    await this.findById({ id: '1' })
    // @ts-expect-error name is not the key
    await this.deleteById({ name: 'x' })
  }
}
void Items
