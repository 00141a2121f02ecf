import { sql } from 'kysely'
import { postgresJsonScalar } from './postgres-json.js'
import { postgresStatistics } from './postgres-estimate.js'
import { postgresReplication } from './postgres-replication.js'
import { postgresCatalog } from './postgres-catalog.js'
import { postgresRowSecurity } from './postgres-row-security.js'
import type { ViewsetDialect, WriteTarget } from '../dialect.js'
import { convertDateTimes, readableOffset } from '../shared/date-time.js'
import type { DatabaseFault } from '../../errors.js'
import type { Row } from '../../sql.js'
import { countOf, errorProperty, isConnectionError, mapKey, bindAsIs } from '../../sql.js'
import {
  deleteCounting,
  insertManyReturning,
  insertReturning,
  updateReturning,
} from '../shared/returning-writes.js'
import { postgresFullText } from './postgres-full-text.js'
import { postgresStoredRows } from './postgres-stored-rows.js'

// SQLSTATE codes: https://www.postgresql.org/docs/current/errcodes-appendix.html
const constraintKinds: Record<string, 'unique' | 'foreign-key' | 'not-null' | 'check'> = {
  23505: 'unique',
  23503: 'foreign-key',
  23001: 'foreign-key', // restrict_violation
  23502: 'not-null',
  23514: 'check',
}
const invalidValues: Record<string, string> = {
  22001: 'a string is longer than the column allows',
  22003: 'a number is out of the range of the column',
  22007: 'a date or time is malformed',
  22008: 'a date or time is out of range',
  22009: 'a time zone offset is out of range',
  '22P02': 'a value has the wrong format for its column',
  22021: 'a string contains a byte that the database cannot store (such as NUL)',
  '22P05': 'a string contains a character that the database cannot store',
  54000: 'a value is too large',
}

// 08xxx connection exceptions, shutdown / cannot connect now, too many connections, and the
// transient conflicts a retry resolves: deadlock, serialization failure, lock not available.
const unavailable = new Set(['57P01', '57P02', '57P03', '53300', '55P03'])
// deadlock_detected and serialization_failure: the transaction was rolled back and can run again.
const rolledBack = new Set(['40P01', '40001'])

/**
 * A row as PostgreSQL reads it: a `date-time` whose offset is beyond ±15:59 (RFC 3339 allows ±23:59, PostgreSQL
 * answers "time zone displacement out of range") is sent as the same instant in UTC; every other value as it is.
 */
function readable ({ dateTimes }: WriteTarget): (values: Row) => Row {
  return (values) => convertDateTimes(values, dateTimes, readableOffset)
}

// The wire protocol counts bind parameters in 16 bits.
const maxParameters = 65_535

/** pg answers int8 columns as strings and int4 ones as numbers: a bigint key meets an integer foreign key. */
function keyOf (value: unknown): unknown {
  if (typeof value === 'string' && /^-?(?:0|[1-9]\d{0,15})$/.test(value)) {
    const number = Number(value)
    if (Number.isSafeInteger(number)) return number
  }
  return mapKey(value)
}

