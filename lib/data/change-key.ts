import type { RowKey } from '../row-key.js'
import { isRecord } from '../schema/object-schema.js'
import type { Row } from '../sql.js'

// A row's key as the changes answer it (issue 40): the feed's `delete` events and `changed_since`'s `deleted` send
// the same object, read from the history's `row_key` (history-writer.ts rowKeyText: every key column in key order, a
// BIGINT as its digits), each part as LIST serializes that field, so that a client removes the row it holds under it.

/** A viewset's key as its changes answer it: its columns, and those the schema serves as numbers. */
export interface ChangeKey {
  readonly key: RowKey
  /** The key's columns whose schema type is a number: a BIGINT's digits are sent as a number while it is exact. */
  readonly numeric: ReadonlySet<string>
}

/** Whether a field's schema serves it as a number (and never as a string). */
function isNumeric (schema: unknown): boolean {
  if (!isRecord(schema)) return false
  const types: unknown[] = Array.isArray(schema.type) ? schema.type : [schema.type]
  return types.some((type) => type === 'integer' || type === 'number') && !types.includes('string')
}

/**
 * The key of a viewset as its changes answer it, from the entity schema's properties.
 *
 * @example
 * ```ts
 * const properties = { book_id: { type: 'integer' }, tag: { type: 'string' } }
 * changeKeyOf(new RowKey(['book_id', 'tag']), properties) // numeric: book_id
 * ```
 */
export function changeKeyOf (key: RowKey, properties: Readonly<Record<string, unknown>>): ChangeKey {
  return Object.freeze({ key, numeric: new Set(key.columns.filter((column) => isNumeric(properties[column]))) })
}

/** A stored part as sent: a number field's digits as a number while exact, else as stored. */
function partOf (value: unknown, numeric: boolean): unknown {
  if (!numeric || typeof value !== 'string' || !/^-?\d{1,16}$/.test(value)) return value
  const number = Number(value)
  return Number.isSafeInteger(number) ? number : value
}

/**
 * The key object of a history entry's `row_key`: every key column in key order (`{"book_id":1,"tag":"a,b"}`), or
 * `undefined` for text that names no row of this key (a hand-written entry missing a part).
 *
 * @example
 * ```ts
 * storedKey('{"id":"5"}', changeKeyOf(new RowKey(['id']), { id: { type: 'integer' } })) // { id: 5 }
 * ```
 */
export function storedKey (rowKey: string, { key, numeric }: ChangeKey): Row | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(rowKey)
  } catch {
    return undefined
  }
  if (!isRecord(parsed)) return undefined
  const object: Row = {}
  for (const column of key.columns) {
    const value = parsed[column]
    if (value === undefined || value === null) return undefined
    object[column] = partOf(value, numeric.has(column))
  }
  return object
}

/**
 * A key's identity, equal for a row read from the table and for its stored key whatever form each driver gives a
 * part (`5`, `"5"`, `5n`, a date or its ISO text): each part's text, in key order.
 *
 * @example
 * ```ts
 * keyIdentity(key, { book_id: 1, tag: 'a' }) === keyIdentity(key, { book_id: '1', tag: 'a' }) // true
 * ```
 */
export function keyIdentity (key: RowKey, row: Row): string {
  return key.columns.map((column) => {
    const value = row[column]
    return value instanceof Date ? value.toISOString() : String(value)
  }).join('\u0000')
}
