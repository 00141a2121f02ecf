import { sql } from 'kysely'
import type { AliasedRawBuilder } from 'kysely'
import type { Row } from '../../sql.js'
import { storedKeyColumn } from '../dialect.js'
import type { ColumnInfo, StoredVersion } from '../dialect.js'
import { positionalVersions } from '../shared/stored-values.js'

/**
 * Stored versions as a derived table named as the table (DialectSyntax.storedRows): `json_each` over one JSON
 * parameter, each column read back by position with `json_extract`, which answers SQLite's own types (an integer, a
 * real, text, NULL), as the table stores them.
 */
export function sqliteStoredRows (
  table: string,
  columns: readonly ColumnInfo[],
  versions: readonly StoredVersion[]
): AliasedRawBuilder<Row, string> {
  const values = positionalVersions(columns, versions)
  const read = columns.map(({ name }, index) =>
    sql`json_extract(${sql.ref('stored.value')}, ${sql.raw(`'$.v[${index}]'`)}) as ${sql.id(name)}`)
  const key = sql`json_extract(${sql.ref('stored.value')}, '$.k') as ${sql.id(storedKeyColumn)}`
  return sql<Row>`(select ${sql.join([key, ...read])} from json_each(${values}) as ${sql.id('stored')})`.as(table)
}
