import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { sql } from 'kysely'
import { createDatabase } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { createItemsTable } from '../helpers/items.js'
import { bounded, keepAlive, median, rssOf, send, sleep, statusCounts } from '../helpers/hostile-http.js'
import type { HttpResult } from '../helpers/hostile-http.js'
import { heapAfterGc, startServerProcess } from '../helpers/hostile-server.js'

/** The items table in a database that server processes can share: a SQLite file (WAL) or a PostgreSQL schema. */
async function sharedDatabase (t: TestContext, dialect: TestDialect): Promise<TestDatabase> {
  if (dialect.name !== 'sqlite') {
    const database = await testDatabase(t, dialect)
    await createItemsTable(database)
    return database
  }
  const directory = await mkdtemp(join(tmpdir(), 'viewsets-load-'))
  const url = `sqlite:${join(directory, 'load.db')}`
  const db = createDatabase<any>(url)
  t.after(async () => {
    await db.destroy()
    await rm(directory, { recursive: true, force: true })
  })
  const database: TestDatabase = { db, dialect: 'sqlite', url, queries: [] }
  await createItemsTable(database)
  return database
}

async function countRows (db: TestDatabase['db']): Promise<number> {
  const row = await db.selectFrom('items').select((eb) => eb.fn.countAll().as('count')).executeTakeFirstOrThrow()
  return Number(row.count)
}

/** Fails with the first few unexpected answers, so that a failure says what went wrong. */
function assertNoFailures (results: readonly HttpResult[], label: string) {
  const failures = results.filter((result) => result.status === 0 || result.status >= 500)
  assert.equal(failures.length, 0, `${label}: ${failures.length} failures, such as ${JSON.stringify(failures.slice(0, 3))}`)
}

const loadDialects = dialects.filter((dialect) => dialect.name === 'sqlite' || dialect.name === 'postgres')

