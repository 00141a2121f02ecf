import { sql } from 'kysely'
import type { RawBuilder } from 'kysely'
import type { Row } from '../../sql.js'
import type { StoredColumn, StoredRows } from '../dialect.js'
import { storedVersionColumn } from '../dialect.js'
import { memberPath } from '../shared/member-path.js'

/** Types a JSON_TABLE column takes as declared; the others are read as text (dates were stored as ISO text). */
const asDeclared = /^(tinyint|smallint|mediumint|int|integer|bigint|decimal|numeric|float|double|real|char|varchar)$/

/** The JSON_TABLE columns a table column is read from (`c3`, and `j3` for a JSON column), by its position. */
function readColumns ({ name, type, declared, json }: StoredColumn, index: number): RawBuilder<unknown>[] {
  const path = sql.lit(memberPath(name))
  const kind = asDeclared.test(type) && /^[a-z0-9 (),]+$/.test(declared) ? declared : 'longtext'
  const read = sql`${sql.id(`c${index}`)} ${sql.raw(kind)} path ${path}`
  return json ? [read, sql`${sql.id(`j${index}`)} json path ${path}`] : [read]
}

/** A table column as read back: a JSON column's object or array (which a text column reads as NULL) as its text. */
function valueOf ({ name, json }: StoredColumn, index: number): RawBuilder<unknown> {
  const text = sql.ref(`jt.c${index}`)
  if (!json) return sql`${text} as ${sql.id(name)}`
  const document = sql.ref(`jt.j${index}`)
  return sql`coalesce(${text}, case when json_type(${document}) in ('OBJECT', 'ARRAY') then ${document} end)
    as ${sql.id(name)}`
}

/**
 * Stored versions as a derived table named as the table (DialectSyntax.storedRows): `JSON_TABLE` over the array
 * (MySQL 8, MariaDB 10.6), each column typed as the table declares it (numbers and strings), so that the driver
 * reads them as it reads the table's (`TINYINT(1)` a boolean); the other types as text.
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
