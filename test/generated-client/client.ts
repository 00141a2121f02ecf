// npx openapi-typescript http://127.0.0.1:3000/docs/json -o api.d.ts
import createClient from 'openapi-fetch'
import type { paths } from './api.js'

const client = createClient<paths>({ baseUrl: process.env.API_URL ?? 'http://127.0.0.1:3000' })

const { data: created, error } = await client.POST('/items', { body: { name: 'Lamp', price: 12.5 } })
if (error !== undefined) throw new Error(`${error.code}: ${error.detail}`)
// The key and the read-only columns are always in an answer: no `!` needed.
const id: number = created.id
console.log('created', id, created.created_at.slice(0, 10))

const { data: item } = await client.GET('/items/{id}', { params: { path: { id } } })
console.log('read', item?.name)

const { data: patched } = await client.PATCH('/items/{id}', { params: { path: { id } }, body: { price: 10 } })
console.log('patched', patched?.price)

const { data: page } = await client.GET('/items', { params: { query: { limit: 10 } } })
console.log('listed', page?.length)

const { error: missing } = await client.GET('/items/{id}', { params: { path: { id: 999999 } } })
console.log('missing', missing?.code)

const { response } = await client.DELETE('/items/{id}', { params: { path: { id } } })
console.log('deleted', response.status)
