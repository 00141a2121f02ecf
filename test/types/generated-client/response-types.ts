// Compiled by test/features/contract.test.ts next to the api.d.ts that openapi-typescript generates from
// examples/basic's document (issue 34, item 8): what the server always sends is typed as always there.
import type createClient from 'openapi-fetch'
import type { paths } from './api.js'

/** `true` when A and B are the same type. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
/** Compiles only when `T` is `true`. */
function expectTrue<T extends true> (): T | undefined {
  return undefined
}

type Json<R> = R extends { content: { 'application/json': infer Body } } ? Body : never
type Created = Json<paths['/items']['post']['responses'][201]>
type Merged = Json<paths['/items']['post']['responses'][200]>
type Replaced = Json<paths['/items/{id}']['put']['responses'][200]>
type Patched = Json<paths['/items/{id}']['patch']['responses'][200]>

// Every column of a whole row, nullable ones as `| null`, none of them `| undefined`.
expectTrue<Same<Created['price'], number>>()
expectTrue<Same<Created['id'], number>>()
expectTrue<Same<Created['description'], string | null>>()
expectTrue<Same<Created['created_at'], string>>()
expectTrue<Same<Merged['price'], number>>()
expectTrue<Same<Replaced['price'], number>>()
expectTrue<Same<Patched['price'], number>>()

// Conditional requests are typed header parameters.
type GetHeaders = NonNullable<paths['/items/{id}']['get']['parameters']['header']>
type PatchHeaders = NonNullable<paths['/items/{id}']['patch']['parameters']['header']>
expectTrue<Same<GetHeaders['if-none-match'], string | undefined>>()
expectTrue<Same<PatchHeaders['if-match'], string | undefined>>()

// A GET or LIST without `?fields=` answers `application/json`, typed as the whole row; a `?fields=` answer has a
// media type of its own, whose fields are optional.
type Listed = Json<paths['/items']['get']['responses'][200]>
type Got = Json<paths['/items/{id}']['get']['responses'][200]>
expectTrue<Same<Listed[number]['price'], number>>()
expectTrue<Same<Listed[number]['description'], string | null>>()
expectTrue<Same<Got['price'], number>>()
expectTrue<Same<Got['id'], number>>()
type PartialContent = paths['/items/{id}']['get']['responses'][200]['content']
type Chosen = PartialContent['application/json; profile="urn:fastify-viewsets:partial"']
expectTrue<Same<Chosen['price'], number | undefined>>()

// openapi-fetch with the JSON media types but the partial one (`${string}/${string}json` leaves out `…partial"`):
// the data of a read is the whole row, an error still the problem document.
declare const reader: ReturnType<typeof createClient<paths, `${string}/${string}json`>>
export async function readsWholeRows (): Promise<void> {
  const { data: page, error } = await reader.GET('/items')
  if (page !== undefined) expectTrue<Same<(typeof page)[number]['price'], number>>()
  if (error !== undefined) expectTrue<Same<typeof error.code, string>>()
  const { data: row } = await reader.GET('/items/{id}', { params: { path: { id: 1 } } })
  if (row !== undefined) expectTrue<Same<typeof row.price, number>>()
}