/** Recognises pg's errors by their SQLSTATE, and the pool's by their message. */
function classify (error: unknown): DatabaseFault | undefined {
  const code = errorProperty(error, 'code')
  if (code !== undefined) {
    const kind = constraintKinds[code]
    if (kind !== undefined) {
      // detail reads "Key (name)=(value) already exists."; name the columns, never the value.
      const detail = errorProperty(error, 'detail') ?? ''
      const key = /^Key \(([^)]*)\)=\((.*)\) (?:already exists|is not present|is still referenced)/s.exec(detail)
      const columns = key?.[1] ?? /^Key \(([^)]*)\)/.exec(detail)?.[1]
      const target = columns ?? errorProperty(error, 'column') ?? errorProperty(error, 'constraint')
      // The value only tells which element of a bulk write failed; it never reaches an answer.
      const value = key?.[2]
      if (kind === 'unique') return { kind, target, value }
      if (kind !== 'foreign-key') return { kind, target }
      // "... is still referenced from table ..." (a parent row) or "... is not present in table ..." (a reference).
      const referenced = /is still referenced/.test(detail) ? true : /is not present/.test(detail) ? false : undefined
      return { kind, target, referenced, value }
    }
    const reason = invalidValues[code]
    if (reason !== undefined) return { kind: 'invalid-value', reason }
    if (rolledBack.has(code)) return { kind: 'unavailable', rolledBack: true }
    if (code.startsWith('08') || unavailable.has(code)) return { kind: 'unavailable' }
    // query_canceled: statement_timeout, or the cancel sent when the client went away.
    if (code === '57014') return { kind: 'timeout' }
    // A policy's WITH CHECK refused the row; any other insufficient_privilege is a missing grant, the app's fault.
    const said = errorProperty(error, 'message') ?? ''
    if (code === '42501' && /row-level security/.test(said)) return { kind: 'forbidden' }
  }
  if (isConnectionError(error)) return { kind: 'unavailable' }
  const message = errorProperty(error, 'message') ?? ''
  // pg's pool and client report these without a code.
  if (
    /timeout exceeded when trying to connect|Connection terminated/i.test(message) ||
    /connection is closed|Client has encountered a connection error/i.test(message)
  ) { return { kind: 'unavailable' } }
  return undefined
}

/** PostgreSQL through pg: RETURNING, `information_schema`, case-insensitive LIKE. */
export const postgresDialect: ViewsetDialect = {
  name: 'postgres',
  catalog: postgresCatalog,
  writes: {
    insert: (db, target, values) => insertReturning(db, target, readable(target)(values)),
    update: (db, target, id, values, scope) => updateReturning(db, target, id, readable(target)(values), scope),
    delete: deleteCounting,
    insertMany: async (db, target, rows) =>
      await insertManyReturning(db, target, rows.map(readable(target)), maxParameters, keyOf),
    bindable: (target, values) => readable(target)(values),
  },
  values: {
    parameter: bindAsIs,
    // count(*) is a bigint, which pg answers as a string (its type parsers are global: never changed here).
    count: countOf,
    keyOf,
    // The detail prints "Key (a, b)=(1, x)": each value's text, joined by a comma and a space.
    keyText: (values) =>
      values.map((value) => (typeof value === 'boolean' ? (value ? 't' : 'f') : String(value))).join(', '),
  },
  syntax: {
    asText: (value) => sql`cast(${value} as text)`,
    ilike (column, pattern) {
      // ILIKE lower-cases the pattern again for every row, and so would `like lower($1) escape '!'` under a
      // generic plan (both lower() and like_escape() are evaluated per row). An uncorrelated subquery is an
      // InitPlan: PostgreSQL folds and re-escapes (to the default `\`) the pattern once per statement.
      // lower() on both sides is how ILIKE folds, so matching is unchanged (see
      // benchmarks/analysis.md#postgres-ilike-initplan).
      return sql<boolean>`lower(${column}::text) like (select lower(like_escape(${pattern}, '!')))`
    },
    // int2, int4 and int8 compare with an int8 through one B-tree operator family: the index still serves it.
    integerBound: (value) => sql`cast(${value} as bigint)`,
    jsonScalar: postgresJsonScalar,
    storedRows: postgresStoredRows,
    literalLimit: false,
  },
  capabilities: {
    rowLocks: true,
    maxParameters,
    // ON CONFLICT names its key: other unique keys still fail the statement.
    upsertOnAnyKey: false,
    nullsSortLargest: true,
    boundedUpdate: true,
    limitPerParent: 'lateral',
  },
  statistics: postgresStatistics,
  replication: postgresReplication,
  rowSecurity: postgresRowSecurity,
  fullText: postgresFullText,
  classify,
}
