import { sql } from 'kysely'
import type { StoredColumn, ViewsetDialect } from '../dialect/dialect.js'
import { storedVersionColumn } from '../dialect/dialect.js'
import { ViewsetErrors } from '../errors.js'
import { declareCost } from '../execution/cost-class.js'
import { runCompiled } from '../execution/prepared-kysely.js'
import type { Condition } from '../query/condition.js'
import type { ListQuery } from '../query/list-query.js'
import type { ScopeCondition } from '../query/scope.js'
import type { RowKey } from '../row-key.js'
import type { AnyDatabase, Row } from '../sql.js'
import { resultRows } from '../sql.js'
import { oldestHistoryPosition, readHistoryAfter } from './history-reader.js'
import type { HistorySource, HistoryTextEntry } from './history-reader.js'
import { keyIdentity, storedKey } from './change-key.js'
import type { ChangeKey } from './change-key.js'
import { compileWith } from './statement-cache.js'
import type { TableGateway } from './table-gateway.js'

// One page of `GET {prefix}?changed_since=<position>` (issue 40, item 5), read in three bounded statements: the next
// `limit` history entries of the table (history-reader.ts, an index range on `(table_name, position)`), the current
// rows of the keys they touched under the request's filters and LIST rule (one statement, as LIST reads a page), and,
// for the keys that are no longer such a row, their stored versions under the same filters and rule (one statement
// over a derived table of the versions, DialectSyntax.storedRows): a key is reported deleted only when a version the
// caller could have held was one its rule admitted, so another tenant's keys never show.

/** What a viewset's changes are read from. */
export interface ChangesTarget extends HistorySource {
  /** The table's key, one column or several: what a history key names and the current rows are found by. */
  readonly key: ChangeKey
  /** Every column of the table (a rule may read a column the schema does not serve): what a stored version holds. */
  readonly columns: readonly StoredColumn[]
}

/** One request for changes: the position, the page size, and LIST's parsed query (filters, `fields`) and rule. */
export interface ChangesRequest {
  /** A position: decimal digits, `'0'` for the beginning. */
  readonly since: string
  readonly limit: number
  readonly query: ListQuery
  readonly scope: ScopeCondition | undefined
}

/** A page of changes: the current rows, the keys deleted (as objects of the key's columns) and the next position. */
export interface ChangesPage {
  readonly rows: Row[]
  readonly deleted: Row[]
  readonly next: string
  /** Whether the page read `limit` entries: more may follow `next`. */
  readonly more: boolean
}

/** A key the page's entries touched: its key object (change-key.ts) and its versions in the window, as JSON text. */
interface Touched {
  readonly key: Row
  readonly versions: string[]
}

/** The keys the entries touched by identity (change-key.ts), in the order of their first entry, with every version
 * the window holds of each. */
function touchedKeys (entries: readonly HistoryTextEntry[], changeKey: ChangeKey): Map<string, Touched> {
  const touched = new Map<string, Touched>()
  const byText = new Map<string, Touched>()
  for (const entry of entries) {
    let found = byText.get(entry.rowKey)
    if (found === undefined) {
      const key = storedKey(entry.rowKey, changeKey)
      if (key === undefined) continue
      const identity = keyIdentity(changeKey.key, key)
      found = touched.get(identity) ?? { key, versions: [] }
      touched.set(identity, found)
      byText.set(entry.rowKey, found)
    }
    if (entry.before !== null) found.versions.push(entry.before)
    if (entry.after !== null) found.versions.push(entry.after)
  }
  return touched
}

/**
 * The keys padded (the last one repeated) to a power of two, so that a page's statement is one of a few shapes, not
 * one per number of keys.
 */
function padded<T> (values: readonly T[]): T[] {
  let size = 1
  while (size < values.length) size *= 2
  const last = values.at(-1)
  return last === undefined ? [] : [...values, ...Array.from({ length: size - values.length }, () => last)]
}

/** The rows with these keys, as one more WHERE term of LIST's page statement: `key IN (…)` for a one-column key,
 * `(a = ? and b = ?) or …` for a composite one (row-key.ts matchAny), every part bound. */
function keyIn (key: RowKey, ids: readonly unknown[]): Condition {
  return {
    shape: `changed keys ${key.columns.join(',')} ${ids.length}`,
    parameters: key.parameters(ids),
    expression: () => key.matchAny(ids),
  }
}

