import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createDatabase, createViewset } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'
import { freezingProxy } from '../helpers/freezing-proxy.js'

// A connection that goes half-open (a failover, a partition: no reset, no data) must not wedge the pool: past
// statementTimeout plus a margin the request answers 503 and the connection is dropped, so the next request
// gets a new one. SQLite has no connection to lose.
for (const dialect of dialects.filter((candidate) => candidate.name !== 'sqlite')) {
  describe(`half-open connections on ${dialect.name}`, () => {
    test('a frozen connection fails its request with 503 and the pool recovers without a restart', { timeout: 60_000 }, async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      await database.db.insertInto('items').values({ name: 'Bread' }).execute()
      const direct = new URL(database.url)
      const proxy = await freezingProxy(t, direct.hostname, Number(direct.port))
      const viaProxy = new URL(database.url)
      viaProxy.port = String(proxy.port)
      // One connection: a request after the freeze succeeds only on a new one.
      const db = createDatabase<ItemsDB>(viaProxy.toString(), { statementTimeout: 500, poolSize: 1 })
      t.after(() => db.destroy())
      const app = testApp(t)
      await app.register(createViewset({ db, table: 'items', schema: Item }), { prefix: '/items' })
      const { id } = await db.selectFrom('items').select('id').executeTakeFirstOrThrow()
      assert.equal((await app.inject(`/items/${id}`)).statusCode, 200)

      for (const request of [
        { method: 'GET' as const, url: `/items/${id}` },
        { method: 'PATCH' as const, url: `/items/${id}`, payload: { price: 7 } },
      ]) {
        proxy.freeze()
        const opened = proxy.opened()
        const start = performance.now()
        const frozen = await app.inject(request)
        const failedAfter = performance.now() - start
        assert.equal(frozen.statusCode, 503, frozen.body)
        assert.equal(frozen.headers['retry-after'], '1')
        assert.equal(problemOf(frozen).code, 'FST_VIEWSET_TIMEOUT')
        const recoveredStart = performance.now()
        const next = await app.inject(request)
        const recoveredAfter = performance.now() - recoveredStart
        assert.equal(next.statusCode, 200, next.body)
        assert.ok(proxy.opened() > opened, 'the next request ran on a new connection')
        t.diagnostic(`${request.method}: 503 after ${Math.round(failedAfter)} ms (statementTimeout 500), ` +
          `next request 200 after ${Math.round(recoveredAfter)} ms`)
      }
      assert.ok(proxy.closedWhileFrozen() >= 2, 'the frozen connections were closed by the client, not reused')
      const row = await database.db.selectFrom('items').select('price').where('id', '=', id).executeTakeFirstOrThrow()
      assert.equal(row.price, 7)
    })
  })
}
