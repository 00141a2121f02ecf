import { sql } from 'kysely'
import type { Row } from '../../sql.js'
import type { StoredRows } from '../dialect.js'
import { storedVersionColumn } from '../dialect.js'
import { memberPath } from '../shared/member-path.js'

/**
 * Stored versions as a derived table named as the table (DialectSyntax.storedRows): `json_each` over the array,
 * each column `json_extract`ed, which answers SQLite's own types (an integer, a real, text, NULL; a boolean as 1 or
 * 0, an object as its text), as the table stores them.
 *
 * @example
 * ```ts
 * db.selectFrom(sqliteStoredRows('items', columns, '[{"id":1}]')).selectAll()
 * ```
 */
export const sqliteStoredRows: StoredRows = (table, columns, documents) => {
  const members = columns.map(({ name }) =>
    sql`json_extract(${sql.ref('d.value')}, ${sql.lit(memberPath(name))}) as ${sql.id(name)}`)
  const version = sql`${sql.ref('d.key')} + 1 as ${sql.id(storedVersionColumn)}`
  return sql<Row>`(select ${sql.join([...members, version])}
    from json_each(${documents}) as ${sql.id('d')})`.as(table)
}
