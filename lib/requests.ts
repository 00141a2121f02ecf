import type { Static, TObject, TReadonly, TSchema } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'

// The request types the overridable handlers receive, each named for its method: what a subclass writes in
// its override's signature.

/**
 * Path parameters of the element routes, when the schema is not named (`ElementRequest`).
 *
 * @example
 * ```ts
 * const id: IdParams['id'] = request.params.id // string | number
 * ```
 */
export interface IdParams {
  id: string | number
}

/**
 * The key's columns, as a viewset's type may declare them (its fifth type argument, `Viewset<DB, 'book_tags', typeof
 * BookTag, RelatedConfig<DB>, ['book_id', 'tag_id']>`): schema fields in the key's order. Declared, the key's value
 * is typed exactly (`IdOf`, `KeyOf`); it must be the key the viewset is served by (the `primaryKey` option, or the
 * table's own), which the type cannot check.
 *
 * @example
 * ```ts
 * const key: KeyFields<typeof BookTag> = ['book_id', 'tag_id']
 * ```
 */
export type KeyFields<S extends TObject> = readonly [keyof Static<S> & string, ...Array<keyof Static<S> & string>]

/** The value of one key column: the field's type, never absent. */
type KeyPart<S extends TObject, C> = C extends keyof Static<S> ? Exclude<Static<S>[C], undefined | null> : never

/**
 * The type of a row's key, as the validated path parameter holds it (`request.params.id`). With the key's columns
 * declared (`K`): the column's type for one column, the parts' tuple in key order for several (`[number, number]`).
 * Else the type of the schema's `id` field (a number for an integer key), or `string | number` when the schema has
 * no `id` (a `primaryKey` of another name, or a composite key's parts read as an array at run time).
 *
 * @example
 * ```ts
 * const Item = Type.Object({ id: Type.Integer(), name: Type.String() })
 * type ItemId = IdOf<typeof Item> // number
 * type BookTagId = IdOf<typeof BookTag, ['book_id', 'tag_id']> // [number, number]
 * ```
 */
export type IdOf<S extends TObject, K extends KeyFields<S> | undefined = undefined> =
  K extends readonly [infer Only] ? KeyPart<S, Only>
    : K extends KeyFields<S> ? { -readonly [I in keyof K]: KeyPart<S, K[I]> }
      : 'id' extends keyof Static<S>
        ? Exclude<Static<S>['id'], undefined | null>
        : IdParams['id']

/**
 * A key as the helpers take it (`findById`, `update`, `deleteById`, `purgeById`): its value as {@link IdOf} types it,
 * or an object of the key's columns (`{ book_id: 1, tag_id: 2 }`). With the columns declared (`K`), or a schema `id`
 * field that is the key, both are exact; else a composite key's parts are any array and the object any of the schema's
 * fields. A shape that is not the key's (a part missing, a column not of the key) throws a TypeError when called.
 *
 * @example
 * ```ts
 * const key: KeyOf<typeof BookTag, ['book_id', 'tag_id']> = { book_id: 1, tag_id: 2 } // or [1, 2]
 * ```
 */
export type KeyOf<S extends TObject, K extends KeyFields<S> | undefined = undefined> = K extends KeyFields<S>
  ? IdOf<S, K> | { readonly [C in K[number]]: KeyPart<S, C> }
  : 'id' extends keyof Static<S>
    ? IdOf<S> | { readonly id: IdOf<S> }
    : IdOf<S> | ReadonlyArray<string | number> | { readonly [C in keyof Static<S>]?: KeyPart<S, C> }

/**
 * The parameters of LIST every query string has, after validation (their defaults filled in). Also
 * exported as `Pagination`, its former name.
 *
 * @example
 * ```ts
 * const { limit, offset }: PageParameters = request.query
 * ```
 */
export interface PageParameters {
  limit: number
  offset: number
}

