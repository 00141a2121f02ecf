/**
 * A table's row key: one column or several (a composite primary key), and everything the layers do with it — the
 * `WHERE` that finds one row, the parts bound as parameters, the key read off a row, keys compared. One place, so
 * that no layer spreads `primaryKey: string` and a composite key is served by the same code as a single one.
 */
import { expressionBuilder, sql } from 'kysely'
import type { Expression, RawBuilder, SqlBool } from 'kysely'
import type { Row } from './sql.js'
import { compositeKey } from './sql.js'

/** A key's columns in key order: at least one. */
export type KeyColumns = readonly [string, ...string[]]

// Kysely's expression builder over tables known at run time, as the data layer's statements are (AnyDatabase).
const eb = expressionBuilder<Record<string, Row>, string>()

/** Whether a list of names has at least one, as {@link KeyColumns} types it. */
export function isKeyColumns (columns: readonly string[]): columns is KeyColumns {
  return columns.length > 0
}

/**
 * A key value in words, for messages: `id = 7`, `book_id = 1, tag_id = 2` (a composite key's value is its parts).
 *
 * @example
 * ```ts
 * describeKey(['book_id', 'tag_id'], [1, 2]) // 'book_id = 1, tag_id = 2'
 * ```
 */
export function describeKey (columns: readonly string[], id: unknown): string {
  const parts = columns.length > 1 && Array.isArray(id) ? id : [id]
  return columns.map((column, index) => `${column} = ${String(parts[index])}`).join(', ')
}

/**
 * The key of a table's rows. A key value (`id` in the data layer) is the column's value for a single-column key, as
 * it always was, and the parts in column order (an array) for a composite key.
 *
 * @example
 * ```ts
 * const key = new RowKey(['book_id', 'tag_id'])
 * db.selectFrom('book_tags').selectAll().where(key.match([1, 2])) // where ("book_id" = ? and "tag_id" = ?)
 * key.of({ book_id: 1, tag_id: 2, note: 'x' }) // [1, 2]
 * ```
 */
export class RowKey {
  readonly columns: KeyColumns
  /** The first column: the whole key when it has one column. */
  readonly first: string
  readonly composite: boolean

  constructor (columns: KeyColumns) {
    this.columns = Object.freeze([...columns] as const)
    this.first = columns[0]
    this.composite = columns.length > 1
    Object.freeze(this)
  }

  /** Whether `column` is one of the key's columns. */
  has (column: string): boolean {
    return this.columns.includes(column)
  }

  /** The parts of a key value in column order: the values {@link match} binds, in that order. */
  parts (id: unknown): readonly unknown[] {
    return this.composite && Array.isArray(id) ? id : [id]
  }

  /**
   * A key value as the helpers take it (`findById`, `update`, `deleteById`…): the value, a composite key's parts in
   * column order, or an object of exactly the key's columns (`{ book_id: 1, tag_id: 2 }`), as the data layer passes
   * keys. Any other shape throws a TypeError naming the key's columns, rather than reach a row by half a key.
   *
   * @example
   * ```ts
   * new RowKey(['book_id', 'tag_id']).given({ tag_id: 2, book_id: 1 }) // [1, 2]
   * ```
   */
  given (id: unknown): unknown {
    const wrong = (): never => {
      const form = this.composite ? 'its parts in that order' : 'its value'
      const object = this.columns.map((column) => `${column}: …`).join(', ')
      throw new TypeError(`A key of ${this.columns.join(', ')} is ${form}, or an object of exactly those columns ` +
        `({ ${object} })`)
    }
    if (typeof id === 'object' && id !== null && !Array.isArray(id) && Object.getPrototypeOf(id) === Object.prototype) {
      const named = Object.entries(id)
      if (named.length !== this.columns.length || !named.every(([name]) => this.has(name))) wrong()
      const values = new Map(named)
      return this.composite ? this.columns.map((column) => values.get(column)) : values.get(this.first)
    }
    if (this.composite && (!Array.isArray(id) || id.length !== this.columns.length)) wrong()
    return id
  }

  /** The parts of several key values, in order: what {@link matchAny} binds. */
  parameters (ids: readonly unknown[]): readonly unknown[] {
    return this.composite ? ids.flatMap((id) => this.parts(id)) : ids
  }

  /** The key value of a row (as the data layer passes keys). */
  of (row: Row): unknown {
    return this.composite ? this.columns.map((column) => row[column]) : row[this.first]
  }

  /** Whether a row has every part of its key (not `undefined` nor `null`). */
  present (row: Row): boolean {
    return this.columns.every((column) => row[column] !== undefined && row[column] !== null)
  }

  /**
   * `"column" = ?` for each part, joined by `and`: the row with this key. A single-column key compiles to exactly
   * the SQL of `.where(column, '=', id)`, so its statements and plans are those of before.
   */
  match (id: unknown, qualifier?: string): Expression<SqlBool> {
    const parts = this.parts(id)
    const terms = this.columns.map((column, index) =>
      eb(qualifier === undefined ? column : `${qualifier}.${column}`, '=', parts[index]))
    const [only] = terms
    return terms.length === 1 && only !== undefined ? only : eb.and(terms)
  }

  /** `"a", "b"`: the key's columns as an ORDER BY term, in key order (one column's SQL is `.orderBy(column)`'s). */
  ordered (): RawBuilder<unknown> {
    return sql.join(this.columns.map((column) => sql.ref(column)))
  }

  /** The rows with any of these keys: an `in` list for a single column, else one {@link match} per key, or'ed. */
  matchAny (ids: readonly unknown[]): Expression<SqlBool> {
    if (!this.composite) return eb(this.first, 'in', [...ids])
    return eb.or(ids.map((id) => this.match(id)))
  }

  /** A Map key for a row's key, as a dialect's `keyOf` compares values: equal keys give equal Map keys. */
  mapKeyOf (row: Row, keyOf: (value: unknown) => unknown): unknown {
    return this.composite ? compositeKey(row, this.columns, keyOf) : keyOf(row[this.first])
  }

  /** A Map key for a key value, as {@link mapKeyOf} gives it for the row with that key. */
  mapKey (id: unknown, keyOf: (value: unknown) => unknown): unknown {
    return this.composite ? this.mapKeyOf(this.rowOf(id), keyOf) : keyOf(id)
  }

  /** The key's columns with the parts of a key value. */
  rowOf (id: unknown): Row {
    const parts = this.parts(id)
    return Object.fromEntries(this.columns.map((column, index) => [column, parts[index]]))
  }

  /** A key value in words, for messages: `id = 7`, `book_id = 1, tag_id = 2`. */
  describe (id: unknown): string {
    return describeKey(this.columns, id)
  }

  /** The key in a path segment: each part's text percent-encoded (a comma too), joined by commas. */
  format (id: unknown): string {
    return this.parts(id).map((part) => encodeURIComponent(String(part))).join(',')
  }
}
