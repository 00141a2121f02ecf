import { sql } from 'kysely'
import type { AliasedRawBuilder } from 'kysely'
import type { Row } from '../../sql.js'
import { storedKeyColumn } from '../dialect.js'
import type { ColumnInfo, StoredVersion } from '../dialect.js'
import { positionalVersions } from '../shared/stored-values.js'

const integers = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint', 'bit', 'year'])
const decimals = new Set(['decimal', 'numeric'])
const floats = new Set(['float', 'double', 'real'])

/**
 * The JSON_TABLE type a column is read back as: numbers as numbers (a rule compares them as such), anything else as
 * text, which MySQL compares with a date or a string as it would the column (a JSON_TABLE column of a date type
 * would refuse the ISO text a version stores).
 */
function readType ({ type }: ColumnInfo): string {
  const base = type.toLowerCase()
  if (integers.has(base)) return 'bigint'
  if (decimals.has(base)) return 'decimal(65,30)'
  if (floats.has(base)) return 'double'
  return 'longtext'
}

/**
 * Stored versions as a derived table named as the table (DialectSyntax.storedRows): JSON_TABLE over one JSON
 * parameter (MySQL 8, MariaDB 10.6), each column read back by position.
 */
export function mysqlStoredRows (
  table: string,
  columns: readonly ColumnInfo[],
  versions: readonly StoredVersion[]
): AliasedRawBuilder<Row, string> {
  const values = positionalVersions(columns, versions)
  const read = columns.map((column, index) =>
    sql`${sql.id(`c${index}`)} ${sql.raw(readType(column))} path ${sql.raw(`'$.v[${index}]'`)}`)
  const named = columns.map(({ name }, index) => sql`${sql.ref(`stored.c${index}`)} as ${sql.id(name)}`)
  const key = sql`${sql.ref('stored.k')} as ${sql.id(storedKeyColumn)}`
  const source = sql`json_table(${values}, '$[*]' columns (${sql.id('k')} varchar(1024) path '$.k', ${sql.join(read)}))`
  return sql<Row>`(select ${sql.join([key, ...named])} from ${source} as ${sql.id('stored')})`.as(table)
}
