import { checkIdempotency } from '../data/idempotency-options.js'
import type { IdempotencyOptions, ResolvedIdempotency } from '../data/idempotency-options.js'
import { invalidOption } from '../errors.js'
import { checkKeys } from '../options.js'
import { isRecord } from '../schema/object-schema.js'

// viewsetBatch's options, checked once when the plugin is made (before anything is registered), defaults merged once,
// the caller's object never changed.

/**
 * The options of {@link viewsetBatch}. Unknown keys are refused, by the type and at startup.
 *
 * @example
 * ```ts
 * await app.register(viewsetBatch({ maxOperations: 50 } satisfies ViewsetBatchOptions))
 * ```
 */
export interface ViewsetBatchOptions {
  /** At most this many operations in one batch (default 100): more is a 400 naming `/operations`, nothing run. */
  readonly maxOperations?: number
  /**
   * `Idempotency-Key` on `POST /batch` (default off), as the viewset option `idempotency`: the same table and
   * options; a retry of the same batch answers its stored 200 without running it again.
   */
  readonly idempotency?: boolean | IdempotencyOptions
}

/** The options with their defaults. */
export interface ResolvedBatchOptions {
  readonly maxOperations: number
  /** `undefined` when off. */
  readonly idempotency: ResolvedIdempotency | undefined
}

/** Every key of ViewsetBatchOptions: a key missing here fails to compile (below). */
const batchOptionKeys = ['maxOperations', 'idempotency'] as const satisfies ReadonlyArray<keyof ViewsetBatchOptions>
type UnlistedKey = Exclude<keyof ViewsetBatchOptions, (typeof batchOptionKeys)[number]>
const everyKeyListed: [UnlistedKey] extends [never] ? true : UnlistedKey = true
void everyKeyListed

/** The default of `maxOperations`: the bound on one batch. */
export const defaultMaxOperations = 100

/** The most `maxOperations` may be: one batch holds one connection and one transaction for all its operations. */
const maxMaxOperations = 10_000

/**
 * viewsetBatch's options checked (a wrong one throws `FST_VIEWSET_INVALID_OPTION` naming it), with defaults.
 *
 * @example
 * ```ts
 * resolveBatchOptions({}) // { maxOperations: 100, idempotency: undefined }
 * ```
 */
export function resolveBatchOptions (options: unknown): ResolvedBatchOptions {
  if (options === undefined) return { maxOperations: defaultMaxOperations, idempotency: undefined }
  if (!isRecord(options)) return invalidOption('viewsetBatch', 'expected an object, such as { maxOperations: 50 }')
  checkKeys('viewsetBatch', options, batchOptionKeys)
  const { maxOperations = defaultMaxOperations } = options
  if (typeof maxOperations !== 'number' || !Number.isInteger(maxOperations) || maxOperations < 1 ||
    maxOperations > maxMaxOperations) {
    invalidOption('viewsetBatch.maxOperations', `expected an integer from 1 to ${maxMaxOperations}`)
  }
  let idempotency: ResolvedIdempotency | undefined
  try {
    idempotency = checkIdempotency(options.idempotency)
  } catch (error) {
    throw underBatch(error)
  }
  return Object.freeze({ maxOperations, idempotency })
}

/**
 * An error of the `idempotency` option's checks (shared with the viewset option), its message naming
 * `viewsetBatch.idempotency…` instead, so that a batch's misconfiguration names the batch's option.
 *
 * @example
 * ```ts
 * try { checkIdempotency(options.idempotency) } catch (error) { throw underBatch(error) }
 * ```
 */
export function underBatch (error: unknown): unknown {
  if (error instanceof Error && !error.message.includes('viewsetBatch.idempotency')) {
    error.message = error.message.replaceAll(/(?<![.\w])idempotency(?=[.:]| \{)/g, 'viewsetBatch.idempotency')
  }
  return error
}
