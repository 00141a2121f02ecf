import { cacheChannel } from '../observability/channels.js'
import type { CacheEvent } from '../observability/channels.js'

/** A named cache's messages, built once: publishing allocates nothing. */
interface CacheEvents { readonly hit: CacheEvent, readonly miss: CacheEvent, readonly eviction: CacheEvent }

function eventsOf (cache: string): CacheEvents {
  return Object.freeze({
    hit: Object.freeze({ cache, event: 'hit' }),
    miss: Object.freeze({ cache, event: 'miss' }),
    eviction: Object.freeze({ cache, event: 'eviction' }),
  })
}

/**
 * A map that holds at most `max` entries and drops the least recently used one first: the one bounded
 * cache of the library (compiled LIST shapes, `?fields=` serializers, SQLite statements, PostgreSQL statement names),
 * as the execution contract asks (eventually.ts, 5). A hit moves the entry to the back of the Map's insertion order;
 * a miss costs one lookup. A cache given a `name` publishes its hits, misses and evictions on `fastify-viewsets:cache`
 * (channels.ts) while someone subscribes.
 *
 * @example
 * ```ts
 * const names = new LruCache<string, string>(256, (name) => { deallocate(name) })
 * names.set('select 1', 's1')
 * names.get('select 1') // 's1', now the most recently used
 * ```
 */
export class LruCache<K, V> {
  readonly #entries = new Map<K, V>()
  readonly #max: number
  readonly #onEvict: ((value: V, key: K) => void) | undefined
  /** The most recently used key: a hit on it has nothing to move (a Map delete and set cost more than the lookup). */
  #newest: K | undefined
  readonly #events: CacheEvents | undefined

  /** `onEvict` runs for each entry pushed out by {@link set} (not for {@link clear}); `name` labels its events. */
  constructor (max: number, onEvict?: (value: V, key: K) => void, name?: string) {
    this.#max = Math.max(1, max)
    this.#onEvict = onEvict
    this.#events = name === undefined ? undefined : eventsOf(name)
  }

  get size (): number {
    return this.#entries.size
  }

  get (key: K): V | undefined {
    const value = this.#entries.get(key)
    if (this.#events !== undefined && cacheChannel.hasSubscribers) {
      cacheChannel.publish(value === undefined ? this.#events.miss : this.#events.hit)
    }
    if (value !== undefined && key !== this.#newest) {
      this.#entries.delete(key)
      this.#entries.set(key, value)
      this.#newest = key
    }
    return value
  }

  has (key: K): boolean {
    return this.#entries.has(key)
  }

  set (key: K, value: V): void {
    if (!this.#entries.delete(key) && this.#entries.size >= this.#max) {
      const oldest = this.#entries.entries().next()
      if (oldest.done !== true) {
        const [oldKey, oldValue] = oldest.value
        this.#entries.delete(oldKey)
        this.#onEvict?.(oldValue, oldKey)
        if (this.#events !== undefined && cacheChannel.hasSubscribers) cacheChannel.publish(this.#events.eviction)
      }
    }
    this.#entries.set(key, value)
    this.#newest = key
  }

  clear (): void {
    this.#entries.clear()
    this.#newest = undefined
  }
}
