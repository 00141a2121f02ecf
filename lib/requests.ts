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
 * The type of a schema's primary key `id`, as the validated path parameter holds it (a number for an
 * integer key). `string | number` when the schema has no `id` field (a `primaryKey` of another name).
 *
 * @example
 * ```ts
 * const Item = Type.Object({ id: Type.Integer(), name: Type.String() })
 * type ItemId = IdOf<typeof Item> // number
 * ```
 */
export type IdOf<S extends TObject> = 'id' extends keyof Static<S>
  ? Exclude<Static<S>['id'], undefined | null>
  : IdParams['id']

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
 * The request of GET and DELETE; `ElementRequest<typeof Item>` types `params.id` as the key's type.
 *
 * @example
 * ```ts
 * override async getElement (request: ElementRequest<typeof Item>) {
 *   return (await this.findById(request.params.id)) ?? this.notFound(request.params.id)
 * }
 * ```
 */
export type ElementRequest<S extends TObject | undefined = undefined> = FastifyRequest<{
  Params: { id: S extends TObject ? IdOf<S> : IdParams['id'] }
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
 * The request of PUT and PATCH: `params.id` has the key's type; PATCH may send any subset of the fields.
 *
 * @example
 * ```ts
 * override async updateElement (request: UpdateRequest<typeof Item>) {
 *   return (await this.update(request.params.id, this.writable(request.body))) ?? this.notFound(request.params.id)
 * }
 * ```
 */
export type UpdateRequest<S extends TObject> = FastifyRequest<{ Params: { id: IdOf<S> }; Body: Partial<Static<S>> }>

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
