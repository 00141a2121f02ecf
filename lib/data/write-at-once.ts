import type { WriteTarget } from '../dialect/dialect.js'
import { keyAndScope, scopeShape } from '../dialect/shared/write-shapes.js'
import type { ScopeCondition } from '../query/scope.js'
import type { AnyDatabase, Row } from '../sql.js'
import { andThen } from '../execution/eventually.js'
import type { Eventually } from '../execution/eventually.js'
import { runSynchronously } from '../execution/sync-transaction.js'
import type { AfterRow } from './gateway-results.js'
import { readBack } from './history-writer.js'

// What a write of one row reads first, and how it runs at once: one whose afterWrite is the history alone (on
// SQLite) has its row read, written and recorded in one synchronous transaction (execution/sync-transaction.ts)
// instead of Kysely's, with the same statements.

/**
 * Reads the row (`read`, in the write's scope), writes it (`write`, given the row read) and runs `now` (an AfterRow's
 * synchronous form) with both, at once, all or none; the row written, or `undefined` when there is none (nothing
 * written). `undefined` (not `{ value }`), having run nothing, where `db` has no synchronous transaction now.
 *
 * @example
 * ```ts
 * const done = writeAtOnce(db, (trx) => find(trx, id), (trx, row) => update(trx, id, values), after.now)
 * if (done !== undefined) return done.value
 * ```
 */
export function writeAtOnce (
  db: AnyDatabase,
  read: (trx: AnyDatabase) => Eventually<Row | undefined>,
  write: (trx: AnyDatabase, row: Row) => Eventually<Row | undefined>,
  now: NonNullable<AfterRow['now']>
): { value: Row | undefined } | undefined {
  return runSynchronously(db, (trx) => andThen(read(trx), (row) => row === undefined
    ? undefined
    : andThen(write(trx, row), (written) => written === undefined
      ? undefined
      : andThen(now(trx, row, readBack(written)), () => written))))
}

/** How a write reads its row first: every column (for the history's `before`), and locked (`FOR UPDATE`). */
export interface FirstRead {
  readonly whole: boolean
  readonly lock: boolean
}

/**
 * The row a write of one row reads first, by key in the scope, in its transaction: locked where the database has
 * row locks (SQLite has one writer, so its transaction is enough); `undefined` when there is none.
 *
 * @example
 * ```ts
 * const row = await firstRead(trx, target, { whole: true, lock: true }, 7, scope)
 * ```
 */
export function firstRead (
  trx: AnyDatabase,
  { table, key, columns, statements }: WriteTarget,
  { whole, lock }: FirstRead,
  id: unknown,
  scope: ScopeCondition | undefined
): Eventually<Row | undefined> {
  return andThen(statements.rows(trx, `${lock ? 'lock' : 'find'} ${scopeShape(scope)}`, keyAndScope(key, id, scope),
    () => {
      const from = trx.selectFrom(table)
      const keyed = (whole ? from.selectAll() : from.select(columns)).where(key.match(id))
      const select = scope === undefined ? keyed : keyed.where(scope.where)
      return lock ? select.forUpdate() : select
    }), ([row]) => row)
}
