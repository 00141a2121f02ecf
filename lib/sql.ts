/**
 * The SQL vocabulary every layer shares: a row, Kysely over tables known only at run time, and the small helpers
 * that read results, build patterns and keys, and recognise driver errors, whatever the database.
 */
import type { Kysely, QueryResult } from 'kysely'

/** A row as the driver returns it. */
export type Row = Record<string, unknown>

/** Kysely over tables known only at run time; names come from checked options. */
export type AnyDatabase = Kysely<Record<string, Row>>

/** A result's rows: handed to `then` where an async frame would only unwrap them. */
export function resultRows<R> (result: QueryResult<R>): R[] {
  return result.rows
}

/** Whether a write without RETURNING changed a row, as the driver counts it. */
export function deletedAny ({ numAffectedRows }: QueryResult<unknown>): boolean {
  return numAffectedRows !== undefined && numAffectedRows > 0n
}

/** The first row of a result (a read by primary key), or `undefined`. */
export function firstRow<R> (result: QueryResult<R>): R | undefined {
  return result.rows[0]
}

/** An integer's canonical digits, at most 16 of them: a number below 2^53 may spell it. */
const integerDigits = /^-?(?:0|[1-9]\d{0,15})$/

/**
 * A key value as a Map key: the value itself, except dates (by time), other objects such as buffers (as text), and
 * an integer's canonical digits while exact (as the number): drivers answer an integer column a number while exact,
 * else digits, and a BIGINT a schema serves as a string is sent as digits, so `'5'` and `5` of one column meet.
 */
export function mapKey (value: unknown): unknown {
  if (typeof value === 'string') {
    if (!integerDigits.test(value)) return value
    const number = Number(value)
    return Number.isSafeInteger(number) ? number : value
  }
  return typeof value === 'object' && value !== null ? (value instanceof Date ? value.getTime() : String(value)) : value
}

/** For drivers that answer `count(*)` as a number, or as digits past 2^53. */
export function countOf (cell: unknown): number {
  return Number(cell)
}

/** For drivers that bind every JSON value as it is. */
export function bindAsIs (value: unknown): unknown {
  return value
}

/** Escapes `%`, `_` and the escape character itself, for a substring `LIKE` with `ESCAPE '!'`. */
export function containsPattern (term: string): string {
  return `%${escapeLike(term)}%`
}

/** `term` with `%`, `_` and `!` escaped for `LIKE … ESCAPE '!'`. */
function escapeLike (term: string): string {
  return term.replace(/[!%_]/g, '!$&')
}

/** A `LIKE` pattern (`ESCAPE '!'`) of the values that start with `term` (`%` and `_` match themselves). */
export function startsWithPattern (term: string): string {
  return `${escapeLike(term)}%`
}

/** A `LIKE` pattern (`ESCAPE '!'`) of the values that end with `term` (`%` and `_` match themselves). */
export function endsWithPattern (term: string): string {
  return `%${escapeLike(term)}`
}

/** Runs `work` in a transaction, or in the caller's when `db` already is one (Kysely does not nest them). */
export async function inTransaction<T> (db: AnyDatabase, work: (trx: AnyDatabase) => Promise<T>): Promise<T> {
  return db.isTransaction ? await work(db) : await db.transaction().execute(work)
}

/** A Map key for the values of several columns of a row, as a dialect's `keyOf` compares them. */
export function compositeKey (row: Row, columns: readonly string[], keyOf: (value: unknown) => unknown): string {
  return columns
    .map((column) => {
      const key = keyOf(row[column])
      return `${typeof key}:${String(key)}`
    })
    .join('\u0000')
}

/** Reads a string property of an unknown error object. */
export function errorProperty (error: unknown, key: string): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const value: unknown = Reflect.get(error, key)
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined
}

/** Connection-level failures that every driver reports through Node's socket errors. */
export function isConnectionError (error: unknown): boolean {
  const code = errorProperty(error, 'code')
  return (
    code !== undefined &&
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      'ENOTFOUND',
      'EHOSTUNREACH',
      'PROTOCOL_CONNECTION_LOST',
    ].includes(code)
  )
}
