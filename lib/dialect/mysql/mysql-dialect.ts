import { sql } from 'kysely'
import { mysqlJsonScalar } from './mysql-json.js'
import { mysqlStatistics } from './mysql-estimate.js'
import { mysqlReplication } from './mysql-replication.js'
import { mysqlCatalog } from './mysql-catalog.js'
import { mysqlMaxParameters, mysqlWrites } from './mysql-writes.js'
import type { ViewsetDialect } from '../dialect.js'
import type { DatabaseFault } from '../../errors.js'
import { bindAsIs, countOf, errorProperty, isConnectionError, mapKey } from '../../sql.js'
import { mysqlFullText } from './mysql-full-text.js'
import { mysqlStoredRows } from './mysql-stored-rows.js'

// Server error numbers: https://mariadb.com/kb/en/mariadb-error-code-reference/
const constraintKinds: Record<string, 'unique' | 'foreign-key' | 'not-null' | 'check'> = {
  1062: 'unique',
  1451: 'foreign-key',
  1452: 'foreign-key',
  1216: 'foreign-key',
  1217: 'foreign-key',
  1048: 'not-null',
  1364: 'not-null',
  3819: 'check',
  4025: 'check',
}
const invalidValues: Record<string, string> = {
  1406: 'a string is longer than the column allows',
  1264: 'a number is out of the range of the column',
  1690: 'a number is out of the range of the column',
  1292: 'a value has the wrong format for its column',
  1366: 'a value has the wrong format for its column',
  1367: 'a value has the wrong format for its column',
  1365: 'division by zero',
  3140: 'a JSON value is malformed',
  4038: 'a JSON value is malformed',
}
// Too many connections, server gone, connection lost: try again.
const unavailable = new Set(['1040', '1053', '2002', '2003', '2006', '2013'])
// Deadlock victim, lock wait timeout: the write transaction, run again, can succeed (the caller rolls back a
// lock wait timeout's transaction, which MySQL leaves open).
const rolledBack = new Set(['1205', '1213'])
// MariaDB's max_statement_time, MySQL's max_execution_time, and a statement killed with KILL QUERY.
const timedOut = new Set(['1969', '3024', '1317'])

// The messages name the key, column or constraint; keep that and never the value.
const targets: readonly RegExp[] = [
  /for key '(?:[^'.]+\.)?([^']+)'$/, // Duplicate entry '...' for key 'items.name'
  /FOREIGN KEY \(`([^`]+)`\)/, // ... CONSTRAINT `fk` FOREIGN KEY (`parent_id`) REFERENCES ...
  /^(?:Column|Field) '([^']+)'/, // Column 'name' cannot be null / Field 'name' doesn't have a default value
  /^CONSTRAINT `([^`]+)` failed/, // MariaDB check constraints
  /^Check constraint '([^']+)'/, // MySQL check constraints
]

/** Recognises mysql2's errors by their server error number. */
function classify (error: unknown): DatabaseFault | undefined {
  const errno = errorProperty(error, 'errno')
  if (errno !== undefined) {
    const kind = constraintKinds[errno]
    if (kind !== undefined) {
      const message = errorProperty(error, 'sqlMessage') ?? ''
      let target: string | undefined
      for (const pattern of targets) {
        target = pattern.exec(message)?.[1]
        if (target !== undefined) break
      }
      // 1451 and 1217: a parent row that is still referenced; 1452 and 1216: a reference to no row.
      if (kind === 'foreign-key') return { kind, target, referenced: errno === '1451' || errno === '1217' }
      // The value only tells which element of a bulk write failed; it never reaches an answer.
      if (kind === 'unique') return { kind, target, value: /^Duplicate entry '(.*)' for key /s.exec(message)?.[1] }
      return { kind, target }
    }
    const reason = invalidValues[errno]
    if (reason !== undefined) return { kind: 'invalid-value', reason }
    if (rolledBack.has(errno)) return { kind: 'unavailable', rolledBack: true }
    if (unavailable.has(errno)) return { kind: 'unavailable' }
    if (timedOut.has(errno)) return { kind: 'timeout' }
  }
  return isConnectionError(error) ? { kind: 'unavailable' } : undefined
}

/** MySQL and MariaDB through mysql2: write then read back, `information_schema`, accent-sensitive `lower() LIKE`. */
export const mysqlDialect: ViewsetDialect = {
  name: 'mysql',
  catalog: mysqlCatalog,
  writes: mysqlWrites,
  values: {
    parameter: bindAsIs,
    // mysql2 answers BIGINT (count(*) included) as a number while exact, as digits beyond (supportBigNumbers).
    count: countOf,
    keyOf: mapKey,
    // "Duplicate entry '1-x' for key ...": the values joined by a hyphen.
    keyText: (values) =>
      values.map((value) => (typeof value === 'boolean' ? (value ? '1' : '0') : String(value))).join('-'),
  },
  syntax: {
    asText: (value) => sql`cast(${value} as char)`,
    ilike (column, pattern) {
      // MySQL's usual collations (utf8mb4_general_ci, utf8mb4_0900_ai_ci) also ignore accents, so
      // 'cafe' would match 'café'. Folding case with lower() and comparing code points (utf8mb4_bin)
      // matches ILIKE on PostgreSQL instead. Converting both sides first makes any column and
      // connection character set comparable (and avoids MySQL 8's deprecated BINARY operator).
      return sql<boolean>`lower(convert(${column} using utf8mb4))
        like lower(convert(${pattern} using utf8mb4)) collate utf8mb4_bin escape '!'`
    },
    jsonScalar: mysqlJsonScalar,
    storedRows: mysqlStoredRows,
    literalLimit: false,
  },
  capabilities: {
    rowLocks: true,
    maxParameters: mysqlMaxParameters,
    // ON DUPLICATE KEY UPDATE fires on whichever unique key conflicts: conflictFields must be the only one.
    upsertOnAnyKey: true,
    nullsSortLargest: false,
    boundedUpdate: false,
  },
  statistics: mysqlStatistics,
  replication: mysqlReplication,
  fullText: mysqlFullText,
  classify,
}
