import type { CompiledQuery, KyselyPlugin, QueryResult } from 'kysely'
import type { StatementBuilder } from '../dialect/dialect.js'
import type { AnyDatabase, Row } from '../sql.js'
import { resultRows } from '../sql.js'
import { markOneRow } from '../execution/one-row.js'
import { declareCost } from '../execution/cost-class.js'
import type { CostDeclaration } from '../execution/cost-class.js'
import { runCompiled } from '../execution/prepared-kysely.js'
import { andThen } from '../execution/eventually.js'
import type { Eventually } from '../execution/eventually.js'
import type { RowDecoder } from './json-text.js'
import { LruCache } from '../execution/lru-cache.js'

/** How many query shapes one LIST keeps compiled; the least recently used one goes first. */
export const maxShapes = 256

/**
 * The length a list of `count` values is padded to: the next power of two (1, 2, 4, 8, ...), so that `IN`
 * lists of any length compile to a few SQL texts, not one per length.
 */
export function paddedLength (count: number): number {
  return count <= 1 ? 1 : 2 ** (32 - Math.clz32(count - 1))
}

/**
 * `values` padded to {@link paddedLength} by repeating the last one (`IN (1, 2, 3, 3)` means `IN (1, 2, 3)`).
 *
 * @example
 * ```ts
 * padList([1, 2, 3]) // [1, 2, 3, 3]
 * ```
 */
export function padList<T> (values: readonly T[]): readonly T[] {
  const size = paddedLength(values.length)
  if (size === values.length || values.length === 0) return values
  const padded = values.slice()
  const last = values.slice(-1) // non-empty: checked above
  while (padded.length < size) padded.push(...last)
  return padded
}

/**
 * A compiled statement with other parameters. Built as a literal: spreading a CompiledQuery and overriding
 * `parameters` takes V8's generic clone path, many times slower, on every statement of the data layer
 * (benchmarks/analysis.md#compiled-query-literal).
 *
 * @example
 * ```ts
 * await db.executeQuery(withParameters(byId, [7]))
 * ```
 */
export function withParameters<R> (compiled: CompiledQuery<R>, parameters: readonly unknown[]): CompiledQuery<R> {
  return { query: compiled.query, queryId: compiled.queryId, sql: compiled.sql, parameters }
}

/** Compiles a statement of the data layer with the dialect's `statementPlugin`, when it has one. */
export function compileWith (built: StatementBuilder, plugin: KyselyPlugin | undefined): CompiledQuery<Row> {
  return (plugin === undefined ? built : built.withPlugin(plugin)).compile()
}

function equalParameters (left: readonly unknown[], right: readonly unknown[]): boolean {
  return left.length === right.length && left.every((value, index) => Object.is(value, right[index]))
}

/**
 * Compiled statements by shape: LIST's (which filters, which order, which columns; never values), and the
 * writes' (which fields are sent, which scope). Building and compiling a Kysely query costs more than a
 * short SQLite read, so each shape is compiled once and then run with each request's values. A statement is kept only
 * when Kysely bound exactly the values the shape
 * predicts, in that order, so a shape that binds differently is still answered correctly, just not cached.
 */
export class StatementCache {
  readonly #statements = new LruCache<string, CompiledQuery<Row>>(maxShapes, undefined, 'compiled')
  readonly #plugin: KyselyPlugin | undefined
  readonly #decode: RowDecoder | undefined

  /** `plugin`: the dialect's `statementPlugin`, which every statement is compiled with; `decode`: what parses the
   * JSON text of the rows read (data/json-text.ts). */
  constructor (plugin?: KyselyPlugin, decode?: RowDecoder) {
    this.#plugin = plugin
    this.#decode = decode
  }

  /**
   * Runs the statement of `shape` with `parameters`, compiling `build()` the first time, and returns its rows:
   * at once where the database answered at once (eventually.ts). May throw.
   */
  rows (
    db: AnyDatabase,
    shape: string,
    parameters: readonly unknown[],
    build: () => StatementBuilder,
    cost?: CostDeclaration
  ): Eventually<Row[]> {
    return andThen(this.execute(db, shape, parameters, build, false, cost), resultRows)
  }

  /**
   * Runs the statement of `shape` as {@link rows} does, and returns Kysely's whole result (affected rows, insert
   * id), at once where the database answered at once (eventually.ts). May throw. `oneRow`: a SELECT that answers
   * at most one row (by primary key), see dialect/one-row.ts. `cost`: the shape's class where its tree does not tell it
   * (execution/cost-class.ts): `unbounded` for one that reads every row its filter finds (an ordering no index
   * gives, an aggregate), `cheap` for a DELETE that reaches no other table.
   */
  // Not async, as PreparedKysely's executeQuery: every statement of the data layer passes here.
  execute (
    db: AnyDatabase,
    shape: string,
    parameters: readonly unknown[],
    build: () => StatementBuilder,
    oneRow = false,
    cost?: CostDeclaration
  ): Eventually<QueryResult<Row>> {
    const cached = this.#statements.get(shape)
    if (cached !== undefined) return this.#decoded(runCompiled(db, withParameters(cached, parameters)))
    const compiled = compileWith(build(), this.#plugin)
    if (oneRow) markOneRow(compiled)
    if (cost !== undefined) declareCost(compiled, cost)
    if (equalParameters(compiled.parameters, parameters)) this.#statements.set(shape, compiled)
    return this.#decoded(runCompiled(db, compiled))
  }

  /** A result with its JSON text parsed, when the rows have any. */
  #decoded (result: Eventually<QueryResult<Row>>): Eventually<QueryResult<Row>> {
    return this.#decode === undefined ? result : andThen(result, this.#decode)
  }
}
