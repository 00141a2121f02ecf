import type { Compilable, CompiledQuery } from 'kysely'
import type { AnyDatabase, Row } from '../dialect/dialect.js'
import { paddedLength, padList } from '../query/statement-cache.js'

/** The most keys one statement carries; larger sets are split (every dialect allows far more parameters). */
export const maxBatch = 1024

/** Bucket index of a key count: 1 → 0, 2 → 1, 3..4 → 2, 5..8 → 3, ... 513..1024 → 10. */
function bucketOf (count: number): number {
  return Math.log2(paddedLength(count))
}

/** `build`'s statement for each power-of-two list size up to {@link maxBatch}. */
function compileBuckets (build: (keys: readonly unknown[]) => Compilable<Row>): CompiledQuery<Row>[] {
  const compiled: CompiledQuery<Row>[] = []
  for (let size = 1; size <= maxBatch; size *= 2) {
    const query = build(new Array<number>(size).fill(0)).compile()
    if (query.parameters.length !== size) throw new Error(`A batched relation query must have only its key list as parameters, got ${query.parameters.length} for ${size} keys`)
    compiled.push(query)
  }
  return compiled
}

/**
 * A `... WHERE key IN (...)` statement, compiled once per power-of-two list size at registration.
 * A batch of n keys runs the statement of the next size up, padded with its last key by `padList` (`IN (1, 2, 3, 3)`
 * means `IN (1, 2, 3)`). Nothing is compiled per request, and each relation has at most eleven SQL texts,
 * so prepared-statement caches stay warm.
 *
 * @example
 * ```ts
 * const authors = new BatchedQuery((keys) => db.selectFrom('authors').select(['id', 'name']).where('id', 'in', keys))
 * const rows = await authors.run(db, [1, 2, 3])
 * ```
 */
export class BatchedQuery {
  readonly #bySize: readonly CompiledQuery<Row>[]
  readonly #fallback: { readonly rowsPerKey: number, readonly bySize: readonly CompiledQuery<Row>[] } | undefined

  /**
   * `build` must make a query whose only parameters are the keys of the `IN` list it is given.
   * With `fallback`, `build`'s statement reads at most `rowsPerKey` rows per key of its list plus one: a batch that
   * gets more than that runs `fallback.build`'s statement instead (a cheap first try, an exact but slower second).
   */
  constructor (build: (keys: readonly unknown[]) => Compilable<Row>, fallback?: { readonly rowsPerKey: number, readonly build: (keys: readonly unknown[]) => Compilable<Row> }) {
    this.#bySize = compileBuckets(build)
    this.#fallback = fallback === undefined ? undefined : { rowsPerKey: fallback.rowsPerKey, bySize: compileBuckets(fallback.build) }
  }

  /** The SQL text used for a batch of `count` keys (for tests and logs). */
  sqlFor (count: number): string {
    return this.#statement(Math.min(count, maxBatch)).sql
  }

  /** The statement of a batch of `count` keys (1 to {@link maxBatch}): the constructor compiled every bucket. */
  #statement (count: number, bySize = this.#bySize): CompiledQuery<Row> {
    const compiled = bySize[bucketOf(count)]
    if (compiled === undefined) throw new Error(`no batched statement for ${count} keys`)
    return compiled
  }

  /** The rows matching any of the keys (distinct, non-null); one statement per {@link maxBatch} keys. */
  async run (db: AnyDatabase, keys: readonly unknown[]): Promise<Row[]> {
    if (keys.length <= maxBatch) return await this.#runBatch(db, keys)
    let rows: Row[] = []
    for (let start = 0; start < keys.length; start += maxBatch) {
      rows = rows.concat(await this.#runBatch(db, keys.slice(start, start + maxBatch)))
    }
    return rows
  }

  async #runBatch (db: AnyDatabase, keys: readonly unknown[]): Promise<Row[]> {
    if (keys.length === 0) return []
    const compiled = this.#statement(keys.length)
    const parameters = padList(keys)
    const { rows } = await db.executeQuery<Row>({ ...compiled, parameters })
    const fallback = this.#fallback
    if (fallback === undefined || rows.length <= parameters.length * fallback.rowsPerKey) return rows
    const exact = this.#statement(keys.length, fallback.bySize)
    return (await db.executeQuery<Row>({ ...exact, parameters })).rows
  }
}