/**
 * A LIST query string after validation: `limit` and `offset`, then the fields of `listQuery`.
 *
 * @example
 * ```ts
 * type StockQuery = ValidatedListQuery<typeof StockQuery> // { limit: number, offset: number, inStock?: boolean }
 * ```
 */
export type ValidatedListQuery<Q extends TObject> = {
  [K in keyof (PageParameters & Omit<Static<Q>, keyof PageParameters>)]: (PageParameters &
    Omit<Static<Q>, keyof PageParameters>)[K]
}

/**
 * The request of LIST. `ListRequest<typeof listQuery>` (a TypeBox object) types `request.query` as the
 * validated query: `limit: number`, `offset: number` and the schema's fields. A type literal or an
 * interface is taken as the query's type as written.
 *
 * @example
 * ```ts
 * override async list (request: ListRequest<typeof StockQuery>) {
 *   return await this.query().limit(request.query.limit).execute()
 * }
 * ```
 */
export type ListRequest<Query = Record<string, unknown>> = FastifyRequest<{
  Querystring: Query extends TObject ? ValidatedListQuery<Query> : Query
}>

/**
 * The request of GET and DELETE; `ElementRequest<typeof Item>` types `params.id` as the key's type (a composite key's
 * parts with its columns declared: `ElementRequest<typeof BookTag, ['book_id', 'tag_id']>`).
 *
 * @example
 * ```ts
 * override async getElement (request: ElementRequest<typeof Item>) {
 *   return (await this.findById(request.params.id)) ?? this.notFound(request.params.id)
 * }
 * ```
 */
export type ElementRequest<
  S extends TObject | undefined = undefined,
  K extends readonly string[] | undefined = undefined
> = FastifyRequest<{
  Params: { id: S extends TObject ? (K extends KeyFields<S> | undefined ? IdOf<S, K> : never) : IdParams['id'] }
}>

/**
 * The request of POST: the body has every field the schema requires.
 *
 * @example
 * ```ts
 * override async createElement (request: CreateRequest<typeof Item>) {
 *   return await this.insert({ ...this.writable(request.body), owner: 'me' })
 * }
 * ```
 */
export type CreateRequest<S extends TObject> = FastifyRequest<{ Body: Static<S> }>

/**
 * The request of BULK (`POST /bulk`): an array of POST bodies.
 *
 * @example
 * ```ts
 * override async createElements (request: CreateManyRequest<typeof Item>) {
 *   return await Promise.all(request.body.map(async (body) => await this.insert(this.writable(body))))
 * }
 * ```
 */
export type CreateManyRequest<S extends TObject> = FastifyRequest<{ Body: Array<Static<S>> }>

/**
 * The request of PUT and PATCH: `params.id` has the key's type (with `K`, a composite key's parts, as
 * `ElementRequest`'s); PATCH may send any subset of the fields.
 *
 * @example
 * ```ts
 * override async updateElement (request: UpdateRequest<typeof Item>) {
 *   return (await this.update(request.params.id, this.writable(request.body))) ?? this.notFound(request.params.id)
 * }
 * ```
 */
export type UpdateRequest<S extends TObject, K extends KeyFields<S> | undefined = undefined> = FastifyRequest<{
  Params: { id: IdOf<S, K> }
  Body: Partial<Static<S>>
}>

/** The fields of a schema marked `Type.Readonly` (or `Type.ReadonlyOptional`): a client never writes them. */
export type ReadonlyFields<S extends TObject> = {
  [K in keyof S['properties']]: S['properties'][K] extends TReadonly<TSchema> ? K : never
}[keyof S['properties']]

/**
 * The columns of a table a schema's writable fields write: what `writable()` returns, for POST (Insertable)
 * or PATCH (Updateable). Fields marked `Type.Readonly` are left out, as `writable()` leaves them out.
 */
export type WritableOf<Values, S extends TObject> = Pick<
  Values,
  Exclude<keyof Static<S> & keyof Values, ReadonlyFields<S>>
>
