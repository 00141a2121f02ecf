import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { createViewset, Viewset } from 'fastify-viewsets'
import { databaseSetups, dialects, setupDatabase } from '../helpers/database.js'
import type { DatabaseSetup, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

// better-sqlite3 answers a statement before any promise could: on a database whose shortcut runs it (createDatabase,
// or the user's Kysely wrapped by withPreparedStatements), the default handlers hand the rows on as they are, and
// Fastify sends the answer within the handler's call. Anywhere else the same routes answer through promises.

const rows = [
  { id: 1, name: 'Bread', description: null, price: 2, in_stock: true },
  { id: 2, name: 'Milk', description: 'fresh', price: 1.5, in_stock: true },
  { id: 3, name: 'Tea', description: null, price: 4, in_stock: true },
]

/**
 * An app whose requests record whether their answer was sent before a microtask queued just before the handler
 * ran: only a handler that answers within its call sends it that early.
 */
async function recordingApp (
  t: TestContext,
  dialect: TestDialect,
  setup: DatabaseSetup,
  register: (app: FastifyInstance, db: Kysely<any>) => Promise<void>
): Promise<{ app: FastifyInstance; atOnce: boolean[] }> {
  const database = await setupDatabase(t, dialect, setup, { logged: false })
  await createItemsTable(database)
  await database.db
    .insertInto('items')
    .values(rows.map(({ name, description, price }) => ({ name, description, price })))
    .execute()
  const app = testApp(t)
  const atOnce: boolean[] = []
  let microtaskRan = false
  app.addHook('preHandler', (_request, _reply, done) => {
    microtaskRan = false
    queueMicrotask(() => {
      microtaskRan = true
    })
    done()
  })
  app.addHook('onSend', (_request, _reply, payload, done) => {
    atOnce.push(!microtaskRan)
    done(null, payload)
  })
  await register(app, database.db)
  return { app, atOnce }
}

for (const dialect of dialects) {
  describe(`the default handlers on ${dialect.name}`, () => {
    for (const setup of databaseSetups) {
      const expected = dialect.name === 'sqlite' && setup !== 'own Kysely'
      test(`answer ${expected ? "within the handler's call" : 'through promises'} (${setup})`, async (t) => {
        const { app, atOnce } = await recordingApp(t, dialect, setup, async (app, db) => {
          await app.register(createViewset({ db, table: 'items', schema: Item, filterFields: { price: ['gte'] } }), {
            prefix: '/items',
          })
        })
        // The wrapped Kysely learns on its first statement whether it logs.
        assert.equal((await app.inject('/items/1')).statusCode, 200)
        atOnce.length = 0

        const page = await app.inject('/items?limit=2')
        assert.equal(page.statusCode, 200)
        assert.deepEqual(page.json(), rows.slice(0, 2))
        assert.equal(page.headers.link, '</items?limit=2&offset=2>; rel="next"')
        const filtered = await app.inject('/items?price__gte=2&fields=id,name')
        assert.equal(filtered.statusCode, 200)
        assert.deepEqual(filtered.json(), [
          { id: 1, name: 'Bread' },
          { id: 3, name: 'Tea' },
        ])
        const one = await app.inject('/items/2')
        assert.equal(one.statusCode, 200)
        assert.deepEqual(one.json(), rows[1])
        assert.match(String(one.headers.etag), /^"/)
        const unchanged = await app.inject({ url: '/items/2', headers: { 'if-none-match': String(one.headers.etag) } })
        assert.equal(unchanged.statusCode, 304)
        assert.equal(unchanged.body, '')
        const missing = await app.inject('/items/99')
        assert.equal(missing.statusCode, 404)
        assert.equal(missing.headers['content-type'], 'application/problem+json; charset=utf-8')
        assert.equal(missing.json().code, 'FST_VIEWSET_NOT_FOUND')
        assert.equal(missing.headers.etag, undefined)

        const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Jam', price: 3 } })
        assert.equal(created.statusCode, 201)
        assert.equal(created.headers.location, '/items/4')
        assert.match(String(created.headers.etag), /^"/)
        assert.deepEqual(created.json(), { id: 4, name: 'Jam', description: null, price: 3, in_stock: true })
        const replaced = await app.inject({
          method: 'PUT',
          url: '/items/4',
          payload: { name: 'Honey', description: 'raw', price: 6, in_stock: false },
        })
        assert.equal(replaced.statusCode, 200)
        assert.deepEqual(replaced.json(), { id: 4, name: 'Honey', description: 'raw', price: 6, in_stock: false })
        const patched = await app.inject({ method: 'PATCH', url: '/items/4', payload: { price: 5 } })
        assert.equal(patched.statusCode, 200)
        assert.deepEqual(patched.json(), { id: 4, name: 'Honey', description: 'raw', price: 5, in_stock: false })
        const deleted = await app.inject({ method: 'DELETE', url: '/items/4' })
        assert.equal(deleted.statusCode, 204)
        assert.equal(deleted.body, '')
        const gone = await app.inject({ method: 'DELETE', url: '/items/4' })
        assert.equal(gone.statusCode, 404)
        assert.equal(gone.json().code, 'FST_VIEWSET_NOT_FOUND')
        const taken = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Tea' } })
        assert.equal(taken.statusCode, 409)
        assert.equal(taken.headers['content-type'], 'application/problem+json; charset=utf-8')
        assert.equal((await app.inject('/items?limit=10')).json().length, 3)

        // LIST, GET, 304 and 404; POST, PUT, PATCH, DELETE, its 404 and a 409; the last LIST.
        assert.deepEqual(
          atOnce,
          Array.from({ length: 12 }, () => expected)
        )
      })
    }

    test('an overridden list is awaited, and one that answers nothing at once still gets an answer', async (t) => {
      class Nothing extends Viewset<any, 'items', typeof Item> {
        // Plain JavaScript can break the declared type: no promise, no rows.
        override list (): Promise<Item[]> {
          return undefined as unknown as Promise<Item[]>
        }
      }
      class Later extends Viewset<any, 'items', typeof Item> {
        override async list (): Promise<Item[]> {
          return await this.query().where('id', '=', 3).execute()
        }
      }
      const { app, atOnce } = await recordingApp(t, dialect, 'createDatabase', async (app, db) => {
        await app.register(new Nothing({ db, table: 'items', schema: Item }).register(['LIST']), { prefix: '/nothing' })
        await app.register(new Later({ db, table: 'items', schema: Item }).register(['LIST']), { prefix: '/later' })
      })
      const nothing = await app.inject('/nothing')
      assert.equal(nothing.statusCode, 200)
      assert.equal(nothing.body, '')
      const later = await app.inject('/later')
      assert.equal(later.statusCode, 200)
      assert.deepEqual(later.json(), [rows[2]])
      assert.equal(later.headers.link, undefined)
      assert.deepEqual(atOnce, [false, false])
    })

    test('under a row rule and a field rule that answer at once, LIST and GET await nothing before the handler',
      async (t) => {
        const expected = dialect.name === 'sqlite'
        // A microtask queued when the request arrives: it runs before the answer only if something awaited.
        const early: boolean[] = []
        const { app } = await recordingApp(t, dialect, 'createDatabase', async (app, db) => {
          let microtaskRan = false
          app.addHook('onRequest', (_request, _reply, done) => {
            microtaskRan = false
            queueMicrotask(() => {
              microtaskRan = true
            })
            done()
          })
          app.addHook('onSend', (_request, _reply, payload, done) => {
            early.push(!microtaskRan)
            done(null, payload)
          })
          await app.register(createViewset({
            db,
            table: 'items',
            schema: Item,
            scope: (eb: any) => eb('price', '>=', 2),
            fieldAccess: () => ({ hidden: ['description'] }),
            withoutTokens: true,
          } as never), { prefix: '/ruled' })
        })
        assert.equal((await app.inject('/ruled/1')).statusCode, 200)
        early.length = 0
        const page = await app.inject('/ruled?limit=5')
        assert.deepEqual(page.json(), [
          { id: 1, name: 'Bread', price: 2, in_stock: true },
          { id: 3, name: 'Tea', price: 4, in_stock: true },
        ])
        const one = await app.inject('/ruled/3')
        assert.deepEqual(one.json(), { id: 3, name: 'Tea', price: 4, in_stock: true })
        assert.equal((await app.inject('/ruled/2')).statusCode, 404, 'outside the row rule')
        const hidden = await app.inject('/ruled?order_by=description')
        assert.equal(hidden.statusCode, 400, 'a hidden name is an unknown one')
        // LIST, GET and the 404: within the request's first turn; the 400 is not asked about.
        assert.deepEqual(early.slice(0, 3), [expected, expected, expected])
      })
  })
}
