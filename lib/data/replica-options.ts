import { invalidOption as fail } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'

/**
 * The `replica` option: how LIST and GET, and their relations, choose between `readDb` and `db`. Every figure is
 * in milliseconds.
 *
 * @example
 * ```ts
 * const replica: ReplicaOptions = { readAfterWrite: 10_000, maxLag: 2000, checkInterval: 1000, retryAfter: 5000 }
 * ```
 */
export interface ReplicaOptions {
  /**
   * After a write, its client reads from `db` for this long (default 5000), told by a `viewset-read-after-write`
   * cookie; `false` for never. At least `maxLag + checkInterval`.
   */
  readAfterWrite?: number | false
  /** Reads go to `db` while the replica is further behind than this (default 1000). */
  maxLag?: number
  /** The replica's lag is measured at most once per this interval, per process (default 1000). */
  checkInterval?: number
  /** A replica that failed to answer is asked again after this long; reads go to `db` meanwhile (default 5000). */
  retryAfter?: number
}

/** The `replica` option with its defaults applied: how reads choose between `readDb` and `db`. */
export interface ReplicaPlan {
  /** Milliseconds after a write during which its client reads from `db`; 0 when off. */
  readonly readAfterWrite: number
  /** Past this lag (ms), reads go to `db`. */
  readonly maxLag: number
  /** The lag is measured at most once per this many ms per process. */
  readonly checkInterval: number
  /** A replica that failed to answer is asked again after this many ms; reads go to `db` meanwhile. */
  readonly retryAfter: number
}

const replicaKeys = ['readAfterWrite', 'maxLag', 'checkInterval', 'retryAfter'] as const

const defaults: ReplicaPlan = { readAfterWrite: 5000, maxLag: 1000, checkInterval: 1000, retryAfter: 5000 }

/** A whole number of milliseconds, at least `least`. */
function milliseconds (key: string, value: unknown, least: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < least) {
    fail(`replica.${key}`, `expected a whole number of milliseconds, at least ${least}`)
  }
  return value
}

/**
 * The `replica` option checked, defaults applied; `undefined` without `readDb` (reads go to `db` anyway). The
 * read-after-write window must outlast the largest lag served plus the time a measure can be old, or a client
 * could read from a replica that has not yet replayed its write.
 *
 * @example
 * ```ts
 * checkReplicaOptions({ readAfterWrite: 3000 }, true) // { readAfterWrite: 3000, maxLag: 1000, … }
 * ```
 */
export function checkReplicaOptions (value: unknown, hasReadDb: boolean): ReplicaPlan | undefined {
  if (value === undefined) return hasReadDb ? defaults : undefined
  if (!hasReadDb) fail('replica', 'applies to reads from readDb: set readDb too, or remove replica')
  if (!isRecord(value)) fail('replica', 'expected an object such as { readAfterWrite: 5000, maxLag: 1000 }')
  for (const key of Object.keys(value)) {
    if (!replicaKeys.some((known) => known === key)) {
      fail(`replica.${key}`, `unknown key; the keys are ${replicaKeys.join(', ')}`)
    }
  }
  const window = value.readAfterWrite ?? defaults.readAfterWrite
  const readAfterWrite = window === false ? 0 : milliseconds('readAfterWrite', window, 1)
  const plan: ReplicaPlan = {
    readAfterWrite,
    maxLag: milliseconds('maxLag', value.maxLag ?? defaults.maxLag, 0),
    checkInterval: milliseconds('checkInterval', value.checkInterval ?? defaults.checkInterval, 1),
    retryAfter: milliseconds('retryAfter', value.retryAfter ?? defaults.retryAfter, 1),
  }
  if (readAfterWrite !== 0 && readAfterWrite < plan.maxLag + plan.checkInterval) {
    fail(
      'replica.readAfterWrite',
      `${readAfterWrite} ms is shorter than maxLag + checkInterval (${plan.maxLag + plan.checkInterval} ms): ` +
        'a client could read from a replica that has not replayed its write'
    )
  }
  return Object.freeze(plan)
}
