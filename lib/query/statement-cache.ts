import type { Compilable, CompiledQuery } from 'kysely'
import type { AnyDatabase, Row } from '../dialect/dialect.js'

/** How many query shapes one LIST keeps compiled; the least recently compiled one goes first. */
export const maxShapes = 256

function sameValues (left: readonly unknown[], right: readonly unknown[]): boolean {
  return left.length === right.length && left.every((value, index) => Object.is(value, right[index]))
}

/**
 * Compiled LIST statements by shape (which filters, which order, which columns; never values). Building and
 * compiling a Kysely query costs more than a short SQLite read, so each shape is compiled once and then run
 * with each request's values. A statement is kept only when Kysely bound exactly the values the shape
 * predicts, in that order, so a shape that binds differently is still answered correctly, just not cached.
 */
export class StatementCache {
  readonly #statements = new Map<string, CompiledQuery<Row>>()

  /** Runs the statement of `shape` with `parameters`, compiling `build()` the first time. */
  async rows (db: AnyDatabase, shape: string, parameters: readonly unknown[], build: () => Compilable<Row>): Promise<Row[]> {
    const cached = this.#statements.get(shape)
    if (cached !== undefined) return (await db.executeQuery<Row>({ ...cached, parameters })).rows
    const compiled = build().compile()
    if (sameValues(compiled.parameters, parameters)) {
      if (this.#statements.size >= maxShapes) this.#statements.delete(this.#statements.keys().next().value as string)
      this.#statements.set(shape, compiled)
    }
    return (await db.executeQuery<Row>(compiled)).rows
  }
}
