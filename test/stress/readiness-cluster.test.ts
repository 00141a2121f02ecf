import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createDatabase, createViewset, viewsetReadiness } from 'fastify-viewsets'
import { dialects } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import { ownCluster } from '../helpers/hostile-cluster.js'

// The readiness route against a PostgreSQL server of the test's own, stopped and started (pg_ctlcluster): the shared
// server on 5432 stays up for the other suites. Runs when TEST_POSTGRES_URL is set, as every PostgreSQL suite does.
for (const _postgres of dialects.filter((dialect) => dialect.name === 'postgres')) {
  test('readiness: 200, then 503 while the cluster is stopped, then 200 once it is started again', { timeout: 120_000 }, async (t) => {
    const cluster = await ownCluster(t)
    const db = createDatabase<any>(cluster.url, { connectionTimeout: 1000 })
    t.after(() => db.destroy())
    await createItemsTable({ db, dialect: 'postgres', url: cluster.url, queries: [] })
    const app = testApp(t)
    await app.register(viewsetReadiness, { timeout: 1000 })
    await app.register(createViewset({ db, table: 'items', schema: Item }), { prefix: '/items' })
    await app.ready()
    assert.deepEqual((await app.inject('/ready')).json(), { status: 'ready', databases: 1 })

    await cluster.stop()
    const down = await app.inject('/ready')
    assert.equal(down.statusCode, 503, down.body)
    assert.equal(problemOf(down).code, 'FST_VIEWSET_UNAVAILABLE')
    assert.equal(down.headers['retry-after'], '1')

    await cluster.start()
    const back = await app.inject('/ready')
    assert.equal(back.statusCode, 200, back.body)
    assert.equal((await app.inject('/items')).statusCode, 200)
  })
}
