import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Kysely } from 'kysely'
import { Viewset, viewsetDocs } from 'fastify-viewsets'
import type { ElementRequest, ListRequest, ViewsetToken } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

const StockQuery = Type.Object({
  in_stock: Type.Optional(Type.Boolean({ description: 'Only items in stock (or out of it)' })),
  min_price: Type.Optional(Type.Number({ minimum: 0 })),
})

class StockViewset extends Viewset<ItemsDB, 'items', typeof Item> {
  static override listQuery = StockQuery
  tokens: Array<ViewsetToken | null> = []

  override async list (
    request: ListRequest<{ limit: number; offset: number; in_stock?: boolean; min_price?: number }>,
    _reply: FastifyReply,
    token: ViewsetToken | null
  ) {
    this.tokens.push(token)
    const { limit, offset, in_stock: inStock, min_price: minPrice } = request.query
    let query = this.query().orderBy('price', 'desc').orderBy('id').limit(limit).offset(offset)
    if (inStock !== undefined) query = query.where('in_stock', '=', inStock ? (1 as never) : (0 as never))
    if (minPrice !== undefined) query = query.where('price', '>=', minPrice)
    return await query.execute()
  }

  override async getElement (request: ElementRequest, reply: FastifyReply, token: ViewsetToken | null) {
    this.tokens.push(token)
    reply.header('x-overridden', 'yes')
    return await super.getElement(request, reply, token)
  }

  override customRoutes (fastify: FastifyInstance) {
    fastify.get(
      '/stats',
      { schema: { operationId: 'itemStats', response: { 200: Type.Object({ count: Type.Integer() }) } } },
      async () => {
        const row = await this.db
          .selectFrom('items')
          .select((eb) => eb.fn.countAll<number>().as('count'))
          .executeTakeFirstOrThrow()
        return { count: Number(row.count) }
      }
    )
  }
}

for (const dialect of dialects) {
  describe(`Viewset subclasses on ${dialect.name}`, () => {
    test('overrides, extra LIST query parameters and custom routes', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(viewsetDocs)
      const viewset = new StockViewset({ db: database.db as Kysely<ItemsDB>, table: 'items', schema: Item })
      await app.register(viewset.register(), { prefix: '/items' })
      for (const [name, price, inStock] of [
        ['a', 1, true],
        ['b', 3, false],
        ['c', 2, true],
      ] as const) {
        assert.equal(
          (await app.inject({ method: 'POST', url: '/items', payload: { name, price, in_stock: inStock } })).statusCode,
          201
        )
      }

      const all = await app.inject('/items')
      assert.deepEqual(
        all.json().map((row: { name: string }) => row.name),
        ['b', 'c', 'a']
      )
      const inStock = await app.inject('/items?in_stock=true&min_price=1.5')
      assert.equal(inStock.statusCode, 200)
      assert.deepEqual(
        inStock.json().map((row: { name: string }) => row.name),
        ['c']
      )

      const bad = await app.inject('/items?min_price=abc&in_stock=maybe&other=1')
      assert.equal(bad.statusCode, 400)
      assert.deepEqual(
        problemOf(bad)
          .errors?.map((error) => error.field)
          .sort(),
        ['in_stock', 'min_price', 'other']
      )

      const one = await app.inject(`/items/${all.json()[0].id}`)
      assert.equal(one.statusCode, 200)
      assert.equal(one.headers['x-overridden'], 'yes')
      assert.deepEqual(viewset.tokens, [null, null, null], 'open methods get a null token')

      const stats = await app.inject('/items/stats')
      assert.equal(stats.statusCode, 200)
      assert.deepEqual(stats.json(), { count: 3 })

      const document = (await app.inject('/docs/json')).json()
      const parameters = document.paths['/items'].get.parameters
        .map((parameter: { name: string }) => parameter.name)
        .sort()
      assert.deepEqual(parameters, ['in_stock', 'limit', 'min_price', 'offset'])
      assert.ok(document.paths['/items/stats'].get)
    })

    test('an overridden list gets maxOffset too: a deeper offset is a 400 before the override runs', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      const viewset = new StockViewset({
        db: database.db as Kysely<ItemsDB>,
        table: 'items',
        schema: Item,
        maxOffset: 50,
      })
      await app.register(viewset.register(), { prefix: '/items' })
      const past = await app.inject('/items?offset=51')
      assert.equal(past.statusCode, 400)
      const body = problemOf(past)
      assert.equal(body.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(
        body.errors?.map((error) => error.field),
        ['offset']
      )
      assert.match(body.detail, /at most 50 \(maxOffset\).*cursor pagination/)
      assert.deepEqual(viewset.tokens, [], 'the override never ran')
      assert.equal((await app.inject('/items?offset=50')).statusCode, 200)
    })

    test('two viewsets of one class keep their own schema and table', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      const Narrow = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
      await app.register(new Viewset({ db: database.db as Kysely<ItemsDB>, table: 'items', schema: Item }).register(), {
        prefix: '/wide',
      })
      await app.register(
        new Viewset({ db: database.db as Kysely<ItemsDB>, table: 'items', schema: Narrow }).register(['LIST', 'POST']),
        { prefix: '/narrow' }
      )
      const created = await app.inject({ method: 'POST', url: '/narrow', payload: { name: 'x' } })
      assert.deepEqual(Object.keys(created.json()).sort(), ['id', 'name'])
      const rejected = await app.inject({ method: 'POST', url: '/narrow', payload: { name: 'y', price: 2 } })
      assert.equal(rejected.statusCode, 400, 'a field of the other viewset is unknown here')
      assert.deepEqual(Object.keys((await app.inject('/wide')).json()[0]).sort(), [
        'description',
        'id',
        'in_stock',
        'name',
        'price',
      ])
    })
  })
}