/** The current rows of `touched` that match the request's filters and rule, read as LIST reads a page. */
async function currentRows (
  db: AnyDatabase,
  resource: TableGateway,
  key: RowKey,
  touched: ReadonlyMap<string, Touched>,
  request: ChangesRequest
): Promise<{ rows: Row[], missing: string[] }> {
  const { parameter } = resource.dialect.values
  const ids = padded([...touched.values()].map((found) => {
    const parts = key.columns.map((column) => parameter(found.key[column]))
    return key.composite ? parts : parts[0]
  }))
  const { query } = request
  // The key is read with any `?fields=`: it tells which touched key each row is.
  const missing = key.columns.filter((column) => query.fields !== undefined && !query.fields.columns.includes(column))
  const selected = query.fields
  const fields = selected === undefined || missing.length === 0
    ? selected
    : { ...selected, shape: `${selected.shape}|${missing.join(',')}`, columns: [...selected.columns, ...missing] }
  const read: ListQuery = {
    ...query,
    conditions: [...query.conditions, keyIn(key, ids)],
    fields,
    limit: ids.length,
    offset: 0,
    pageOnly: false,
    pagination: 'offset',
    cursor: undefined,
    count: false,
    estimate: false,
  }
  const rows = await resource.list(db, read, request.scope)
  return { rows, missing }
}

/** A stored version of a row: the identity of its key and its JSON text as the history stores it. */
interface StoredVersion {
  readonly key: string
  readonly text: string
}

/**
 * The keys of `versions` that the request's filters and rule admit, evaluated by the database on the versions as
 * the table's rows (DialectSyntax.storedRows): one statement, classed heavy (it reads every version it is given).
 */
async function admittedKeys (
  db: AnyDatabase,
  dialect: ViewsetDialect,
  target: ChangesTarget,
  versions: readonly StoredVersion[],
  conditions: readonly Condition[]
): Promise<Set<string>> {
  const documents = `[${versions.map(({ text }) => text).join(',')}]`
  const select = db
    .selectFrom(dialect.syntax.storedRows(target.table, target.columns, documents))
    .select(sql.ref(storedVersionColumn).as(storedVersionColumn))
    .where((eb) => eb.and(conditions.map((condition) => condition.expression(eb))))
  const compiled = declareCost(compileWith(select, dialect.syntax.statementPlugin), 'heavy')
  const rows = resultRows(await runCompiled(db, compiled))
  // Each admitted version's 1-based index names its key.
  return new Set(rows.flatMap((row) => versions[Number(row[storedVersionColumn]) - 1]?.key ?? []))
}

/** The keys deleted for this caller: those of `gone` (no longer a row it reads) with a version its filters and rule
 * admitted. */
async function deletedKeys (
  db: AnyDatabase,
  resource: TableGateway,
  target: ChangesTarget,
  gone: ReadonlyMap<string, Touched>,
  request: ChangesRequest
): Promise<Row[]> {
  if (gone.size === 0) return []
  const { scope, query } = request
  const conditions = scope === undefined ? query.conditions : [scope, ...query.conditions]
  // Nothing restricts the rows: every key that is no longer a row is deleted.
  if (conditions.length === 0) return [...gone.values()].map((touched) => touched.key)
  const versions = [...gone.entries()].flatMap(([key, touched]) => touched.versions.map((text) => ({ key, text })))
  const admitted = versions.length === 0
    ? new Set<string>()
    : await admittedKeys(db, resource.dialect, target, versions, conditions)
  return [...gone.entries()].filter(([key]) => admitted.has(key)).map(([, touched]) => touched.key)
}

/**
 * Reads one page of changes after `request.since`: 410 (`FST_VIEWSET_POSITION_EXPIRED`) when the history no longer
 * holds every entry after it; else the touched rows the caller reads now (`rows`, each once, in LIST's order), the
 * keys of those it may hold and reads no longer (`deleted`: deleted, or out of its filters or rule), and `next`, the
 * position of the last entry read.
 *
 * @example
 * ```ts
 * const page = await readChanges(db, resource, target, { since: '0', limit: 100, query, scope })
 * // { rows: [{ id: 1, … }], deleted: [{ id: 2 }], next: '17', more: false }
 * ```
 */
export async function readChanges (
  db: AnyDatabase,
  resource: TableGateway,
  target: ChangesTarget,
  request: ChangesRequest
): Promise<ChangesPage> {
  const { since, limit } = request
  if (since !== '0') {
    const oldest = await oldestHistoryPosition(db, target)
    if (oldest === undefined || BigInt(since) < BigInt(oldest)) throw new ViewsetErrors.PositionExpired()
  }
  const entries = await readHistoryAfter(db, target, since, limit)
  const next = entries.at(-1)?.position ?? since
  const more = entries.length === limit
  const { key } = target.key
  const touched = touchedKeys(entries, target.key)
  if (touched.size === 0) return { rows: [], deleted: [], next, more }
  const { rows, missing } = await currentRows(db, resource, key, touched, request)
  const found = new Set(rows.map((row) => keyIdentity(key, row)))
  const gone = new Map([...touched].filter(([identity]) => !found.has(identity)))
  const deleted = await deletedKeys(db, resource, target, gone, request)
  for (const row of rows) for (const column of missing) delete row[column]
  return { rows, deleted, next, more }
}