for (const dialect of loadDialects) {
  describe(`load on ${dialect.name}`, () => {
    test('1,000 concurrent POSTs from two server processes: 0 errors, 0 5xx, exactly 1,000 new rows', async (t) => {
      const database = await sharedDatabase(t, dialect)
      // Two processes on one database: on SQLite, two connections that contend for the write lock,
      // which WAL and the busy timeout set by createDatabase must absorb.
      const servers = [await startServerProcess(t, database.url), await startServerProcess(t, database.url)]
      const before = await countRows(database.db)
      // All 1,000 are sent at once; each server process takes them over 100 keep-alive connections,
      // so that its pool's wait for a connection stays under the 5 s connectionTimeout on a busy machine.
      const agent = keepAlive(100)
      t.after(() => agent.destroy())

      const started = performance.now()
      const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => {
        const server = servers[i % servers.length]!
        return send(server.port, 'POST', '/items', { name: `load ${i}`, description: `row ${i} 'quoted' "double" ; --`, price: i / 4 }, { agent })
      }))
      const seconds = (performance.now() - started) / 1000

      assertNoFailures(results, 'POST')
      assert.deepEqual(statusCounts(results), { 201: 1000 })
      assert.equal(await countRows(database.db), before + 1000)
      const ids = new Set(results.map((result) => JSON.parse(result.body).id))
      assert.equal(ids.size, 1000, 'every POST answered its own row')
      if (dialect.name === 'sqlite') {
        const { rows } = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(database.db)
        assert.equal(rows[0]?.journal_mode, 'wal')
      }
      t.diagnostic(`${dialect.name}: 1000 POSTs in ${seconds.toFixed(2)} s (${Math.round(1000 / seconds)} req/s), slowest ${Math.round(Math.max(...results.map((r) => r.ms)))} ms`)
    })

    test('20 seconds of mixed reads and writes: no 5xx, and no RSS growth after warm-up', async (t) => {
      const database = await sharedDatabase(t, dialect)
      const server = await startServerProcess(t, database.url)
      const agent = keepAlive(16)
      t.after(() => agent.destroy())
      // A standing set of rows, so that reads have something to find and the table size stays level.
      const seeded = await bounded(200, 16, async (i) => await send(server.port, 'POST', '/items', { name: `seed ${i}`, price: i }, { agent }))
      const ids: number[] = seeded.map((result) => JSON.parse(result.body).id)

      const duration = 20000
      const samples: number[] = []
      let heapAfterWarmUp = 0
      let heapAtEnd = 0
      const counts: Record<string, number> = {}
      const failures: HttpResult[] = []
      let serial = 0
      let stop = false
      const sampler = (async () => {
        for (let second = 1; second <= duration / 1000; second++) {
          await sleep(1000)
          samples.push(rssOf(server.pid))
          // A full collection at the end of warm-up, so that the middle and last thirds compare like with like.
          if (second === Math.floor(duration / 3000)) heapAfterWarmUp = await heapAfterGc(server)
        }
        heapAtEnd = await heapAfterGc(server)
        stop = true
      })()

      const pick = () => ids[Math.floor(Math.random() * ids.length)]
      const operation = async (): Promise<HttpResult> => {
        const roll = Math.random()
        const n = serial++
        if (roll < 0.15) {
          const result = await send(server.port, 'POST', '/items', { name: `mixed ${n}`, description: `d${n % 97}`, price: n % 500 }, { agent })
          if (result.status === 201) ids.push(JSON.parse(result.body).id)
          return result
        }
        if (roll < 0.30 && ids.length > 100) {
          const id = ids.splice(Math.floor(Math.random() * ids.length), 1)[0]
          return await send(server.port, 'DELETE', `/items/${id}`, undefined, { agent })
        }
        if (roll < 0.55) return await send(server.port, 'GET', `/items?limit=20&offset=${n % 50}&search=${n % 10}&order_by=-price,name`, undefined, { agent })
        if (roll < 0.65) return await send(server.port, 'GET', `/items?price__gte=${n % 100}&price__lte=400&in_stock=true&count=true`, undefined, { agent })
        if (roll < 0.80) return await send(server.port, 'GET', `/items/${pick()}`, undefined, { agent })
        if (roll < 0.93) return await send(server.port, 'PATCH', `/items/${pick()}`, { price: n % 300, description: null }, { agent })
        // The error paths too: a missing row and an invalid body.
        if (roll < 0.97) return await send(server.port, 'GET', '/items/987654321', undefined, { agent })
        return await send(server.port, 'POST', '/items', { name: '', price: -1 }, { agent })
      }
      await Promise.all(Array.from({ length: 16 }, async () => {
        // eslint-disable-next-line no-unmodified-loop-condition -- set by a callback while this loop awaits
        while (!stop) {
          const result = await operation()
          counts[result.status] = (counts[result.status] ?? 0) + 1
          // 404: a row deleted by another worker between pick and request.
          if (result.status === 0 || result.status >= 500) failures.push(result)
        }
      }))
      await sampler

      const total = Object.values(counts).reduce((sum, count) => sum + count, 0)
      const mib = (bytes: number) => (bytes / 1048576).toFixed(1)
      const third = Math.floor(samples.length / 3)
      const middle = median(samples.slice(third, 2 * third))
      const last = median(samples.slice(2 * third))
      t.diagnostic(`${dialect.name}: ${total} requests in 20 s (${Math.round(total / 20)} req/s), statuses ${JSON.stringify(counts)}`)
      t.diagnostic(`${dialect.name}: RSS MiB per second ${samples.map(mib).join(' ')}; median of the middle third ${mib(middle)}, of the last third ${mib(last)}`)
      t.diagnostic(`${dialect.name}: heap after a full GC ${mib(heapAfterWarmUp)} MiB after warm-up, ${mib(heapAtEnd)} MiB at the end`)
      assert.equal(failures.length, 0, `failures such as ${JSON.stringify(failures.slice(0, 3))}`)
      assert.ok(total > 1000, `the load ran (${total} requests)`)
      // A leak grows with every request; after warm-up the resident set must stay level (5% + 8 MiB of slack).
      assert.ok(last <= middle * 1.05 + 8 * 1048576, `RSS grew from ${mib(middle)} MiB to ${mib(last)} MiB`)
      // The live heap is the sharper measure: a leak of 200 bytes per request would add several MiB here.
      assert.ok(heapAtEnd <= heapAfterWarmUp + 3 * 1048576, `the heap grew from ${mib(heapAfterWarmUp)} MiB to ${mib(heapAtEnd)} MiB`)
    })
  })
}
