import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, Viewset } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'
import { ownCluster } from '../helpers/hostile-cluster.js'
import { keepAlive, send, sleep, statusCounts } from '../helpers/hostile-http.js'
import type { HttpResult } from '../helpers/hostile-http.js'
import { startServerProcess, stopServerProcess } from '../helpers/hostile-server.js'

/** Items plus `GET /items/slow?seconds=`, a route that holds a pooled connection for a while. */
class SlowItems extends Viewset<ItemsDB, 'items', typeof Item> {
  override customRoutes (fastify: FastifyInstance) {
    fastify.get<{ Querystring: { seconds: number } }>('/slow', {
      schema: { querystring: { type: 'object', properties: { seconds: { type: 'number', minimum: 0, maximum: 5 } }, required: ['seconds'] } },
    }, async (request) => {
      await sql`select pg_sleep(${request.query.seconds})`.execute(this.db)
      return { slept: request.query.seconds }
    })
  }
}

/** Every 503 is the unavailable problem, with Retry-After and no driver text. */
function assertUnavailable (result: { status: number, headers: Record<string, unknown>, body: string }) {
  assert.equal(result.status, 503, result.body)
  const problem = problemOf({ headers: result.headers, json: () => JSON.parse(result.body) })
  assert.equal(problem.code, 'FST_VIEWSET_UNAVAILABLE')
  assert.equal(result.headers['retry-after'], '1')
  assert.doesNotMatch(result.body, /ECONN|terminat|postgres|pg_|connect|timeout/i)
}

/** Open sessions of one application_name, seen from another connection. */
async function sessions (admin: Kysely<any>, applicationName: string): Promise<number> {
  const { rows } = await sql<{ count: string }>`select count(*) as count from pg_stat_activity where application_name = ${applicationName}`.execute(admin)
  return Number(rows[0]?.count)
}

async function until (what: string, condition: () => Promise<boolean>, timeout = 10000) {
  const deadline = Date.now() + timeout
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await sleep(50)
  }
}

