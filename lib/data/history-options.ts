import { invalidOption as fail } from '../errors.js'
import type { RowContext } from '../write-hooks.js'
import type { AfterWriteMethod } from '../write-hooks.js'

// The `history` option (issue 39, item 3): every write of the viewset recorded, in its own transaction, in a table
// the library owns (data/history-table.ts), read by `GET {prefix}/{id}/history`, `?as_of=` and the change feed.

/**
 * Who wrote, from the write's context: a string, or `null` for nobody known.
 *
 * @example
 * ```ts
 * const actor: HistoryActor = ({ token, request }) => token?.email ?? request.ip
 * ```
 */
export type HistoryActor = (context: RowContext<AfterWriteMethod>) => string | null

/**
 * The `history` option's object form; `history: true` takes every default.
 *
 * @example
 * ```ts
 * const actor = ({ token }: RowContext<AfterWriteMethod>) => token?.email ?? null
 * createViewset({ db, table: 'orders', schema: Order, history: { createTable: true, actor } })
 * ```
 */
export interface HistoryOptions {
  /** The history table, one per app (default `viewset_history`; the README gives its migration per database). */
  readonly table?: string
  /** Who wrote (default: the token's `sub`, `null` without a token). */
  readonly actor?: HistoryActor
  /** Creates the table (and, on MySQL/MariaDB, its lock table) at startup when missing (default false). */
  readonly createTable?: boolean
}

/** The `history` option with its defaults applied. */
export interface ResolvedHistory {
  readonly table: string
  readonly actor: HistoryActor
  readonly createTable: boolean
}

/** The checked options' `history`: `undefined` when it is off. */
export interface HistoryResolution {
  readonly history: ResolvedHistory | undefined
}

/** The default history table. */
export const defaultHistoryTable = 'viewset_history'

const keys = ['table', 'actor', 'createTable']

/** The default actor: the token's subject. */
function subjectOf ({ token }: RowContext<AfterWriteMethod>): string | null {
  return typeof token?.sub === 'string' ? token.sub : null
}

/** Whether a value is an actor function. */
function isActor (value: unknown): value is HistoryActor {
  return typeof value === 'function'
}

/**
 * Checks `history` (`true`, `false` or a {@link HistoryOptions}) and applies its defaults; `undefined` when off.
 *
 * @example
 * ```ts
 * checkHistory(true) // { table: 'viewset_history', createTable: false, actor: (token's sub) }
 * ```
 */
export function checkHistory (value: unknown): ResolvedHistory | undefined {
  if (value === undefined || value === false) return undefined
  if (value !== true && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    fail('history', 'expected true or { table, actor, createTable }')
  }
  const given: Record<string, unknown> = value === true ? {} : { ...value }
  for (const key of Object.keys(given)) {
    if (!keys.includes(key)) fail(`history.${key}`, `unknown key; the keys are ${keys.join(', ')}`)
  }
  const table = given.table ?? defaultHistoryTable
  // The lock table's name (`<table>_locks`) must stay a valid identifier too.
  if (typeof table !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,56}$/.test(table)) {
    fail('history.table', 'expected a table name (letters, digits and _, at most 57 characters)')
  }
  if (typeof (given.createTable ?? false) !== 'boolean') fail('history.createTable', 'expected a boolean')
  const actor = given.actor ?? subjectOf
  if (!isActor(actor)) return fail('history.actor', 'expected a function of the write\'s context')
  return Object.freeze({ table, actor, createTable: given.createTable === true })
}
