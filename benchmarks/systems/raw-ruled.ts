import { hash } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import fastJson from 'fast-json-stringify'
import type { Statement } from 'better-sqlite3'
import { Book } from '../data.js'
import type { DatabaseTarget } from '../seed.js'
import { openPool, openSqlite } from './connections.js'
import { orderOf } from './hand-written.js'

// Issue 43's rule scenarios written by hand over prepared statements (`/books-ruled`): the viewset's row rule as
// the same WHERE term (`id >= 1`) on every statement, and its field rule as the same field (`title`) left out of
// every statement's columns and of the response schema, the ETag of the body sent.

const RuledBook = Type.Omit(Book, ['title'])
type RuledBook = Static<typeof RuledBook>
const columns = 'id, author_id, year, price'
const rule = 'id >= 1'

const IdParams = Type.Object({ id: Type.Integer() })
const RuledQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  offset: Type.Integer({ minimum: 0, default: 0 }),
  author_id: Type.Optional(Type.Integer()),
  order_by: Type.Optional(Type.Union(['id', 'year', 'price'].flatMap((field) => [
    Type.Literal(field), Type.Literal(`-${field}`),
  ]))),
}, { additionalProperties: false })
type RuledQuery = Static<typeof RuledQuery>
// `title` is unknown to the caller, as the field rule makes it: a body naming it is refused.
const RuledPatch = Type.Partial(Type.Omit(Book, ['id', 'title']), { additionalProperties: false, minProperties: 1 })
type RuledPatch = Static<typeof RuledPatch>
const writable = ['author_id', 'year', 'price'] as const

interface RuledStore {
  byId(id: number): Promise<RuledBook | undefined> | RuledBook | undefined
  list(query: RuledQuery): Promise<RuledBook[]> | RuledBook[]
  patch(id: number, values: RuledPatch): Promise<RuledBook | undefined> | RuledBook | undefined
  remove(id: number): Promise<boolean> | boolean
}

function order (query: RuledQuery): string {
  const { field, descending } = orderOf(query.order_by)
  return `order by ${field} ${descending ? 'desc' : 'asc'}${field === 'id' ? '' : ', id asc'}`
}

function sqliteStore (app: FastifyInstance, file: string): RuledStore {
  const db = openSqlite(file)
  app.addHook('onClose', async () => { db.close() })
  const byId = db.prepare<[number], RuledBook>(`select ${columns} from books where ${rule} and id = ?`)
  const remove = db.prepare<[number]>(`delete from books where ${rule} and id = ?`)
  const shapes = new Map<string, Statement>()
  // One statement per shape, the LIMIT and the filter written as raw.ts writes them (its comments say why).
  const shaped = (key: string, text: () => string): Statement => {
    let statement = shapes.get(key)
    if (statement === undefined) shapes.set(key, (statement = db.prepare(text())))
    return statement
  }
  return {
    byId: (id) => byId.get(id),
    remove: (id) => remove.run(id).changes > 0,
    list (query) {
      const filtered = query.author_id !== undefined
      const where = `where ${rule}${filtered ? ' and author_id = +@author_id' : ''}`
      const statement = shaped(`list:${String(filtered)}:${query.order_by ?? ''}:${query.limit}`,
        () => `select ${columns} from books ${where} ${order(query)} limit ${query.limit} offset @offset`)
      return statement.all({ author_id: query.author_id, offset: query.offset }) as RuledBook[]
    },
    patch (id, values) {
      const fields = writable.filter((field) => values[field] !== undefined)
      const statement = shaped(`patch:${fields.join(',')}`, () =>
        `update books set ${fields.map((field) => `${field} = @${field}`).join(', ')} where ${rule} and id = @id returning ${columns}`)
      return statement.all({ ...values, id })[0] as RuledBook | undefined
    },
  }
}

function postgresStore (app: FastifyInstance, url: string): RuledStore {
  const pool = openPool(url)
  app.addHook('onClose', async () => { await pool.end() })
  const run = async (name: string, text: string, values: unknown[]) => (await pool.query({ name, text, values }))
  return {
    byId: async (id) => (await run('ruled_by_id', `select ${columns} from books where ${rule} and id = $1`, [id])).rows[0],
    remove: async (id) => ((await run('ruled_delete', `delete from books where ${rule} and id = $1`, [id])).rowCount ?? 0) > 0,
    async list (query) {
      const filtered = query.author_id !== undefined
      const name = `ruled_list_${String(filtered)}_${(query.order_by ?? '').replace('-', 'd')}`
      const text = `select ${columns} from books where ${rule}${filtered ? ' and author_id = $3' : ''} ${order(query)} limit $1 offset $2`
      const values = filtered ? [query.limit, query.offset, query.author_id] : [query.limit, query.offset]
      return (await run(name, text, values)).rows
    },
    async patch (id, values) {
      const fields = writable.filter((field) => values[field] !== undefined)
      const set = fields.map((field, index) => `${field} = $${index + 2}`).join(', ')
      const text = `update books set ${set} where ${rule} and id = $1 returning ${columns}`
      return (await run(`ruled_patch_${fields.join('_')}`, text, [id, ...fields.map((field) => values[field])])).rows[0]
    },
  }
}

/** The `/books-ruled` routes of raw: the rules applied by hand. */
export function ruledRoutes (app: FastifyInstance, target: DatabaseTarget): void {
  const store = target.kind === 'sqlite' ? sqliteStore(app, target.file) : postgresStore(app, target.url)
  const notFound = { statusCode: 404, error: 'Not Found', message: 'No such book' }
  const serialize = fastJson(RuledBook)
  const sendTagged = (reply: FastifyReply, book: RuledBook): string => {
    const body = serialize(book)
    reply.header('etag', `"${hash('sha1', body, 'base64url')}"`).type('application/json; charset=utf-8')
    return body
  }
  app.get<{ Querystring: RuledQuery }>('/books-ruled', {
    schema: { querystring: RuledQuery, response: { 200: Type.Array(RuledBook) } },
  }, async (request) => await store.list(request.query))
  app.get<{ Params: { id: number } }>('/books-ruled/:id', {
    schema: { params: IdParams, response: { 200: RuledBook } },
  }, async (request, reply) => {
    const book = await store.byId(request.params.id)
    return book === undefined ? await reply.code(404).send(notFound) : sendTagged(reply, book)
  })
  app.patch<{ Params: { id: number }; Body: RuledPatch }>('/books-ruled/:id', {
    schema: { params: IdParams, body: RuledPatch, response: { 200: RuledBook } },
  }, async (request, reply) => {
    const book = await store.patch(request.params.id, request.body)
    return book === undefined ? await reply.code(404).send(notFound) : sendTagged(reply, book)
  })
  app.delete<{ Params: { id: number } }>('/books-ruled/:id', { schema: { params: IdParams } }, async (request, reply) =>
    (await store.remove(request.params.id)) ? reply.code(204).send() : reply.code(404).send(notFound))
}
