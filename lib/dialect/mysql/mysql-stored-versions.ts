import { sql } from 'kysely'
import type { StoredVersions } from '../shared/stored-versions.js'
import { memberPath, versionColumn } from '../shared/stored-versions.js'

/** Types a JSON_TABLE column takes as declared; the others are read as text (dates were stored as ISO text). */
const asDeclared = /^(tinyint|smallint|mediumint|int|integer|bigint|decimal|numeric|float|double|real|char|varchar)$/

/**
 * MySQL and MariaDB: `JSON_TABLE` over the array, each column typed as the table declares it (numbers and strings),
 * so that the driver reads them as it reads the table's (`TINYINT(1)` a boolean); the other types as text.
 *
 * @example
 * ```ts
 * db.with('items', () => mysqlStoredVersions('items', columns, '[{"id":1}]')).selectFrom('items')
 * ```
 */
export const mysqlStoredVersions: StoredVersions = (_table, columns, documents) => {
  const members = columns.map(({ name, type, declared }) => {
    const kind = asDeclared.test(type) && /^[a-z0-9 (),]+$/.test(declared) ? declared : 'longtext'
    return sql`${sql.id(name)} ${sql.raw(kind)} path ${sql.lit(memberPath(name))}`
  })
  return sql`select * from json_table(${documents}, '$[*]' columns (${sql.id(versionColumn)} for ordinality,
    ${sql.join(members)})) as ${sql.id('jt')}`
}
