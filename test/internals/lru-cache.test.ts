import assert from 'node:assert/strict'
import diagnosticsChannel from 'node:diagnostics_channel'
import { test } from 'node:test'
import { LruCache } from '../../lib/execution/lru-cache.js'

// The one bounded cache of the library (LIST shapes, parsed orderings, SQLite statements, PostgreSQL
// statement names): a hit on the newest entry skips the move, and the eviction order must not change.
test('LruCache evicts the least recently used entry, hits on the newest one included', () => {
  const evicted: string[] = []
  const cache = new LruCache<string, number>(2, (_value, key) => { evicted.push(key) })
  cache.set('a', 1)
  cache.set('b', 2)
  assert.equal(cache.get('b'), 2) // already the newest: nothing moves
  assert.equal(cache.get('a'), 1) // now the newest
  assert.equal(cache.get('a'), 1)
  cache.set('c', 3)
  assert.deepEqual(evicted, ['b'])
  assert.equal(cache.get('b'), undefined)
  assert.equal(cache.get('a'), 1)
  cache.set('d', 4)
  assert.deepEqual(evicted, ['b', 'c'])
  cache.clear()
  assert.equal(cache.size, 0)
  cache.set('e', 5)
  assert.equal(cache.get('e'), 5)
  assert.equal(cache.size, 1)
})

test('a named LruCache publishes its hits, misses and evictions on fastify-viewsets:cache; an unnamed one nothing', (t) => {
  const seen: unknown[] = []
  const listener = (message: unknown) => { seen.push(message) }
  diagnosticsChannel.subscribe('fastify-viewsets:cache', listener)
  t.after(() => diagnosticsChannel.unsubscribe('fastify-viewsets:cache', listener))
  const unnamed = new LruCache<string, number>(1)
  unnamed.set('a', 1)
  unnamed.get('a')
  unnamed.set('b', 2)
  assert.deepEqual(seen, [])
  const named = new LruCache<string, number>(1, undefined, 'compiled')
  named.get('a')
  named.set('a', 1)
  named.get('a')
  named.set('b', 2)
  assert.deepEqual(seen, [
    { cache: 'compiled', event: 'miss' },
    { cache: 'compiled', event: 'hit' },
    { cache: 'compiled', event: 'eviction' },
  ])
})
