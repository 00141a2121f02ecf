import { sql } from 'kysely'
import type { Expression } from 'kysely'

/** The casts of a JSON scalar's text, by its schema type: numbers as JSON's own doubles, booleans as booleans. */
const casts = { string: '', number: '::double precision', integer: '::double precision', boolean: '::boolean' }

/**
 * PostgreSQL's scalar inside a `jsonb`, `json` or `text` column: read as `jsonb` (no conversion for a `jsonb` column,
 * so an expression index on `(meta #>> '{color}')` still matches), `#>>` answers its text (NULL for JSON null or a
 * missing key), cast to the schema's type so that numbers compare and sort as numbers. The cast fails (a database
 * fault) on a value of another type than the schema says, as a column of the wrong type would.
 *
 * @example
 * ```ts
 * postgresJsonScalar('meta', ['size', 'width'], 'number') // ("meta"::jsonb #>> '{size,width}')::double precision
 * ```
 */
export function postgresJsonScalar (
  column: string,
  keys: readonly string[],
  type: keyof typeof casts
): Expression<unknown> {
  return sql`(${sql.ref(column)}::jsonb #>> ${sql.lit(`{${keys.join(',')}}`)})${sql.raw(casts[type])}`
}
