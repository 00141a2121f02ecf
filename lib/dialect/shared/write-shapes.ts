import type { WriteScope } from '../dialect.js'
import type { Row } from '../../sql.js'
import type { RowKey } from '../../row-key.js'

// What every dialect's single-row writes share: a write is compiled once per set of fields sent (and
// scope), as LIST statements are per shape, and then run with each request's values. The fields are
// taken in sorted order, so that two bodies sending the same fields in another order share a statement.

/** The fields a write sends, in canonical order, and their values in that order. */
export interface SentFields {
  readonly fields: readonly string[]
  /** The fields as a statement's shape: `["name","price"]`. */
  readonly shape: string
  readonly parameters: readonly unknown[]
}

/**
 * The fields of `values` in sorted order with their values.
 *
 * @example
 * ```ts
 * // { fields: ['name', 'price'], shape: '["name","price"]', parameters: ['Bread', 2] }
 * sentFields({ price: 2, name: 'Bread' })
 * ```
 */
export function sentFields (values: Row): SentFields {
  const fields = Object.keys(values).sort()
  return { fields, shape: JSON.stringify(fields), parameters: fields.map((field) => values[field]) }
}

/** `values` with its keys in the order of `fields`: the columns of the compiled statement, in that order. */
export function inFieldOrder (fields: readonly string[], values: Row): Row {
  const ordered: Row = {}
  for (const field of fields) ordered[field] = values[field]
  return ordered
}

/** A scope's part of a statement's shape, and the values it binds after the key's. */
export function scopeShape (scope: WriteScope | undefined): string {
  return scope === undefined ? '' : scope.shape
}

/** The key's parts, then the scope's values: the order in which `WHERE key = ? AND scope` binds them. */
export function keyAndScope (key: RowKey, id: unknown, scope: WriteScope | undefined): readonly unknown[] {
  const parts = key.parts(id)
  return scope === undefined ? parts : [...parts, ...scope.parameters]
}
