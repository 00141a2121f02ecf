import { invalidOption as fail } from '../errors.js'

// The `idempotency` option (issue 38, item 5): `Idempotency-Key` on the viewset's POST and PATCH routes, the
// first completed answer of each key stored in a table the library owns (data/idempotency-store.ts).

/**
 * The `idempotency` option's object form; `idempotency: true` takes every default.
 *
 * @example
 * ```ts
 * createViewset({ db, table: 'orders', schema: Order, idempotency: { table: 'order_keys', createTable: true } })
 * ```
 */
export interface IdempotencyOptions {
  /** The table of keys and stored answers (default `viewset_idempotency_keys`; the README gives its migration). */
  readonly table?: string
  /** Creates the table at startup when it is missing (default false: a missing table fails `ready()`). */
  readonly createTable?: boolean
  /** Milliseconds a stored answer is replayed for (default 86,400,000: 24 hours); expired keys are pruned. */
  readonly retention?: number
  /** Milliseconds a request holds its key while in flight (default 60,000): a crashed request's key frees then. */
  readonly lease?: number
}

/** The `idempotency` option with its defaults applied. */
export interface ResolvedIdempotency {
  readonly table: string
  readonly createTable: boolean
  readonly retention: number
  readonly lease: number
}

/** The checked options' `idempotency`: `undefined` when it is off. */
export interface IdempotencyResolution {
  readonly idempotency: ResolvedIdempotency | undefined
}

/** The default table of keys. */
export const defaultIdempotencyTable = 'viewset_idempotency_keys'

const keys = ['table', 'createTable', 'retention', 'lease']

/** A positive whole number of milliseconds, or the default. */
function milliseconds (option: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    fail(option, 'expected a positive integer (milliseconds)')
  }
  return value
}

/**
 * Checks `idempotency` (`true`, `false` or an {@link IdempotencyOptions}) and applies its defaults; `undefined`
 * when it is off.
 *
 * @example
 * ```ts
 * checkIdempotency(true) // { table: 'viewset_idempotency_keys', createTable: false, retention: 86400000, … }
 * ```
 */
export function checkIdempotency (value: unknown): ResolvedIdempotency | undefined {
  if (value === undefined || value === false) return undefined
  if (value !== true && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    fail('idempotency', 'expected true or { table, createTable, retention, lease }')
  }
  const given: Record<string, unknown> = value === true ? {} : { ...value }
  for (const key of Object.keys(given)) {
    if (!keys.includes(key)) fail(`idempotency.${key}`, `unknown key; the keys are ${keys.join(', ')}`)
  }
  const table = given.table ?? defaultIdempotencyTable
  if (typeof table !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(table)) {
    fail('idempotency.table', 'expected a table name (letters, digits and _)')
  }
  if (typeof (given.createTable ?? false) !== 'boolean') fail('idempotency.createTable', 'expected a boolean')
  return Object.freeze({
    table,
    createTable: given.createTable === true,
    retention: milliseconds('idempotency.retention', given.retention, 86_400_000),
    lease: milliseconds('idempotency.lease', given.lease, 60_000),
  })
}
