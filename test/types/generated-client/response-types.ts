// Compiled by test/features/contract.test.ts next to the api.d.ts that openapi-typescript generates from
// examples/basic's document (issue 34, item 8): what the server always sends is typed as always there.
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
