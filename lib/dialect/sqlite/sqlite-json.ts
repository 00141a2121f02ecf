import { sql } from 'kysely'
import type { Expression } from 'kysely'

/**
 * SQLite's scalar inside JSON text (a column declared `json` or `text`): `json_extract` answers SQL values, text for
 * a string, a number for a number, 1/0 for true/false and NULL for JSON null or a missing key, which compare with
 * bound values as they are.
 *
 * @example
 * ```ts
 * sqliteJsonScalar('meta', ['color']) // json_extract("meta", '$.color')
 * ```
 */
export function sqliteJsonScalar (column: string, keys: readonly string[]): Expression<unknown> {
  return sql`json_extract(${sql.ref(column)}, ${sql.lit(`$.${keys.join('.')}`)})`
}
