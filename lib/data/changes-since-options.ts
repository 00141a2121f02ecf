import { invalidOption as fail } from '../errors.js'
import { checkHistory } from './history-options.js'
import type { HistoryResolution, ResolvedHistory } from './history-options.js'

// The gate of `GET {prefix}?changed_since=` (issue 40, item 5): on when `changes: true`, read from the history table
// `history` names (issue 39). The `changes` option itself (and the live feed it also turns on) is defined with the
// feed; this small reading of it is what the sync needs until both land together.

/** What `changed_since` reads: the history table, when `changes` is on. */
export interface ChangesSinceResolution {
  readonly changesSince: { readonly historyTable: string } | undefined
}

/**
 * Checks `changes` (a boolean; `true` needs `history`, already checked) and answers what `changed_since` reads, or
 * `undefined` when it is off.
 *
 * @example
 * ```ts
 * checkChangesSince(true, checkHistory(true)) // { changesSince: { historyTable: 'viewset_history' } }
 * checkChangesSince(true, undefined)          // throws: changes needs history
 * ```
 */
export function checkChangesSince (changes: unknown, history: ResolvedHistory | undefined): ChangesSinceResolution {
  if (changes !== undefined && typeof changes !== 'boolean') fail('changes', 'expected a boolean')
  if (changes !== true) return { changesSince: undefined }
  if (history === undefined) {
    fail('changes', 'needs history: the changes are read from the history table (set history: true as well)')
  }
  return { changesSince: Object.freeze({ historyTable: history.table }) }
}

/**
 * The checked `history` and `changes` options together (`changes` reads what `history` resolved).
 *
 * @example
 * ```ts
 * checkHistoryAndChanges({ history: true, changes: true }) // { history: { table: 'viewset_history', … }, … }
 * ```
 */
export function checkHistoryAndChanges (
  options: Record<string, unknown>
): HistoryResolution & ChangesSinceResolution {
  const history = checkHistory(options.history)
  return { history, ...checkChangesSince(options.changes, history) }
}