// Like every suite, PostgreSQL runs when TEST_POSTGRES_URL is set (CI requires it).
for (const postgres of dialects.filter((dialect) => dialect.name === 'postgres')) {
  describe('database faults on postgres', () => {
    test('a server stopped mid-load: 503 problem+json during the outage, no crash, success again after restart without restarting the app', async (t) => {
    // Our own cluster: stopping the shared server would break every other suite running now.
      const cluster = await ownCluster(t)
      const setup = createDatabase<any>(cluster.url)
      await createItemsTable({ db: setup, dialect: 'postgres', url: cluster.url, queries: [] })
      await setup.destroy()
      // A separate process with the default pool settings, so that a crash would show as an exit.
      const server = await startServerProcess(t, cluster.url)
      const agent = keepAlive(8)
      t.after(() => agent.destroy())

    type Phase = 'up' | 'stopping' | 'down' | 'starting' | 'recovered'
    let phase: Phase = 'up'
    let running = true
    let serial = 0
    const results: Array<HttpResult & { phase: Phase }> = []
    const workers = Promise.all(Array.from({ length: 8 }, async () => {
      // eslint-disable-next-line no-unmodified-loop-condition -- set by a callback while this loop awaits
      while (running) {
        const started: Phase = phase
        const n = serial++
        const result = n % 2 === 0
          ? await send(server.port, 'POST', '/items', { name: `fault ${n}` }, { agent, timeout: 10000 })
          : await send(server.port, 'GET', '/items?limit=5&order_by=-price', undefined, { agent, timeout: 10000 })
        results.push({ ...result, phase: started })
        await sleep(20)
      }
    }))
    const during = (...phases: Phase[]) => results.filter((result) => phases.includes(result.phase))

    try {
      await sleep(1500)
      phase = 'stopping'
      await cluster.stop()
      phase = 'down'
      await sleep(3000)
      phase = 'starting'
      await cluster.start()
      // The first requests after the start may find the server still opening; wait for one success.
      await until('a request succeeds after the restart', async () => (await send(server.port, 'GET', '/items?limit=1', undefined, { agent })).status === 200, 15000)
      phase = 'recovered'
      await sleep(2000)
    } finally {
      running = false
      await workers
    }

    const summary = (['up', 'stopping', 'down', 'starting', 'recovered'] as const).map((p) => `${p} ${JSON.stringify(statusCounts(during(p)))}`).join(', ')
    t.diagnostic(`statuses by phase: ${summary}`)
    const down = during('down')
    t.diagnostic(`outage answers: ${down.length}, slowest ${Math.round(Math.max(...down.map((r) => r.ms)))} ms`)

    assert.equal(server.child.exitCode, null, 'the server process is still running')
    for (const result of results) {
      assert.ok(result.status === 200 || result.status === 201 || result.status === 503, `${result.phase}: ${result.status} ${result.error ?? result.body}`)
      if (result.status === 503) assertUnavailable(result)
    }
    assert.ok(during('up').length > 0 && during('up').every((result) => result.status < 300), 'all succeed before the outage')
    assert.ok(down.length >= 50, `requests were made during the outage (${down.length})`)
    for (const result of down) {
      assert.equal(result.status, 503)
      // Refused connections fail at once; nothing waits for the 10 s client timeout.
      assert.ok(result.ms < 6000, `a request during the outage took ${Math.round(result.ms)} ms`)
    }
    const recovered = during('recovered')
    assert.ok(recovered.length >= 50, `requests were made after the restart (${recovered.length})`)
    assert.deepEqual(recovered.filter((result) => result.status >= 300).map((result) => result.body), [], 'all succeed after the restart')
    assert.equal(await stopServerProcess(server.child), 0, 'the server closes cleanly')
    })

    test('an exhausted pool answers 503 in about connectionTimeout, not after the slow queries', async (t) => {
      const database = await testDatabase(t, postgres)
      await createItemsTable(database)
      const db = createDatabase<ItemsDB>(database.url, { poolSize: 1, connectionTimeout: 500 })
      const app = testApp(t)
      app.addHook('onClose', async () => { await db.destroy() })
      await app.register(new SlowItems({ db, table: 'items', schema: Item }).register(), { prefix: '/items' })

      const slow = app.inject({ method: 'GET', url: '/items/slow?seconds=2' })
      await sleep(100)
      const started = performance.now()
      const waiting = await Promise.all([
        app.inject({ method: 'GET', url: '/items' }),
        app.inject({ method: 'POST', url: '/items', payload: { name: 'queued' } }),
        app.inject({ method: 'GET', url: '/items/1' }),
      ])
      const elapsed = performance.now() - started
      t.diagnostic(`three requests behind a 2 s query on a pool of 1 answered in ${Math.round(elapsed)} ms`)
      for (const response of waiting) {
        assertUnavailable({ status: response.statusCode, headers: response.headers, body: response.body })
      }
      assert.ok(elapsed < 1800, `answered before the slow query ended (${Math.round(elapsed)} ms)`)
      assert.equal((await slow).statusCode, 200)
      const after = await app.inject({ method: 'POST', url: '/items', payload: { name: 'after' } })
      assert.equal(after.statusCode, 201, 'the pool serves again once the connection is back')
      assert.equal(await database.db.selectFrom('items').select('name').execute().then((rows) => rows.map((row) => row.name)).then(String), 'after')
    })

    test('app.close() during in-flight requests lets them finish, then destroys the pool', async (t) => {
      const database = await testDatabase(t, postgres)
      await createItemsTable(database)
      const applicationName = `vsclose_${randomBytes(4).toString('hex')}`
      const url = new URL(database.url)
      url.searchParams.set('application_name', applicationName)
      const db = createDatabase<ItemsDB>(url.toString(), { poolSize: 4 })
      const admin = createDatabase<any>(postgres.url)
      t.after(() => admin.destroy())

      const app = testApp(t)
      let destroyed = false
      app.addHook('onClose', async () => {
        await db.destroy()
        destroyed = true
      })
      await app.register(new SlowItems({ db, table: 'items', schema: Item }).register(), { prefix: '/items' })
      await app.listen({ host: '127.0.0.1', port: 0 })
      const address = app.server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0

      const inFlight = Array.from({ length: 4 }, () => send(port, 'GET', '/items/slow?seconds=1'))
      await until('four slow queries run', async () => {
        const { rows } = await sql<{ count: string }>`select count(*) as count from pg_stat_activity
        where application_name = ${applicationName} and state = 'active' and query like '%pg_sleep%'`.execute(admin)
        return Number(rows[0]?.count) === 4
      })
      const closing = app.close()
      const results = await Promise.all(inFlight)
      await closing

      assert.deepEqual(results.map((result) => [result.status, result.body]), Array.from({ length: 4 }, () => [200, '{"slept":1}']))
      assert.equal(destroyed, true, 'db.destroy() ran in onClose and resolved')
      const refused = await send(port, 'GET', '/items')
      assert.equal(refused.status, 0, 'the server no longer accepts connections')
      // The backends end a moment after their clients disconnect.
      await until('the pool\'s sessions are gone', async () => (await sessions(admin, applicationName)) === 0, 5000)
    })
  })
}
