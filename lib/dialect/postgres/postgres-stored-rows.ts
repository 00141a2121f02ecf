import { sql } from 'kysely'
import type { AliasedRawBuilder } from 'kysely'
import type { Row } from '../../sql.js'
import { storedKeyColumn } from '../dialect.js'
import type { ColumnInfo, StoredVersion } from '../dialect.js'

/**
 * Stored versions as a derived table named as the table (DialectSyntax.storedRows): `jsonb_populate_record` reads
 * each version into the table's own row type, so that every column has its type (a bigint's digits, a timestamp's
 * text and a JSON column's document all become what the table holds).
 */
export function postgresStoredRows (
  table: string,
  _columns: readonly ColumnInfo[],
  versions: readonly StoredVersion[]
): AliasedRawBuilder<Row, string> {
  const values = JSON.stringify(versions.map(({ key, row }) => ({ k: key, v: row })))
  const elements = sql`jsonb_array_elements(cast(${values} as jsonb)) as ${sql.id('stored')}`
  const typed = sql`jsonb_populate_record(cast(null as ${sql.table(table)}), ${sql.ref('stored')} -> 'v')`
  return sql<Row>`(select ${sql.id('version')}.*, ${sql.ref('stored')} ->> 'k' as ${sql.id(storedKeyColumn)}
    from ${elements} cross join lateral ${typed} as ${sql.id('version')})`.as(table)
}
