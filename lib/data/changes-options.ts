import { invalidOption as fail } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'

// The `changes` option (issue 40): a live feed of the rows' changes on the LIST URL (`Accept: text/event-stream`),
// read from the history table of the `history` option, which it needs.

/**
 * The `changes` option's object form; `changes: true` takes every default. README "Live changes".
 *
 * @example
 * ```ts
 * createViewset({ db, table: 'items', schema: Item, history: true, changes: { maxStreamsPerCaller: 3 } })
 * ```
 */
export interface ChangesOptions {
  /** Milliseconds between two reads of the history table (default 500; on PostgreSQL with a listener, 5,000: a
   * notification wakes the reader at once, the interval only backs it up). */
  readonly pollInterval?: number
  /** PostgreSQL: the URL the one `LISTEN` connection of the process opens (default: the URL `createDatabase` was
   * given); `false` polls instead (PgBouncer in transaction mode cannot `LISTEN`: name a direct URL, or poll). */
  readonly listen?: string | false
  /** Most streams open at once in the process (default 1,000): past it a 503 `FST_VIEWSET_TOO_MANY_STREAMS`. */
  readonly maxStreams?: number
  /** Most streams open at once per caller (token `sub`, else address; default 10): past it a 429. */
  readonly maxStreamsPerCaller?: number
  /** Milliseconds between two heartbeat comments (default 15,000). */
  readonly heartbeat?: number
  /** Bytes a stream may hold unsent (default 1 MiB): a client that reads slower is disconnected. */
  readonly sendBuffer?: number
  /** Milliseconds a stream may send no event before it ends (default 300,000; the client reconnects and resumes). */
  readonly idleTimeout?: number
  /** Milliseconds a stream may last (default 3,600,000; the client reconnects and resumes). */
  readonly maxLifetime?: number
  /**
   * `true` confirms that a subclass's `list` override restricts nothing its `scope` does not: the feed and
   * `changed_since` read rows through the rule, not through the override (default false: such a viewset fails).
   */
  readonly ignoreListOverride?: boolean
}

/** The `changes` option with its defaults applied. */
export interface ResolvedChanges {
  /** The history table the feed reads. */
  readonly historyTable: string
  readonly pollInterval: number | undefined
  readonly listen: string | false | undefined
  readonly maxStreams: number
  readonly maxStreamsPerCaller: number
  readonly heartbeat: number
  readonly sendBuffer: number
  readonly idleTimeout: number
  readonly maxLifetime: number
  readonly ignoreListOverride: boolean
}

/** The history table's default name (the `history` option's). */
export const defaultHistoryTable = 'viewset_history'

const keys = [
  'pollInterval', 'listen', 'maxStreams', 'maxStreamsPerCaller', 'heartbeat', 'sendBuffer', 'idleTimeout',
  'maxLifetime', 'ignoreListOverride',
]

/** A positive whole number, or the default. */
function positive (option: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    fail(option, 'expected a positive integer')
  }
  return value
}

/** The table the `history` option names (`true`: the default one); fails naming both options when it is off. */
function historyTableOf (history: unknown): string {
  if (history === true) return defaultHistoryTable
  if (isRecord(history)) {
    const { table } = history
    if (table === undefined) return defaultHistoryTable
    if (typeof table === 'string' && table !== '') return table
  }
  return fail('changes', 'needs the history option (history: true): the feed reads the history table')
}

/**
 * Checks `changes` (`true`, `false` or a {@link ChangesOptions}) against `history`, which it needs, and applies its
 * defaults; `undefined` when it is off.
 *
 * @example
 * ```ts
 * checkChanges(true, true, 'items') // { historyTable: 'viewset_history', maxStreams: 1000, … }
 * checkChanges(true, undefined, 'items') // throws: changes: needs the history option
 * ```
 */
export function checkChanges (value: unknown, history: unknown, table: string): ResolvedChanges | undefined {
  if (value === undefined || value === false) return undefined
  // The feed evaluates the rules on stored versions under the table's own name (data/version-match.ts).
  if (table.includes('.')) fail('changes', `needs a table named without its schema (${table})`)
  if (value !== true && !isRecord(value)) return fail('changes', 'expected true, false or an object')
  const given = isRecord(value) ? value : {}
  for (const key of Object.keys(given)) {
    if (!keys.includes(key)) fail(`changes.${key}`, `unknown key; the keys are ${keys.join(', ')}`)
  }
  const { listen } = given
  if (listen !== undefined && listen !== false && (typeof listen !== 'string' || !/^postgres(ql)?:\/\//.test(listen))) {
    fail('changes.listen', 'expected a postgres:// URL, or false to poll')
  }
  const historyTable = historyTableOf(history)
  return Object.freeze({
    historyTable,
    pollInterval: given.pollInterval === undefined
      ? undefined
      : positive('changes.pollInterval', given.pollInterval, 1),
    listen,
    maxStreams: positive('changes.maxStreams', given.maxStreams, 1000),
    maxStreamsPerCaller: positive('changes.maxStreamsPerCaller', given.maxStreamsPerCaller, 10),
    heartbeat: positive('changes.heartbeat', given.heartbeat, 15_000),
    sendBuffer: positive('changes.sendBuffer', given.sendBuffer, 1024 * 1024),
    idleTimeout: positive('changes.idleTimeout', given.idleTimeout, 300_000),
    maxLifetime: positive('changes.maxLifetime', given.maxLifetime, 3_600_000),
    ignoreListOverride: confirmed(given.ignoreListOverride),
  })
}

/** `ignoreListOverride`: a boolean, false by default. */
function confirmed (value: unknown): boolean {
  if (value === undefined || typeof value === 'boolean') return value === true
  return fail('changes.ignoreListOverride', 'expected true or false')
}

/**
 * Refuses a viewset whose subclass overrides `list` while `changes` is on, unless `ignoreListOverride` confirms it:
 * the feed and `changed_since` read rows through the rule (`scope`), so a restriction written only in the override
 * would not apply to them.
 *
 * @example
 * ```ts
 * refuseListOverride(resolved.changes, new Set(['list'])) // throws: changes: … move the restriction into scope …
 * ```
 */
export function refuseListOverride (changes: ResolvedChanges | undefined, overridden: ReadonlySet<string>): void {
  if (changes === undefined || changes.ignoreListOverride || !overridden.has('list')) return
  fail('changes', 'the feed and changed_since read rows through the rule (scope), not through your list override: ' +
    'move any restriction of the override into scope, or set changes: { ignoreListOverride: true } to confirm')
}
