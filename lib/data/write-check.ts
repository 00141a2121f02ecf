import type { ColumnInfo, WriteTarget } from '../dialect/dialect.js'
import type { AnyDatabase, Row } from '../sql.js'
import { outsideRule } from '../errors.js'
import type { ScopeCondition } from '../query/scope.js'

// A write's `WITH CHECK` (PostgreSQL's row-level security term): the rows a write stored must satisfy the
// viewset's rule for the method, or the write is refused. Run in the write's transaction, after the write and
// before the commit, so no other writer can slip between the write and the check; the 403 rolls it back.

const keysPerCheck = 500

/** The rows a write stored, each to be checked against a rule (`undefined`: none applies to it). */
export interface WrittenRows {
  readonly rows: readonly Row[]
  /** The rule each row must satisfy, by index: a created row and an updated one may answer to different rules. */
  readonly ruleOf: (index: number) => ScopeCondition | undefined
  /** A bulk write: the 403 names its first element outside the rule. */
  readonly bulk: boolean
}

/**
 * Throws the 403 of {@link outsideRule} unless every written row is in its rule: one `SELECT key … WHERE key IN
 * (…) AND rule` per rule, whatever the number of rows. `keyOf` makes driver values comparable (dialect values).
 *
 * @example
 * ```ts
 * await checkWritten(trx, target, keyOf, { rows: [row], ruleOf: () => scope, bulk: false })
 * ```
 */
export async function checkWritten (
  db: AnyDatabase,
  target: Pick<WriteTarget, 'table' | 'key'>,
  keyOf: (value: unknown) => unknown,
  written: WrittenRows
): Promise<void> {
  const { table, key } = target
  const byRule = new Map<ScopeCondition, number[]>()
  written.rows.forEach((_row, index) => {
    const rule = written.ruleOf(index)
    if (rule === undefined) return
    const indexes = byRule.get(rule)
    if (indexes === undefined) byRule.set(rule, [index])
    else indexes.push(index)
  })
  const outside: number[] = []
  for (const [rule, all] of byRule) {
    // Cut so that the keys and the rule's values stay under every database's parameter limit.
    for (let start = 0; start < all.length; start += keysPerCheck) {
      const indexes = all.slice(start, start + keysPerCheck)
      const keys = indexes.map((index) => key.of(written.rows[index] ?? {}))
      const admitted = await db
        .selectFrom(table)
        .select(key.columns)
        .where(key.matchAny(keys))
        .where(rule.where)
        .execute()
      const seen = new Set(admitted.map((row) => key.mapKeyOf(row, keyOf)))
      for (const index of indexes) if (!seen.has(key.mapKeyOf(written.rows[index] ?? {}, keyOf))) outside.push(index)
    }
  }
  if (outside.length === 0) return
  throw outsideRule(written.bulk ? Math.min(...outside) : undefined)
}

/** Runs `work` in `db` when it is a transaction already, else in a transaction of its own. */
export async function inTransaction<T> (db: AnyDatabase, work: (trx: AnyDatabase) => Promise<T>): Promise<T> {
  return db.isTransaction ? await work(db) : await db.transaction().execute(work)
}

/**
 * Runs the write of one row in a transaction (`db`'s, or one of its own) and checks the row it answers against
 * `check` before the commit; no row (a 404 to come) is not checked.
 */
export async function checkedWrite<R extends Row | undefined> (
  db: AnyDatabase,
  target: Pick<WriteTarget, 'table' | 'key'>,
  keyOf: (value: unknown) => unknown,
  check: ScopeCondition,
  write: (trx: AnyDatabase) => R | Promise<R>
): Promise<R> {
  return await inTransaction(db, async (trx) => {
    const row = await write(trx)
    if (row !== undefined) await checkWritten(trx, target, keyOf, { rows: [row], ruleOf: () => check, bulk: false })
    return row
  })
}

/**
 * Whether a write of `values` leaves every column `rule` reads as it was: the rule then holds after the write exactly
 * when it held before, which the write's own WHERE tested, so its check (a read, and a transaction) can be skipped.
 * Only when every name the rule reads is a column of the table (`catalog`): another name may be a whole-row reference.
 *
 * @example
 * ```ts
 * untouched(ownerRule, { price: 9 }, catalog) // true: the rule reads `owner` only
 * ```
 */
export function untouched (
  rule: ScopeCondition, values: Row, catalog: ReadonlyMap<string, ColumnInfo> | undefined
): boolean {
  const reads = rule.reads
  if (reads === undefined || catalog === undefined) return false
  for (const name of reads) if (!catalog.has(name) || Object.hasOwn(values, name)) return false
  return true
}
