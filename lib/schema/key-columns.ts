import { invalidOption } from '../errors.js'
import { isKeyColumns } from '../row-key.js'
import type { KeyColumns } from '../row-key.js'

// The `primaryKey` option: a field, or a list of fields (a composite key, in the key's column order). Omitted, it
// is `id` when the schema has that field (as it always was), else the table's own primary key, read from the
// catalog when the viewset is mounted (mount/row-key-check.ts).

/**
 * The key columns `primaryKey` names, checked against the schema's fields; `undefined` when the option is omitted
 * and the schema has no `id`: the catalog decides at mounting. Throws `FST_VIEWSET_INVALID_OPTION` naming
 * `primaryKey`.
 *
 * @example
 * ```ts
 * checkPrimaryKey(['book_id', 'tag_id'], { book_id: {}, tag_id: {} }) // ['book_id', 'tag_id']
 * ```
 */
export function checkPrimaryKey (value: unknown, properties: object): KeyColumns | undefined {
  const fields = Object.keys(properties).join(', ')
  if (value === undefined) return Object.hasOwn(properties, 'id') ? ['id'] : undefined
  const columns: unknown[] = Array.isArray(value) ? value : [value]
  if (!columns.every((column): column is string => typeof column === 'string') || !isKeyColumns(columns)) {
    invalidOption('primaryKey', 'expected a field name or a non-empty array of field names')
  }
  for (const column of columns) {
    if (!Object.hasOwn(properties, column)) {
      invalidOption('primaryKey', `"${column}" is not a field of the schema (fields: ${fields})`)
    }
  }
  if (new Set(columns).size !== columns.length) {
    invalidOption('primaryKey', `a field is listed twice (${columns.join(', ')})`)
  }
  return columns
}
