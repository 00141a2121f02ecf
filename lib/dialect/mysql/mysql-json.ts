import { sql } from 'kysely'
import type { Expression } from 'kysely'

/**
 * MySQL's and MariaDB's scalar inside a JSON column: `json_value` answers its unquoted text (NULL for JSON null or a
 * missing key, which `json_unquote(json_extract(…))` would answer as the text `null`); numbers are cast to doubles
 * so that they compare and sort as numbers, and a boolean, which MariaDB answers as `1`/`0` and MySQL as
 * `true`/`false`, becomes 1 or 0.
 *
 * @example
 * ```ts
 * mysqlJsonScalar('meta', ['rank'], 'number') // cast(json_value(`meta`, '$.rank') as double)
 * ```
 */
export function mysqlJsonScalar (
  column: string,
  keys: readonly string[],
  type: 'string' | 'number' | 'integer' | 'boolean'
): Expression<unknown> {
  const value = sql`json_value(${sql.ref(column)}, ${sql.lit(`$.${keys.join('.')}`)})`
  if (type === 'boolean') return sql`(${value} in ('true', '1'))`
  return type === 'string' ? value : sql`cast(${value} as double)`
}
