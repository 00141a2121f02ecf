import type { ViewsetDialect, WriteTarget } from '../dialect/dialect.js'
import { keyIn } from '../dialect/shared/upsert.js'
import type { DatabaseFault } from '../errors.js'
import { faultProblem, ViewsetErrors } from '../errors.js'
import type { AnyDatabase, Row } from '../sql.js'
import { compositeKey } from '../sql.js'

// A bulk write names the element a unique or foreign-key fault is about, by JSON pointer: the checks before its
// statements (two elements repeating a key) and after a fault (which element the database means).

/** A 409 naming the element of a bulk body by JSON pointer, `/3/email`, one entry per column of the key. */
export function elementConflict (
  detail: string,
  index: number,
  columns: readonly string[],
  message: string
): InstanceType<typeof ViewsetErrors.Conflict> {
  return new ViewsetErrors.Conflict(
    `${detail} (element ${index})`,
    columns.map((column) => ({ in: 'body', field: `/${index}/${column}`, message }))
  )
}

/**
 * An error a hook (`beforeWrite`) threw for one element of a bulk body, made to name it: each field it lists by JSON
 * pointer under the element (`project_id` → `/3/project_id`, none → `/3`), and its detail ends `(element 3)`.
 * Anything but an error is left as it is.
 */
export function inElement (error: unknown, index: number): unknown {
  if (!(error instanceof Error)) return error
  const listed = 'errors' in error && Array.isArray(error.errors) ? error.errors : undefined
  if (listed !== undefined) {
    for (const entry of listed) {
      if (!isFieldEntry(entry)) continue
      entry.field = entry.field === '' ? `/${index}` : `/${index}/${entry.field.replace(/^\//, '')}`
    }
  }
  error.message = `${error.message} (element ${index})`
  return error
}

/** An entry of an error's `errors` list, whose field can be renamed. */
function isFieldEntry (entry: unknown): entry is { field: string } {
  return typeof entry === 'object' && entry !== null && 'field' in entry && typeof entry.field === 'string'
}

/** What a field error says of a unique fault. */
export const duplicateMessage = 'a row with the same value already exists'

/** What a field error says of a unique or foreign-key fault. */
function faultMessage (fault: DatabaseFault): string {
  return fault.kind === 'unique' ? duplicateMessage : 'refers to a row that does not exist'
}

/** Whether the row has a value in every column of the key. */
function present (row: Row, key: readonly string[]): boolean {
  return key.every((column) => row[column] !== undefined && row[column] !== null)
}

/** The values of `columns` of a row as the driver binds them (SQLite: booleans as integers). */
function bound (dialect: ViewsetDialect, row: Row, columns: readonly string[]): Row {
  return Object.fromEntries(columns.map((column) => [column, dialect.values.parameter(row[column])]))
}

/** Two elements with the same values in a unique key: a 409 naming the later one, before any statement. */
export function checkRepeatedKeys (
  rows: readonly Row[],
  uniqueKeys: ReadonlyArray<readonly string[]>,
  keyOf: (value: unknown) => unknown
): void {
  for (const key of uniqueKeys) {
    const seen = new Set<string>()
    rows.forEach((row, index) => {
      if (key.some((column) => row[column] === undefined || row[column] === null)) return
      const value = compositeKey(row, key, keyOf)
      if (seen.has(value)) {
        throw elementConflict(
          `Two elements have the same ${key.join(', ')}`,
          index,
          key,
          'an earlier element has the same value'
        )
      }
      seen.add(value)
    })
  }
}

interface Match { readonly index: number; readonly key: readonly string[] }

/** The elements whose key prints as the fault's value (PostgreSQL's detail, MySQL's duplicate entry). */
function matchedByValue (
  dialect: ViewsetDialect,
  value: string,
  keys: ReadonlyArray<readonly string[]>,
  rows: readonly Row[]
): Match[] {
  const matches: Match[] = []
  for (const key of keys) {
    rows.forEach((row, index) => {
      if (present(row, key) && dialect.values.keyText(key.map((column) => row[column])) === value) {
        matches.push({ index, key })
      }
    })
  }
  return matches
}

/** The elements whose `named` key is stored, read after the rollback (SQLite names the columns, not the value). */
async function matchedByStoredKey (
  dialect: ViewsetDialect,
  db: AnyDatabase,
  table: string,
  named: readonly string[],
  rows: readonly Row[]
): Promise<Match[]> {
  const { keyOf } = dialect.values
  const sent = rows.filter((row) => present(row, named))
  const stored =
    sent.length === 0
      ? []
      : await db
        .selectFrom(table)
        .select(named)
        .where(keyIn(named, sent.map((row) => bound(dialect, row, named))))
        .execute()
  const taken = new Set(stored.map((row) => compositeKey(row, named, keyOf)))
  const matches: Match[] = []
  rows.forEach((row, index) => {
    if (present(row, named) && taken.has(compositeKey(bound(dialect, row, named), named, keyOf))) {
      matches.push({ index, key: named })
    }
  })
  return matches
}

/**
 * The 409 naming the element of a bulk write that a unique or foreign-key fault is about, or `undefined`
 * when that cannot be told. A multi-row INSERT fails as a whole, so the element is found from what the
 * database says: the key's value (PostgreSQL's detail, MySQL's duplicate entry) matched among the
 * elements; else, for a unique key the message names (SQLite), the one element whose key is stored,
 * read after the rollback (`db`). Only a single match names an element.
 */
export async function conflictingElement (
  dialect: ViewsetDialect,
  target: Pick<WriteTarget, 'table' | 'catalog'>,
  uniqueKeys: ReadonlyArray<readonly string[]>,
  db: AnyDatabase | undefined,
  error: unknown,
  rows: readonly Row[]
): Promise<Error | undefined> {
  const fault = dialect.classify(error)
  if (fault?.kind !== 'unique' && fault?.kind !== 'foreign-key') return undefined
  const named = fault.target?.split(',').map((column) => column.trim())
  const columns = target.catalog
  const keys =
    named !== undefined && named.every((column) => columns?.has(column) === true)
      ? [named]
      : fault.kind === 'unique'
        ? uniqueKeys
        : []
  let matches: Match[] = []
  if (fault.value !== undefined) {
    matches = matchedByValue(dialect, fault.value, keys, rows)
  } else if (fault.kind === 'unique' && db !== undefined && named !== undefined && keys[0] === named) {
    // A read that fails (in an aborted transaction) names no element: the fault is answered as it is.
    matches = await matchedByStoredKey(dialect, db, target.table, named, rows).catch(() => [])
  }
  const [match] = matches
  if (match === undefined || matches.length > 1) return undefined
  return elementConflict(faultProblem(fault, 'POST').message, match.index, match.key, faultMessage(fault))
}
