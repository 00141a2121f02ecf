import { sql } from 'kysely'
import type { ViewsetDialect, WriteTarget } from '../dialect/dialect.js'
import { inFieldOrder, sentFields } from '../dialect/shared/write-shapes.js'
import type { Condition } from '../query/condition.js'
import type { ScopeCondition } from '../query/scope.js'
import type { AnyDatabase, Row } from '../sql.js'
import { parametersOf, shapeOf } from './condition-shape.js'
import { padList } from './statement-cache.js'

// Writes of many rows by filter (PATCH_MANY, DELETE_MANY) and by key list (BULK_PATCH), in the caller's transaction.
// The rows a filter reaches are read first, at most `limit` of them, locked where the database has row locks: the
// request then knows, before it writes anything, whether it stays within its bound (`max-affected`), and afterWrite
// gets each row before and after. Every later statement names those keys only, so no row the read did not lock (and
// the rule did not admit) is ever written. MariaDB has no UPDATE … RETURNING: the rows are read back by key instead,
// alike on every dialect. Each statement is compiled once per shape (the target's statement cache), its key lists
// padded to a power of two so that a few lengths share one SQL text.

/** Keys per statement: far under every database's parameter limit, with the values sent beside them. */
const keysPerStatement = 500

/** What the rows of a write by filter must match: the request's filters and its rule, and how many to read at most. */
export interface MatchingRows {
  readonly conditions: readonly Condition[]
  readonly scope: ScopeCondition | undefined
  /** The most rows read: one more than the request may change, so that a request past its bound is told. */
  readonly limit: number
  /** Read every column of the table, not the schema's only (the history's `before`). */
  readonly whole?: boolean
}

/** `keys` cut into lists of at most {@link keysPerStatement}, each padded (statement-cache.ts `padList`). */
function cut (keys: readonly unknown[]): Array<readonly unknown[]> {
  const lists: Array<readonly unknown[]> = []
  for (let start = 0; start < keys.length; start += keysPerStatement) {
    lists.push(padList(keys.slice(start, start + keysPerStatement)))
  }
  return lists
}

/**
 * The rows matching the filters and the rule, at most `limit`, in key order, locked until the transaction ends
 * (`SELECT … FOR UPDATE`; SQLite has one writer, so its transaction is enough). Heavy: a filter may read many rows.
 *
 * @example
 * ```ts
 * const rows = await lockMatching(trx, dialect, target, { conditions, scope, limit: maxAffected + 1 })
 * ```
 */
export async function lockMatching (
  trx: AnyDatabase,
  dialect: ViewsetDialect,
  target: WriteTarget,
  { conditions, scope, limit, whole = false }: MatchingRows
): Promise<Row[]> {
  const terms = scope === undefined ? conditions : [scope, ...conditions]
  const lock = dialect.capabilities.rowLocks
  const parameters = [...parametersOf(terms), limit]
  const shape = `bulk-match ${String(lock)} ${String(whole)} ${shapeOf(terms)}`
  const { rows } = await target.statements.execute(trx, shape, parameters, () => {
    const from = trx.selectFrom(target.table)
    const select = (whole ? from.selectAll() : from.select(target.columns))
      .where((eb) => eb.and(terms.map((term) => term.expression(eb))))
      .orderBy(target.key.ordered()).limit(limit)
    return lock ? select.forUpdate() : select
  }, false, 'unbounded')
  return rows
}

/** The rows with these keys in the rule, locked as {@link lockMatching} locks them, in no particular order. */
export async function lockKeys (
  trx: AnyDatabase,
  dialect: ViewsetDialect,
  target: WriteTarget,
  keys: readonly unknown[],
  scope: ScopeCondition | undefined
): Promise<Row[]> {
  const lock = dialect.capabilities.rowLocks
  const rows: Row[] = []
  for (const list of cut(keys)) {
    const shape = `bulk-lock-keys ${String(lock)} ${list.length} ${scope?.shape ?? ''}`
    const keyed = target.key.parameters(list)
    const parameters = scope === undefined ? keyed : [...keyed, ...scope.parameters]
    const found = await target.statements.rows(trx, shape, parameters, () => {
      const select = trx.selectFrom(target.table).select(target.columns).where(target.key.matchAny(list))
      const ruled = scope === undefined ? select : select.where(scope.where)
      return lock ? ruled.forUpdate() : ruled
    })
    rows.push(...found)
  }
  return rows
}

/**
 * Sets `values` on the rows with these keys (as the dialect binds them), and increments the version column when
 * there is one, so every row written gets a new ETag.
 */
export async function updateKeys (
  trx: AnyDatabase,
  dialect: ViewsetDialect,
  target: WriteTarget,
  keys: readonly unknown[],
  { values, versionField }: { readonly values: Row, readonly versionField: string | undefined }
): Promise<void> {
  const bound = dialect.writes.bindable?.(target, values) ?? values
  const { fields, shape, parameters } = sentFields(bound)
  if (fields.length === 0 && versionField === undefined) return
  const bump = versionField === undefined ? {} : { [versionField]: sql`coalesce(${sql.ref(versionField)}, 0) + 1` }
  for (const list of cut(keys)) {
    await target.statements.execute(trx, `bulk-update ${shape} ${versionField ?? ''} ${list.length}`,
      [...parameters, ...target.key.parameters(list)],
      () => trx.updateTable(target.table).set({ ...inFieldOrder(fields, bound), ...bump })
        .where(target.key.matchAny(list)))
  }
}

/** Deletes the rows with these keys. */
export async function deleteKeys (trx: AnyDatabase, target: WriteTarget, keys: readonly unknown[]): Promise<void> {
  for (const list of cut(keys)) {
    await target.statements.execute(trx, `bulk-delete ${list.length}`, target.key.parameters(list),
      () => trx.deleteFrom(target.table).where(target.key.matchAny(list)))
  }
}

/** The rows with these keys as stored, in the order of `keys` (`keyOf` makes driver values comparable). */
export async function readKeys (
  trx: AnyDatabase,
  target: WriteTarget,
  keys: readonly unknown[],
  keyOf: (value: unknown) => unknown
): Promise<Row[]> {
  const found = new Map<unknown, Row>()
  for (const list of cut(keys)) {
    const rows = await target.statements.rows(trx, `bulk-read ${list.length}`, target.key.parameters(list),
      () => trx.selectFrom(target.table).select(target.columns).where(target.key.matchAny(list)))
    for (const row of rows) found.set(target.key.mapKeyOf(row, keyOf), row)
  }
  return keys.flatMap((key) => {
    const row = found.get(target.key.mapKey(key, keyOf))
    return row === undefined ? [] : [row]
  })
}
