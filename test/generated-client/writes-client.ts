// A client of the routes issues 37 and 38 added, typed by openapi-typescript from the live document: no casts.
import createClient from 'openapi-fetch'
import type { paths } from './api.js'

const client = createClient<paths>({ baseUrl: process.env.API_URL ?? 'http://127.0.0.1:3000' })

const { data: created, error } = await client.POST('/items', { body: { name: 'Lamp', price: 12.5, reviews: [{ body: 'good' }] } })
if (error !== undefined) throw new Error(`${error.code}: ${error.detail}`)
const id: number = created.id
console.log('nested', created.reviews?.length)

const { data: many } = await client.PATCH('/items', { params: { query: { name__startswith: 'La' } }, body: { price: 11 } })
console.log('patched-many', JSON.stringify(many))

const { data: bulk } = await client.PATCH('/items/bulk', { body: [{ id, price: 9 }] })
console.log('bulk-patched', bulk?.[0]?.price)

const { data: groups } = await client.GET('/items/aggregate', {
  params: { query: { group_by: 'status', count: true, sum: 'price' } },
})
console.log('aggregated', groups?.length)

const { data: counted } = await client.GET('/items', {
  params: { query: { 'reviews.count__gte': 1, or: '(price__lt.5,name__endswith.mp)', order_by: '-reviews.count' } },
})
console.log('counted', counted?.length)

const { data: colored } = await client.GET('/items', {
  params: { query: { 'meta->color': 'red', fields: 'id,meta->color' } },
})
console.log('json', JSON.stringify(colored))

// Full-text search: every word of q, least relevant first, then most relevant first.
const { data: searched } = await client.GET('/notes', { params: { query: { q: 'bread', order_by: 'relevance' } } })
const { data: ranked } = await client.GET('/notes', { params: { query: { q: 'bread', order_by: '-relevance' } } })
const noteIds = (notes: typeof searched) => JSON.stringify(notes?.map((note) => note.id))
console.log('searched', noteIds(searched), 'most-relevant', noteIds(ranked))

const { data: batch } = await client.POST('/batch', {
  body: { operations: [{ method: 'POST', path: '/items', body: { name: 'Desk', price: 3 } }] },
})
console.log('batched', batch?.results.length)

const { data: deleted } = await client.DELETE('/items', { params: { query: { name__nin: 'Lamp' } } })
console.log('deleted-many', JSON.stringify(deleted))
