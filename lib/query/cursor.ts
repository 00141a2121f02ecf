import { Buffer } from 'node:buffer'
import { BinaryOperationNode, OperatorNode, sql, TupleNode, ValueNode } from 'kysely'
import type { Expression, SqlBool } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { Row } from '../sql.js'
import { ViewsetErrors } from '../errors.js'
import type { AnyExpressionBuilder, Condition } from './condition.js'
import { expressionOf } from './condition.js'
import type { ScalarType } from './field-types.js'
import type { OrderKey, Ordering } from './ordering.js'
import { keyText, nullsPosition, orderValue } from './ordering.js'

/**
 * A position in an ordering, and which side of it a page reads: `after` (the `next` link) or `before`
 * (the `prev` link). `values` are the ordering keys' values of the row at the position, key by key.
 */
export interface CursorPosition {
  readonly direction: 'after' | 'before'
  readonly values: readonly unknown[]
}

const directions = { a: 'after', b: 'before' } as const
const base64url = /^[A-Za-z0-9_-]+$/

/**
 * The opaque text of a position: base64url of `[direction, order shape, values]`. Not signed, so that
 * processes accept each other's cursors with no shared key: a forged cursor can only name another
 * position of the same ordering, which any client could reach by paging.
 *
 * @example
 * ```ts
 * encodeCursor(ordering, { direction: 'after', values: ['bread', 4] }) // 'WyJhIiwibmFtZSxpZCIsWyJicmVhZCIsNF1d'
 * ```
 */
export function encodeCursor (ordering: Ordering, position: CursorPosition): string {
  return Buffer.from(
    JSON.stringify([position.direction === 'after' ? 'a' : 'b', ordering.shape, position.values])
  ).toString('base64url')
}

/** The name a page selects a relation path's sort value under (`author.name` is no column of the row). */
export function cursorAlias (index: number): string {
  return `__cursor_${index}`
}

/** The values of a row's ordering keys: the position just after it (or just before it). */
export function positionOf (ordering: Ordering, row: Row, direction: CursorPosition['direction']): CursorPosition {
  // Dates become their ISO text, as JSON writes them; every database compares that text to its date columns.
  return {
    direction,
    values: ordering.keys.map(
      (key, index) => row[key.expression === undefined ? key.field : cursorAlias(index)] ?? null
    ),
  }
}

/**
 * A keyset page from the rows read past `cursor` (one more than `limit`, to tell whether more follow, in reverse order
 * when going backwards), with the positions its `next` and `prev` links carry.
 *
 * @example
 * ```ts
 * const page = keysetPage(fetched, 20, query.ordering, cursor) // { rows, next?, prev? }
 * ```
 */
export function keysetPage (
  fetched: readonly Row[], limit: number, order: Ordering, cursor: CursorPosition | undefined
): { rows: Row[]; next: CursorPosition | undefined; prev: CursorPosition | undefined } {
  const backwards = cursor?.direction === 'before'
  const more = fetched.length > limit
  const rows = fetched.slice(0, limit)
  if (backwards) rows.reverse()
  const first = rows[0]
  const last = rows[rows.length - 1]
  // Backwards, the cursor's row (or what now stands there) follows this page.
  if (backwards) {
    return {
      rows,
      next: last === undefined ? undefined : positionOf(order, last, 'after'),
      prev: more && first !== undefined ? positionOf(order, first, 'before') : undefined,
    }
  }
  // A page past the cursor has rows before it; an empty one links back from the cursor itself.
  const prev = cursor === undefined
    ? undefined
    : first === undefined ? { direction: 'before' as const, values: cursor.values } : positionOf(order, first, 'before')
  return { rows, next: more && last !== undefined ? positionOf(order, last, 'after') : undefined, prev }
}

/** Whether a decoded JSON value may be a value of a column of this type (drivers answer some types as text or numbers).
 * */
function fits (value: unknown, type: ScalarType): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string'
    // bigint and numeric columns come back as digits from pg and mysql2.
    case 'integer':
      return (
        (typeof value === 'number' && Number.isInteger(value)) ||
        (typeof value === 'string' && /^-?\d{1,40}$/.test(value))
      )
    case 'number':
      return (
        (typeof value === 'number' && Number.isFinite(value)) ||
        (typeof value === 'string' && /^-?\d{1,40}(\.\d{1,40})?$/.test(value))
      )
    // SQLite and MySQL store booleans as 0 and 1.
    case 'boolean':
      return typeof value === 'boolean' || value === 0 || value === 1
  }
}

/**
 * Reads `?cursor=` strictly: base64url text (canonical, nothing added), of JSON that is a position of this
 * very ordering (its shape, one value per key, each of the key's type, `null` only for a nullable key).
 * Anything else is a 400 `FST_VIEWSET_INVALID_CURSOR`, before any SQL.
 */
