import { sql } from 'kysely'
import type { StoredVersions } from '../shared/stored-versions.js'
import { memberPath, versionColumn } from '../shared/stored-versions.js'

/**
 * SQLite: `json_each` over the array, each column `json_extract`ed (SQLite's values are dynamically typed: a
 * JSON number is an INTEGER or REAL, as the column stores it).
 *
 * @example
 * ```ts
 * db.with('items', () => sqliteStoredVersions('items', columns, '[{"id":1}]')).selectFrom('items')
 * ```
 */
export const sqliteStoredVersions: StoredVersions = (_table, columns, documents) => {
  const members = columns.map(({ name }) =>
    sql`json_extract(${sql.ref('d.value')}, ${sql.lit(memberPath(name))}) as ${sql.id(name)}`)
  const version = sql`${sql.ref('d.key')} + 1 as ${sql.id(versionColumn)}`
  return sql`select ${sql.join(members)}, ${version} from json_each(${documents}) as ${sql.id('d')}`
}
