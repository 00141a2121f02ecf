import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import { readWatch } from '../../lib/dialect/shared/read-watch.js'

// The read timeout of a pooled connection (dialect/shared/read-watch.ts): one timer per connection, not per query.
// test/security/half-open.test.ts proves it end to end on PostgreSQL (a frozen connection answers 503, the pool
// recovers); these pin its timing.

test('a query without an answer expires the connection once, a look (a quarter of the timeout, 100 ms or more) after it', async () => {
  const expiries: number[] = []
  const start = performance.now()
  const watch = readWatch(200, () => { expiries.push(performance.now() - start) })
  watch.start()
  await sleep(400)
  assert.equal(expiries.length, 1)
  assert.ok((expiries[0] ?? 0) >= 200 && (expiries[0] ?? 0) <= 390, `expired after ${expiries[0]} ms`)
  assert.equal(watch.expired, true)
  // Later queries on a given-up connection change nothing: it is closed already.
  watch.settle()
  watch.start()
  await sleep(350)
  assert.equal(expiries.length, 1)
})

test('queries that are answered never expire the connection, however long it stays busy', async () => {
  let expired = false
  const watch = readWatch(150, () => { expired = true })
  // Busy for 600 ms (4 timeouts) with one query always running, each answered after 30 ms.
  watch.start()
  for (let round = 0; round < 20; round++) {
    await sleep(30)
    watch.start()
    watch.settle()
  }
  watch.settle()
  assert.equal(expired, false)
  assert.equal(watch.expired, false)
})

test('an idle connection is never expired, and a query after a long idle time gets the whole timeout', async () => {
  let expired = false
  const watch = readWatch(150, () => { expired = true })
  watch.start()
  watch.settle()
  await sleep(400)
  assert.equal(expired, false)
  watch.start()
  await sleep(100)
  watch.settle()
  await sleep(200)
  assert.equal(expired, false)
})

test('a busy watch does not keep the process alive', () => {
  // A process whose only work left is a watched query (a connection the pool is closing) exits at once.
  const script = "const { readWatch } = await import('./lib/dialect/shared/read-watch.ts'); readWatch(60000, () => {}).start()"
  const start = performance.now()
  execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 20_000 })
  assert.ok(performance.now() - start < 15_000)
})
