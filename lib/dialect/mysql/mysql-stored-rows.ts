import { sql } from 'kysely'
import type { RawBuilder } from 'kysely'
import type { Row } from '../../sql.js'
import type { StoredColumn, StoredRows } from '../dialect.js'
import { storedVersionColumn } from '../dialect.js'
import { memberPath } from '../shared/member-path.js'

/** Types a JSON_TABLE column takes as declared; the others are read as text (dates, stored as ISO text, are then cast
 * back to their type: temporalOf). */
const asDeclared = /^(tinyint|smallint|mediumint|int|integer|bigint|decimal|numeric|float|double|real|char|varchar)$/

/** The JSON_TABLE columns a table column is read from (`c3`, and `j3` for a JSON column), by its position. */
function readColumns ({ name, type, declared, json }: StoredColumn, index: number): RawBuilder<unknown>[] {
  const path = sql.lit(memberPath(name))
  const kind = asDeclared.test(type) && /^[a-z0-9 (),]+$/.test(declared) ? declared : 'longtext'
  const read = sql`${sql.id(`c${index}`)} ${sql.raw(kind)} path ${path}`
  return json ? [read, sql`${sql.id(`j${index}`)} json path ${path}`] : [read]
}

/**
 * A date, time or date-time column's stored text (JavaScript's ISO form, `2026-06-01T10:00:00.123Z`, as mysql2 read
 * the column in the UTC session) as the column's own type again, so that a rule or filter compares dates, not text
 * (`'…T10:00…' <= '… 12:00…'` is false as text); `undefined` for the other types.
 */
function temporalOf ({ type, declared }: StoredColumn, text: RawBuilder<unknown>): RawBuilder<unknown> | undefined {
  const fraction = sql.raw(/\(([0-6])\)/.exec(declared)?.[1] ?? '0')
  if (type === 'date') return sql`cast(left(${text}, 10) as date)`
  if (type === 'datetime' || type === 'timestamp') {
    return sql`cast(replace(replace(${text}, 'T', ' '), 'Z', '') as datetime(${fraction}))`
  }
  return type === 'time' ? sql`cast(${text} as time(${fraction}))` : undefined
}

/** A table column as read back: a JSON column's object or array (which a text column reads as NULL) as its text. */
function valueOf (column: StoredColumn, index: number): RawBuilder<unknown> {
  const { name, json } = column
  const text = sql.ref(`jt.c${index}`)
  const temporal = temporalOf(column, text)
  if (temporal !== undefined) return sql`${temporal} as ${sql.id(name)}`
  if (!json) return sql`${text} as ${sql.id(name)}`
  const document = sql.ref(`jt.j${index}`)
  return sql`coalesce(${text}, case when json_type(${document}) in ('OBJECT', 'ARRAY') then ${document} end)
    as ${sql.id(name)}`
}

/**
 * Stored versions as a derived table named as the table (DialectSyntax.storedRows): `JSON_TABLE` over the array
 * (MySQL 8, MariaDB 10.6), each column typed as the table declares it (numbers and strings; dates and times cast
 * back from their ISO text), so that the driver reads them as it reads the table's (`TINYINT(1)` a boolean, a
 * DATETIME a Date) and SQL compares them as the table's; the other types as text.
 *
 * @example
 * ```ts
 * db.selectFrom(mysqlStoredRows('items', columns, '[{"id":1}]')).selectAll()
 * ```
 */
export const mysqlStoredRows: StoredRows = (table, columns, documents) => {
  const reads = columns.flatMap(readColumns)
  const values = columns.map(valueOf)
  const version = sql`${sql.ref(`jt.${storedVersionColumn}`)}`
  return sql<Row>`(select ${sql.join([...values, version])} from json_table(${documents}, '$[*]' columns (
    ${sql.id(storedVersionColumn)} for ordinality, ${sql.join(reads)})) as ${sql.id('jt')})`.as(table)
}
