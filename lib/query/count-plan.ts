import { invalidOption, ViewsetErrors } from '../errors.js'
import { queryParameterError } from './condition.js'

/** How a LIST may count its matching rows: exactly or by estimate (`true`), estimates only, or not at all. */
export type AllowCount = boolean | 'estimated'

/** How a count is asked for in a `Prefer` header (`count=exact`, `count=estimated`), as PostgREST spells it. */
export type CountPreference = 'exact' | 'estimated'

/** The count options of a viewset, checked: what LIST counts and when an estimate stands for the count. */
export interface CountPlan {
  readonly allow: AllowCount
  /** `alwaysCount`: every LIST answers `X-Total-Count`. */
  readonly always: boolean
  /** An estimate at or above this is answered as it is; below it the rows are counted. */
  readonly threshold: number
  /** Estimate on a request a row rule restricts (the planner's statistics span every tenant). */
  readonly withRules: boolean
}

/** What a LIST request asks of its count, once checked against the {@link CountPlan}. */
export interface CountAsk {
  readonly count: boolean
  /** The count may be the planner's estimate (`Prefer: count=estimated`, or `allowCount: 'estimated'`). */
  readonly estimate: boolean
}

/** Default of `countEstimateThreshold`: below it an exact count is cheap enough, and an estimate's error shows most. */
export const defaultEstimateThreshold = 100_000

/**
 * Checks `allowCount`, `countEstimateThreshold`, `estimateWithRules` and `alwaysCount` (phase 1): a wrong value or an
 * `alwaysCount` that `allowCount: false` forbids throws `FST_VIEWSET_INVALID_OPTION`.
 *
 * @example
 * ```ts
 * checkCountOptions({ allowCount: 'estimated', countEstimateThreshold: 10_000 })
 * // { allow: 'estimated', always: false, threshold: 10000, withRules: false }
 * ```
 */
export function checkCountOptions (options: Record<string, unknown>): CountPlan {
  const { allowCount = true, alwaysCount = false, countEstimateThreshold, estimateWithRules = false } = options
  if (typeof allowCount !== 'boolean' && allowCount !== 'estimated') {
    invalidOption('allowCount', "expected true, false or 'estimated'")
  }
  if (typeof alwaysCount !== 'boolean') invalidOption('alwaysCount', 'expected a boolean')
  if (alwaysCount && allowCount === false) invalidOption('alwaysCount', 'cannot be true when allowCount is false')
  if (typeof estimateWithRules !== 'boolean') invalidOption('estimateWithRules', 'expected a boolean')
  const threshold = countEstimateThreshold ?? defaultEstimateThreshold
  if (typeof threshold !== 'number' || !Number.isSafeInteger(threshold) || threshold < 0) {
    invalidOption('countEstimateThreshold', 'expected a non-negative integer')
  }
  return Object.freeze({ allow: allowCount, always: alwaysCount, threshold, withRules: estimateWithRules })
}

/**
 * What a LIST asks of its count: `?count=true`, `alwaysCount` or a `Prefer: count=…` (which decides between exact and
 * estimated when both are sent). A count the viewset does not give is a 400 that names `allowCount`.
 */
export function askedCount (
  plan: CountPlan,
  countParameter: boolean,
  preferred: CountPreference | undefined
): CountAsk {
  const count = plan.always || countParameter || preferred !== undefined
  if (!count) return { count, estimate: false }
  if (plan.allow === false) {
    if (countParameter) throw queryParameterError('count', 'is not offered by this list (allowCount: false)')
    throw new ViewsetErrors.BadRequest(
      `Prefer: count=${String(preferred)} is not offered by this list (allowCount: false)`
    )
  }
  if (plan.allow === 'estimated') {
    if (preferred === 'exact') {
      throw new ViewsetErrors.BadRequest(
        "Prefer: count=exact is not offered by this list (allowCount: 'estimated'): send Prefer: count=estimated"
      )
    }
    return { count, estimate: true }
  }
  return { count, estimate: preferred === 'estimated' }
}
