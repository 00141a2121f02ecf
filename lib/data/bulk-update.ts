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
// padded to a power of two so that a few lengths share one SQL text. A PATCH_MANY that needs none of the rows (no
// rule, afterWrite, answer or beforeWrite) is one bounded UPDATE instead (`updateBounded`), where the database can.

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

/** What a write by filter in one statement sets, and on how many rows at most. */
export interface BoundedUpdate {
  /** The request's filters (no rule: a rule's WITH CHECK reads the rows written, in the write's transaction). */
  readonly conditions: readonly Condition[]
  /** The most rows it may change: past it, it changes none. */
  readonly most: number
  readonly values: Row
  readonly versionField: string | undefined
}

/**
 * `select 1 from <table> where <terms> limit 1 offset <most>`: a row when the terms select more than `most` rows, read
 * after at most `most + 1` of them (a count would read them all, a counted subquery costs SQLite twice the UPDATE).
 */
function pastBound (db: AnyDatabase, target: WriteTarget, conditions: readonly Condition[], most: number) {
  return db.selectFrom(target.table).select(sql.lit(1).as('viewset_one'))
    .where((eb) => eb.and(conditions.map((term) => term.expression(eb)))).limit(sql.lit(1)).offset(most)
}

/**
 * Sets `values` on every row the filters select, unless they select more than `most`, in one statement
 * (DialectCapabilities.boundedUpdate): `update … where <terms> and not exists (<a row past the bound>)`. The bound and
 * the write are then one atomic statement, with no transaction and no read before it (the hand-written UPDATE's cost,
 * where `lockMatching` and the UPDATE by keys took four statements). The version column is incremented as
 * {@link updateKeys} does. Answers how many rows changed, or `undefined` past the bound (nothing written); a statement
 * that changed none is told from one past its bound by asking for that row again.
 *
 * @example
 * ```ts
 * const changed = await updateBounded(db, dialect, target, { conditions, most: 1000, values, versionField })
 * ```
 */
export async function updateBounded (
  db: AnyDatabase,
  dialect: ViewsetDialect,
  target: WriteTarget,
  { conditions, most, values, versionField }: BoundedUpdate
): Promise<number | undefined> {
  const bound = dialect.writes.bindable?.(target, values) ?? values
  const { fields, shape, parameters } = sentFields(bound)
  const bump = versionField === undefined ? {} : { [versionField]: sql`coalesce(${sql.ref(versionField)}, 0) + 1` }
  const terms = parametersOf(conditions)
  const where = shapeOf(conditions)
  const { numAffectedRows } = await target.statements.execute(db,
    `bulk-update-bounded ${shape} ${versionField ?? ''} ${where}`, [...parameters, ...terms, ...terms, most],
    () => db.updateTable(target.table).set({ ...inFieldOrder(fields, bound), ...bump }).where((eb) => eb.and([
      ...conditions.map((term) => term.expression(eb)),
      eb.not(eb.exists(pastBound(db, target, conditions, most))),
    ])))
  const changed = Number(numAffectedRows ?? 0)
  if (changed > 0) return changed
  const past = await target.statements.rows(db, `bulk-past-bound ${where}`, [...terms, most],
    () => pastBound(db, target, conditions, most))
  return past.length > 0 ? undefined : 0
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
