import { sql } from 'kysely'
import { mysqlCatalog } from './mysql-catalog.js'
import { chunks, fieldGroups, inElementOrder } from '../shared/bulk-insert.js'
import type { AnyDatabase, DatabaseFault, Row, ViewsetDialect, WriteScope, WriteTarget } from '../dialect.js'
import {
  compositeKey,
  countOf,
  deletedAny,
  errorProperty,
  inTransaction,
  isConnectionError,
  mapKey,
  sameValue,
} from '../dialect.js'
import { byConflictKey, keyIn, updateAssignments, upsertGroups } from '../shared/upsert.js'
import { inFieldOrder, keyAndScope, sentFields } from '../shared/write-shapes.js'

// MySQL has no RETURNING, and MariaDB has none on UPDATE: every write is followed by a read of the
// row in the same transaction. One code path serves both servers, so the path CI runs on MariaDB is
// the one MySQL users get.
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
// Too many connections, server gone, connection lost, lock wait timeout, deadlock victim: try again.
const unavailable = new Set(['1040', '1053', '1205', '1213', '2002', '2003', '2006', '2013'])
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

// The column of the locked read that says whether a conflicting row is in the scope.
const inScopeColumn = 'viewset:in_scope'

const dateTimeTypes = new Set(['datetime', 'timestamp'])
const withOffset = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)$/i

/**
 * Values as MySQL takes them. mysql2 expands an object into `key = value` pairs and an array into a
 * list, so JSON objects and arrays are sent as JSON text. MySQL takes no `Z` or `+02:00` in a
 * DATETIME or TIMESTAMP, and JSON clients send RFC 3339: those strings become dates, which mysql2
 * writes in UTC (createDatabase sets the session to UTC as well).
 */
function storable ({ catalog }: WriteTarget, values: Row): Row {
  let converted: Row | undefined
  for (const key in values) {
    const value = values[key]
    let stored: unknown = value
    if (typeof value === 'object' && value !== null && !(value instanceof Date) && !(value instanceof Uint8Array)) {
      stored = JSON.stringify(value)
    } else if (
      typeof value === 'string' &&
      withOffset.test(value) &&
      dateTimeTypes.has(catalog?.get(key)?.type ?? '')
    ) {
      const date = new Date(value)
      if (!Number.isNaN(date.getTime())) stored = date
    }
    if (stored !== value) {
      converted ??= { ...values }
      converted[key] = stored
    }
  }
  return converted ?? values
}

/** The row with this key, read back after a write (in its transaction): compiled once per table. */
async function readBack (
  db: AnyDatabase,
  { table, primaryKey, columns, statements }: WriteTarget,
  id: unknown
): Promise<Row | undefined> {
  const [row] = await statements.rows(db, 'find', [id], () =>
    db.selectFrom(table).select(columns).where(primaryKey, '=', id)
  )
  return row
}

/**
 * The row with this key if it is in the scope. MySQL and MariaDB refuse an UPDATE or DELETE whose
 * subquery reads the table being written (error 1093), and a scope may well do that (`owner in (select …)`),
 * so the scope is checked by a read first; `lock`: `FOR UPDATE`, which holds the row until the write's
 * transaction ends, so the scope cannot change in between.
 */
async function inScope (
  db: AnyDatabase,
  { table, primaryKey, columns, statements }: WriteTarget,
  id: unknown,
  scope: WriteScope,
  lock: boolean
): Promise<Row | undefined> {
  const [row] = await statements.rows(db, `${lock ? 'lock' : 'find'} ${scope.shape}`, keyAndScope(id, scope), () => {
    const select = db.selectFrom(table).select(columns).where(primaryKey, '=', id).where(scope.where)
    return lock ? select.forUpdate() : select
  })
  return row
}