export function decodeCursor (
  text: string,
  ordering: Ordering,
  types: ReadonlyMap<string, ScalarType>
): CursorPosition {
  const invalid = (why: string): never => {
    throw new ViewsetErrors.InvalidCursor(
      `The cursor is not valid: ${why}. Follow the Link header, or start again without cursor.`
    )
  }
  if (!base64url.test(text)) invalid('it is not base64url text')
  const bytes = Buffer.from(text, 'base64url')
  const json = bytes.toString('utf8')
  // Buffer ignores stray bits and bad UTF-8: only a cursor that encodes back to itself is one we made.
  if (Buffer.from(json, 'utf8').toString('base64url') !== text) invalid('it is not base64url text')
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    invalid('it does not decode to a position')
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return invalid('it does not decode to a position')
  const [tag, shape, values]: unknown[] = parsed
  if (tag !== 'a' && tag !== 'b') return invalid('it does not decode to a position')
  if (shape !== ordering.shape) return invalid(`it was made for another order_by than ${ordering.shape}`)
  if (!Array.isArray(values) || values.length !== ordering.keys.length) {
    return invalid('it does not decode to a position of this order')
  }
  ordering.keys.forEach((key, index) => {
    const value: unknown = values[index]
    const type = types.get(key.field)
    // A relation path (`author.name`) has no type here: whichever JSON scalar.
    const ok =
      value === null
        ? key.nullable
        : type === undefined
          ? key.expression !== undefined && ['string', 'number', 'boolean'].includes(typeof value)
          : fits(value, type)
    if (!ok) invalid(`its value of ${key.field} is not one of that field`)
  })
  return { direction: directions[tag], values }
}

/** The same ordering read backwards: every key's direction flipped, and a chosen NULLs position with it (a default one
 * flips with the direction), so the order reverses exactly. */
export function reversed (ordering: Ordering): Ordering {
  const keys = ordering.keys.map((key): OrderKey => {
    const flipped = { ...key, descending: !key.descending }
    if (key.nulls === undefined) return flipped
    return { ...flipped, nulls: key.nulls === 'first' ? 'last' : 'first' }
  })
  return { shape: keys.map(keyText).join(','), keys }
}

/**
 * The keyset `WHERE` of a page after a position, in `ordering` (pass the reversed ordering for a page
 * before it). NULLs come where ORDER BY puts them (ordering.ts): by default NULL is the largest value (last
 * ascending, first descending), else where the key's `.nullsfirst`/`.nullslast` chose. When every key goes the
 * same way and none is nullable it is one row-value comparison,
 * `(a, id) > (?, ?)`, which an index on `(a, id)` serves directly; else its expansion
 * `a > ? OR (a = ? AND id > ?)`, with the NULL cases spelled out.
 */
export function keysetCondition (
  ordering: Ordering,
  values: readonly unknown[],
  dialect: Pick<ViewsetDialect, 'values'>
): Condition {
  const { keys } = ordering
  const bound = values.map((value) => (value === null ? null : dialect.values.parameter(value)))
  const [first] = keys
  const uniform = first !== undefined && keys.every((key) => !key.nullable && key.descending === first.descending)
  if (uniform) {
    const op = first.descending ? '<' : '>'
    // A key computed from values (a child count under rules, q's relevance) binds them where it is written, before
    // `bound`.
    const ruled = keys.flatMap((key) => key.ruled?.parameters ?? [])
    return {
      shape: `keyset:${op}`,
      parameters: ruled.length === 0 ? bound : [...ruled, ...bound],
      // Kysely's tuple builders are typed for a fixed number of items: the row value is built from its nodes, a
      // comparison all the same to a plugin (the dialect's statementPlugin).
      expression: (eb) =>
        keys.length === 1
          ? eb(orderValue(first), op, bound[0])
          : expressionOf(
            BinaryOperationNode.create(
              TupleNode.create(keys.map((key) => orderValue(key).toOperationNode())),
              OperatorNode.create(op),
              TupleNode.create(bound.map((value) => ValueNode.create(value)))
            )
          ),
    }
  }
  // The shape names which values are null: their terms are different SQL.
  return {
    shape: `keyset:${bound.map((value) => (value === null ? 'n' : 'v')).join('')}`,
    parameters: expandedParameters(keys, bound),
    expression: (eb) => {
      const branches: Array<Expression<SqlBool>> = []
      for (const [i, key] of keys.entries()) {
        const after = afterTerm(eb, key, bound[i])
        if (after === undefined) continue
        const equal = keys
          .slice(0, i)
          .map((key, j) => (bound[j] === null ? eb(orderValue(key), 'is', null) : eb(orderValue(key), '=', bound[j])))
        branches.push(equal.length === 0 ? after : eb.and([...equal, after]))
      }
      return branches.length === 0 ? sql<SqlBool>`1 = 0` : eb.or(branches)
    },
  }
}

/**
 * The values of the expanded keyset condition, in the order its SQL binds them: each branch's equal terms, then its
 * after term ({@link afterTerm}), a ruled key's rule values (ordering.ts) wherever its value is written.
 */
function expandedParameters (keys: readonly OrderKey[], bound: readonly unknown[]): unknown[] {
  const parameters: unknown[] = []
  const value = (key: OrderKey | undefined): readonly unknown[] => key?.ruled?.parameters ?? []
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]
    if (key === undefined || (bound[i] === null && nullsPosition(key) === 'last')) continue
    for (let j = 0; j < i; j++) {
      parameters.push(...value(keys[j]))
      if (bound[j] !== null) parameters.push(bound[j])
    }
    parameters.push(...value(key))
    if (bound[i] === null) continue
    parameters.push(bound[i])
    if (nullsPosition(key) === 'last' && key.nullable) parameters.push(...value(key))
  }
  return parameters
}

/**
 * Rows strictly after `value` on one key, or `undefined` when none can be (after NULL, where NULLs come last): the
 * values past it, and the NULLs when they come last.
 */
function afterTerm (eb: AnyExpressionBuilder, key: OrderKey, value: unknown): Expression<SqlBool> | undefined {
  const column = orderValue(key)
  const last = nullsPosition(key) === 'last'
  if (value === null) return last ? undefined : eb(column, 'is not', null)
  const past = eb(column, key.descending ? '<' : '>', value)
  return key.nullable && last ? eb.or([past, eb(column, 'is', null)]) : past
}
