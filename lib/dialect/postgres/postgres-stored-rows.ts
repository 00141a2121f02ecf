import { sql } from 'kysely'
import type { Row } from '../../sql.js'
import type { StoredRows } from '../dialect.js'
import { storedVersionColumn } from '../dialect.js'

/**
 * Stored versions as a derived table named as the table (DialectSyntax.storedRows): `json_populate_record` reads
 * each version into the table's own row type, so that every column has its type (a rule comparing dates compares
 * dates; a bigint's digits, a timestamp's text and a JSON column's document all become what the table holds).
 *
 * @example
 * ```ts
 * db.selectFrom(postgresStoredRows('items', columns, '[{"id":1}]')).selectAll()
 * ```
 */
export const postgresStoredRows: StoredRows = (table, columns, documents) => {
  const members = columns.map(({ name }) => sql.ref(`r.${name}`))
  return sql<Row>`(select ${sql.join(members)}, ${sql.ref('d.ord')} as ${sql.id(storedVersionColumn)}
    from json_array_elements(cast(${documents} as json)) with ordinality as ${sql.raw('d(doc, ord)')}
    cross join lateral json_populate_record(cast(null as ${sql.table(table)}), ${sql.ref('d.doc')}) as ${sql.id('r')})`
    .as(table)
}
