import assert from 'node:assert/strict'
import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import { sql } from 'kysely'
import { dialects, testDatabase } from '../helpers/database.js'

// Several stateless processes over one PostgreSQL: the cluster example's primary forks two workers,
// each with its own pool and its own port, and the test talks to each worker directly.
const workerCount = 2
const writes = 200
const concurrency = 8

interface Listening {
  type: 'listening'
  address: string
  pid: number
}

/** Starts examples/cluster with two workers; resolves with each worker's address once all listen. */
async function startCluster (env: Record<string, string>): Promise<{ primary: ChildProcess; workers: Listening[] }> {
  const primary = fork('examples/cluster/server.ts', [], {
    execArgv: ['--conditions=source', '--import', 'tsx'],
    env: { ...process.env, ...env, WORKERS: String(workerCount), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  const workers: Listening[] = []
  await new Promise<void>((resolve, reject) => {
    primary.on('message', (message: Listening) => {
      if (message.type === 'listening') workers.push(message)
      if (workers.length === workerCount) resolve()
    })
    primary.once('exit', (code, signal) =>
      reject(new Error(`the cluster exited before its workers listened (${signal ?? code})`))
    )
  })
  return { primary, workers }
}

/** Stops the primary (which stops its workers); kills whatever is left by pid. */
async function stopCluster (primary: ChildProcess | undefined, workers: Listening[]): Promise<void> {
  if (primary !== undefined && primary.exitCode === null && primary.signalCode === null) {
    const exited = once(primary, 'exit')
    primary.kill('SIGTERM')
    const timer = setTimeout(() => primary.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
  }
  for (const { pid } of workers) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      /* already gone */
    }
  }
}

async function request (
  base: string,
  method: string,
  path: string,
  body?: object
): Promise<{ status: number; json: any }> {
  const init: RequestInit = { method }
  if (body !== undefined) {
    init.headers = { 'content-type': 'application/json' }
    init.body = JSON.stringify(body)
  }
  const response = await fetch(base + path, init)
  const text = await response.text()
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text) }
}

/** Runs `task(0..count-1)` with at most `limit` in flight, so requests to both workers interleave. */
async function inParallel (count: number, limit: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < count) await task(next++)
    })
  )
}

/** Every id LIST serves through one worker, page by page. */
async function listIds (base: string): Promise<number[]> {
  const ids: number[] = []
  for (let offset = 0; ; offset += 100) {
    const { status, json } = await request(base, 'GET', `/items?limit=100&offset=${offset}`)
    assert.equal(status, 200)
    ids.push(...json.map((row: { id: number }) => row.id))
    if (json.length < 100) return ids.sort((a, b) => a - b)
  }
}

for (const dialect of dialects.filter((dialect) => dialect.name === 'postgres')) {
  describe(`two processes over one ${dialect.name}`, () => {
    test(
      'every write through one worker is visible through the other; none is lost; the count is exact',
      { timeout: 120_000 },
      async (t) => {
        const running: { cluster?: { primary: ChildProcess; workers: Listening[] } } = {}
        // Registered first so that it runs first: workers stop before their schema is dropped.
        t.after(async () => {
          await stopCluster(running.cluster?.primary, running.cluster?.workers ?? [])
        })
        const database = await testDatabase(t, dialect)
        const cluster = (running.cluster = await startCluster({ DATABASE_URL: database.url, POOL_SIZE: '4' }))
        const bases = cluster.workers.map((worker) => worker.address)
        assert.equal(new Set(cluster.workers.map((worker) => worker.pid)).size, workerCount, 'two processes')
        assert.equal(new Set(bases).size, workerCount, 'each on its own port')

        // Creates alternate between the workers; each row is read back at once through the other one.
        const created = new Map<number, { id: number; name: string; price: number }>()
        await inParallel(writes, concurrency, async (i) => {
          const writer = bases[i % 2] as string
          const reader = bases[(i + 1) % 2] as string
          const post = await request(writer, 'POST', '/items', { name: `item ${i}`, price: i })
          assert.equal(post.status, 201, JSON.stringify(post.json))
          const get = await request(reader, 'GET', `/items/${post.json.id}`)
          assert.equal(get.status, 200, `item ${i} written through ${writer} is visible through ${reader}`)
          assert.deepEqual(get.json, post.json)
          created.set(post.json.id, post.json)
        })
        assert.equal(created.size, writes, 'every create got its own id')

        // Updates through one worker, read through the other; deletes likewise.
        const ids = [...created.keys()].sort((a, b) => a - b)
        await inParallel(ids.length, concurrency, async (i) => {
          const id = ids[i] as number
          const [first, second] = i % 2 === 0 ? bases : [...bases].reverse()
          if (i % 10 === 0) {
            assert.equal((await request(first as string, 'DELETE', `/items/${id}`)).status, 204)
            assert.equal((await request(second as string, 'GET', `/items/${id}`)).status, 404)
            created.delete(id)
          } else if (i % 4 === 0) {
            const patch = await request(first as string, 'PATCH', `/items/${id}`, { price: 1000 + i })
            assert.equal(patch.status, 200)
            const get = await request(second as string, 'GET', `/items/${id}`)
            assert.equal(get.json.price, 1000 + i)
            created.set(id, get.json)
          }
        })

        const expected = [...created.keys()].sort((a, b) => a - b)
        assert.equal(expected.length, writes - writes / 10)
        for (const base of bases) assert.deepEqual(await listIds(base), expected, `LIST through ${base}`)
        const { rows } = await sql<{ count: string }>`select count(*) as count from items`.execute(database.db)
        assert.equal(Number(rows[0]?.count), expected.length)
        const stored = await database.db.selectFrom('items').select(['id', 'price']).orderBy('id').execute()
        assert.deepEqual(
          stored.map((row) => [row.id, row.price]),
          expected.map((id) => [id, created.get(id)?.price])
        )
      }
    )
  })
}
