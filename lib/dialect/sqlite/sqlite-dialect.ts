import { sql } from 'kysely'
import { sqliteJsonScalar } from './sqlite-json.js'
import { sqliteCatalog } from './sqlite-catalog.js'
import { stablePlans } from './sqlite-stable-plans.js'
import type { KeyTable, ViewsetDialect, WriteTarget } from '../dialect.js'
import { canonicalDateTime, convertDateTimes } from '../shared/date-time.js'
import type { DatabaseFault } from '../../errors.js'
import type { Row } from '../../sql.js'
import { countOf, errorProperty, mapKey } from '../../sql.js'
import {
  deleteCounting,
  insertManyReturning,
  insertReturning,
  updateReturning,
} from '../shared/returning-writes.js'
import { sqliteFullText } from './sqlite-full-text.js'
import { sqliteStoredRows } from './sqlite-stored-rows.js'

// better-sqlite3 error codes: https://www.sqlite.org/rescode.html
const constraintKinds: Record<string, 'unique' | 'not-null' | 'check'> = {
  SQLITE_CONSTRAINT_UNIQUE: 'unique',
  SQLITE_CONSTRAINT_PRIMARYKEY: 'unique',
  SQLITE_CONSTRAINT_NOTNULL: 'not-null',
  SQLITE_CONSTRAINT_CHECK: 'check',
}

// better-sqlite3 binds numbers, strings, bigints, buffers and null only: a JSON document (an object or an array a
// JSON field holds) is stored as its text, which json_extract reads and data/json-text.ts parses back.
function parameter (value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0
  if (value instanceof Date) return value.toISOString()
  if (typeof value === 'object' && value !== null && !(value instanceof Uint8Array)) return JSON.stringify(value)
  return value
}

/**
 * A row as better-sqlite3 binds it. SQLite stores date-times as text and compares them as text, so a `date-time`
 * field is stored in one UTC form, `YYYY-MM-DDTHH:MM:SS.sssZ`: filters, ordering and cursors then compare instants
 * (rows stored before in another form read back as they are).
 */
function bindable ({ dateTimes }: WriteTarget): (values: Row) => Row {
  return (values) => {
    const bound: Row = {}
    const canonical = convertDateTimes(values, dateTimes, canonicalDateTime)
    for (const key in canonical) bound[key] = parameter(canonical[key])
    return bound
  }
}

/**
 * A batch's keys as a JSON array, joined from `json_each`: an `IN` list of bound values is an ephemeral index
 * built on every run, whose allocations make each run grow and trim the heap (see
 * benchmarks/analysis.md#json-each-keys). Integers and strings only: JSON cannot carry a blob, and SQLite's
 * reading of a JSON fraction need not give back the same double.
 */
const jsonKeys: KeyTable = {
  source: (alias) => sql<Row>`json_each(${'[]'})`.as(alias),
  encode: (keys) =>
    keys.every((key) => typeof key === 'string' || Number.isSafeInteger(key)) ? JSON.stringify(keys) : undefined,
}

// SQLITE_MAX_VARIABLE_NUMBER's default since SQLite 3.32.
const maxParameters = 32_766

/** Recognises better-sqlite3's errors by their extended result codes. */
function classify (error: unknown): DatabaseFault | undefined {
  const code = errorProperty(error, 'code')
  if (code === undefined || !code.startsWith('SQLITE_')) return undefined
  const message = errorProperty(error, 'message') ?? ''
  // ON DELETE/UPDATE RESTRICT fails as a trigger would; a user's RAISE() in a trigger has its own message.
  if (
    code === 'SQLITE_CONSTRAINT_FOREIGNKEY' ||
    (code === 'SQLITE_CONSTRAINT_TRIGGER' && message.startsWith('FOREIGN KEY constraint failed'))
  ) {
    // SQLite names neither the column nor the direction.
    return { kind: 'foreign-key', target: undefined, referenced: undefined }
  }
  const kind = constraintKinds[code]
  if (kind !== undefined) {
    // "UNIQUE constraint failed: items.name" names the column; keep only that part.
    const match = /constraint failed: ([\w.]+(?:, [\w.]+)*)/.exec(message)
    const target = match?.[1]
      ?.split(', ')
      .map((name) => name.split('.').pop())
      .join(', ')
    return { kind, target }
  }
  if (code === 'SQLITE_MISMATCH' || code === 'SQLITE_TOOBIG' || code === 'SQLITE_RANGE') {
    return { kind: 'invalid-value', reason: 'value does not fit the column' }
  }
  // Another connection (another process) holds the file's write lock past the busy timeout: nothing was written.
  if (code.startsWith('SQLITE_BUSY')) return { kind: 'unavailable', rolledBack: true }
  if (code === 'SQLITE_LOCKED' || code === 'SQLITE_CANTOPEN') return { kind: 'unavailable' }
  return undefined
}

/** SQLite through better-sqlite3: RETURNING, `PRAGMA table_info`, ASCII-only case folding. */
export const sqliteDialect: ViewsetDialect = {
  name: 'sqlite',
  catalog: sqliteCatalog,
  writes: {
    insert: (db, target, values) => insertReturning(db, target, bindable(target)(values)),
    insertMany: async (db, target, rows) =>
      await insertManyReturning(db, target, rows.map(bindable(target)), maxParameters, mapKey),
    update: (db, target, id, values, scope) => updateReturning(db, target, id, bindable(target)(values), scope),
    delete: deleteCounting,
    bindable: (target, values) => bindable(target)(values),
  },
  values: {
    parameter,
    count: countOf,
    keyOf: mapKey,
    // SQLite's messages name the columns, never the values.
    keyText: (values) => values.map(String).join(', '),
  },
  syntax: {
    asText: (value) => sql`cast(${value} as text)`,
    ilike (column, pattern) {
      // lower() on both sides so that PRAGMA case_sensitive_like cannot change the answer.
      return sql<boolean>`lower(${column}) like lower(${pattern}) escape '!'`
    },
    keyTable: jsonKeys,
    jsonScalar: sqliteJsonScalar,
    storedRows: sqliteStoredRows,
    literalLimit: true,
    statementPlugin: stablePlans,
  },
  capabilities: {
    // One writer at a time: no row is locked, the database is.
    rowLocks: false,
    maxParameters,
    // ON CONFLICT names its key: other unique keys still fail the statement.
    upsertOnAnyKey: false,
    nullsSortLargest: false,
    boundedUpdate: true,
    limitPerParent: 'correlated-in',
  },
  fullText: sqliteFullText,
  classify,
}
