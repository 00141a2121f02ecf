import { invalidOption as fail } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'

// The gate of `GET {prefix}?changed_since=` (issue 40, item 5): on when `changes: true`, read from the history table
// `history` names (issue 39). The `changes` option itself (and the live feed it also turns on) is defined with the
// feed; this small reading of it is what the sync needs until both land together.

/** The default history table (issue 39's pinned layout). */
export const defaultHistoryTable = 'viewset_history'

/** What `changed_since` reads: the history table, when `changes` is on. */
export interface ChangesSinceResolution {
  readonly changesSince: { readonly historyTable: string } | undefined
}

/** The history table `history` names: `true` takes the default, `{ table }` another; `undefined` when off. */
function historyTableOf (history: unknown): string | undefined {
  if (history === undefined || history === false) return undefined
  if (history === true) return defaultHistoryTable
  if (!isRecord(history)) return fail('history', 'expected true or { table, actor, createTable }')
  const table = history.table ?? defaultHistoryTable
  if (typeof table !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) {
    return fail('history.table', 'expected a table name (letters, digits and _)')
  }
  return table
}

/**
 * Checks `changes` (a boolean; `true` needs `history`) and answers what `changed_since` reads, or `undefined` when
 * it is off.
 *
 * @example
 * ```ts
 * checkChangesSince({ changes: true, history: true }) // { changesSince: { historyTable: 'viewset_history' } }
 * checkChangesSince({ changes: true })                // throws: changes needs history
 * ```
 */
export function checkChangesSince (options: Record<string, unknown>): ChangesSinceResolution {
  const { changes } = options
  if (changes !== undefined && typeof changes !== 'boolean') fail('changes', 'expected a boolean')
  const historyTable = historyTableOf(options.history)
  if (changes !== true) return { changesSince: undefined }
  if (historyTable === undefined) {
    fail('changes', 'needs history: the changes are read from the history table (set history: true as well)')
  }
  return { changesSince: Object.freeze({ historyTable }) }
}
