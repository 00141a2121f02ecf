import { sql } from 'kysely'
import type { StoredVersions } from '../shared/stored-versions.js'
import { versionColumn } from '../shared/stored-versions.js'

/**
 * PostgreSQL: `json_populate_record` against the table's own row type, so that every column has its type (a rule
 * comparing dates compares dates). Inside the common table expression named like the table, the type name still
 * names the table's row type.
 *
 * @example
 * ```ts
 * db.with('items', () => postgresStoredVersions('items', columns, '[{"id":1}]')).selectFrom('items')
 * ```
 */
export const postgresStoredVersions: StoredVersions = (table, columns, documents) => {
  const members = columns.map(({ name }) => sql.ref(`r.${name}`))
  return sql`select ${sql.join(members)}, ${sql.ref('d.ord')} as ${sql.id(versionColumn)}
    from json_array_elements(cast(${documents} as json)) with ordinality as ${sql.raw('d(doc, ord)')}
    cross join lateral json_populate_record(null::${sql.id(table)}, ${sql.ref('d.doc')}) as ${sql.id('r')}`
}