/** MySQL and MariaDB through mysql2: write then read back, `information_schema`, accent-sensitive `lower() LIKE`. */
export const mysqlDialect: ViewsetDialect = {
  name: 'mysql',
  rowLocks: true,
  catalog: mysqlCatalog,
  nullsSortLargest: false,

  parameter: sameValue,
  // mysql2 answers BIGINT (count(*) included) as a number while exact, as digits beyond (supportBigNumbers).
  count: countOf,
  keyOf: mapKey,

  async insert (db, target, values) {
    const { table, primaryKey } = target
    const row = storable(target, values)
    const { fields, shape, parameters } = sentFields(row)
    return await inTransaction(db, async (trx) => {
      // No fields: `INSERT INTO t () VALUES ()`, MySQL's spelling of DEFAULT VALUES.
      const { insertId } = await target.statements.execute(trx, `insert ${shape}`, parameters, () =>
        trx.insertInto(table).values(inFieldOrder(fields, row))
      )
      // The key the caller set, else the AUTO_INCREMENT value of this connection's insert.
      const id = row[primaryKey] ?? insertId
      if (id === undefined) {
        // Mounting refused a key the default handlers could not set: the override or beforeWrite left it unset.
        throw new Error(
          `"${primaryKey}" of "${table}" is not AUTO_INCREMENT and was not set, so MySQL cannot read the new row back; set it in beforeWrite or createElement`
        )
      }
      const stored = await readBack(trx, target, id)
      if (stored === undefined) throw new Error(`the row inserted into ${table} was not found by its key`)
      return stored
    })
  },

  // Prepared statements count placeholders in 16 bits.
  maxParameters: 65_535,

  async insertMany (db, target, rows) {
    const { table, primaryKey, columns } = target
    return await inTransaction(db, async (trx) => {
      const stored: Row[] = []
      for (const { fields, indexes } of fieldGroups(rows)) {
        for (const chunk of chunks(indexes, fields.length, 65_535)) {
          const sent = chunk.map((index) => storable(target, rows[index] ?? {}))
          let answered: Row[]
          if (fields.length === 0) {
            answered = await Promise.all(sent.map(async () => await mysqlDialect.insert(trx, target, {})))
          } else {
            const { insertId } = await trx.insertInto(table).values(sent).executeTakeFirstOrThrow()
            if (fields.includes(primaryKey)) {
              answered = await trx
                .selectFrom(table)
                .select(columns)
                .where(
                  primaryKey,
                  'in',
                  sent.map((row) => row[primaryKey])
                )
                .execute()
            } else {
              if (insertId === undefined) {
                throw new Error(
                  `"${primaryKey}" of "${table}" is not AUTO_INCREMENT and was not set, so MySQL cannot read the new rows back`
                )
              }
              // No RETURNING: a multi-row INSERT of known length takes consecutive AUTO_INCREMENT values from
              // insertId (every innodb_autoinc_lock_mode), so the rows are the next ones from there.
              answered = await trx
                .selectFrom(table)
                .select(columns)
                .where(primaryKey, '>=', insertId)
                .orderBy(primaryKey)
                .limit(sent.length)
                .execute()
            }
          }
          inElementOrder(sent, answered, target, mapKey).forEach((row, at) => {
            stored[chunk[at] ?? 0] = row
          })
        }
      }
      return stored
    })
  },

  // ON DUPLICATE KEY UPDATE fires on whichever unique key conflicts: conflictFields must be the only one.
  upsertOnAnyKey: true,

  async upsert (db, target, elements, rule) {
    const { table, primaryKey, columns } = target
    const { conflictFields, scope } = rule
    const stored = elements.map(({ values }) => storable(target, values))
    return await inTransaction(db, async (trx) => {
      // affectedRows (1 inserted, 2 updated) says 0 or 1 for a row left as it was, so the rows the elements
      // conflict with are read first, locked: a key read as absent cannot be inserted by another writer
      // before this one (a gap lock), and a row read cannot leave the scope.
      const locked = trx
        .selectFrom(table)
        .select([primaryKey, ...conflictFields])
        .where(keyIn(conflictFields, stored))
      const existing = await (
        scope === undefined
          ? locked
          : locked.select(sql<number>`case when ${scope} then 1 else 0 end`.as(inScopeColumn))
      )
        .forUpdate()
        .execute()
      const outside = existing.find((row) => scope !== undefined && Number(row[inScopeColumn]) !== 1)
      if (outside !== undefined) {
        const key = compositeKey(outside, conflictFields, mapKey)
        return {
          outside: Math.max(
            0,
            stored.findIndex((values) => compositeKey(values, conflictFields, mapKey) === key)
          ),
        }
      }
      const updated = new Set(existing.map((row) => mapKey(row[primaryKey])))
      for (const group of upsertGroups(elements, 65_535)) {
        const set = updateAssignments(
          group.update,
          rule,
          (column) => sql`values(${sql.ref(column)})`,
          (column) => sql.ref(column)
        )
        for (const chunk of group.chunks) {
          await trx
            .insertInto(table)
            .values(chunk.map((index) => stored[index] ?? {}))
            .onDuplicateKeyUpdate(set)
            .execute()
        }
      }
      const rows = byConflictKey(
        stored,
        await trx.selectFrom(table).select(columns).where(keyIn(conflictFields, stored)).execute(),
        conflictFields,
        mapKey
      )
      return {
        rows: rows.map((row) => {
          // The update branch wrote the key as sent, so only a value the server transforms (a trimmed pad) misses.
          if (row === undefined) {
            throw new Error(`An upserted row of "${table}" was not found by its ${conflictFields.join(', ')} as sent`)
          }
          return { row, created: !updated.has(mapKey(row[primaryKey])) }
        }),
      }
    })
  },

  // "Duplicate entry '1-x' for key ...": the values joined by a hyphen.
  keyText: (values) =>
    values.map((value) => (typeof value === 'boolean' ? (value ? '1' : '0') : String(value))).join('-'),

  async update (db, target, id, values, scope) {
    const { table, primaryKey } = target
    if (Object.keys(values).length === 0) {
      return scope === undefined ? await readBack(db, target, id) : await inScope(db, target, id, scope, false)
    }
    const row = storable(target, values)
    const { fields, shape, parameters } = sentFields(row)
    return await inTransaction(db, async (trx) => {
      if (scope !== undefined && (await inScope(trx, target, id, scope, true)) === undefined) return undefined
      // affectedRows is 0 for a row that exists but did not change, so the read decides between 200 and 404.
      await target.statements.execute(trx, `update ${shape}`, [...parameters, id], () =>
        trx.updateTable(table).set(inFieldOrder(fields, row)).where(primaryKey, '=', id)
      )
      return await readBack(trx, target, id)
    })
  },

  async delete (db, target, id, scope) {
    const { table, primaryKey } = target
    const remove = async (on: AnyDatabase) =>
      deletedAny(
        await target.statements.execute(on, 'delete', [id], () => on.deleteFrom(table).where(primaryKey, '=', id))
      )
    if (scope === undefined) return await remove(db)
    return await inTransaction(db, async (trx) =>
      (await inScope(trx, target, id, scope, true)) === undefined ? false : await remove(trx)
    )
  },

  ilike (column, pattern) {
    // MySQL's usual collations (utf8mb4_general_ci, utf8mb4_0900_ai_ci) also ignore accents, so
    // 'cafe' would match 'café'. Folding case with lower() and comparing code points (utf8mb4_bin)
    // matches ILIKE on PostgreSQL instead. Converting both sides first makes any column and
    // connection character set comparable (and avoids MySQL 8's deprecated BINARY operator).
    return sql<boolean>`lower(convert(${column} using utf8mb4)) like lower(convert(${pattern} using utf8mb4)) collate utf8mb4_bin escape '!'`
  },

  classify (error): DatabaseFault | undefined {
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
      if (unavailable.has(errno)) return { kind: 'unavailable' }
      if (timedOut.has(errno)) return { kind: 'timeout' }
    }
    return isConnectionError(error) ? { kind: 'unavailable' } : undefined
  },
}
