import type { AliasedRawBuilder, Compilable, CompiledQuery, SelectQueryBuilder } from 'kysely'
import type { AnyDatabase, KeyTable, Row } from '../dialect/dialect.js'
import { paddedLength, padList } from '../query/statement-cache.js'

/** The most keys one statement carries; larger sets are split (every dialect allows far more parameters). */
export const maxBatch = 1024

/** A relation's SELECT: tables known at run time, every name checked against the catalog at registration. */
export type Builder = SelectQueryBuilder<Record<string, Row>, string, Row>

/**
 * The rows of `table as alias` whose `column` is one of a batch's keys, to build a relation's statement on:
 * `where alias.column in (...)`, or a join from the dialect's key table.
 */
export type Keyed = (table: string, alias: string, column: string) => Builder

/** Builds a relation's statement for a batch of `count` keys (a power of two, see {@link maxBatch}) from {@link Keyed}. */
export type BatchBuilder = (keyed: Keyed, count: number) => Compilable<Row>

/** The alias of the key table in a statement that joins from it. */
const keysAlias = 'viewset_keys'

/** Bucket index of a key count: 1 → 0, 2 → 1, 3..4 → 2, 5..8 → 3, ... 513..1024 → 10. */
function bucketOf (count: number): number {
  return Math.log2(paddedLength(count))
}

/** One statement per power-of-two list size up to {@link maxBatch}. */
type Buckets = readonly CompiledQuery<Row>[]

/** `build`'s statement with an `IN` list of each size. */
function listBuckets (db: AnyDatabase, build: BatchBuilder): Buckets {
  const compiled: CompiledQuery<Row>[] = []
  for (let size = 1; size <= maxBatch; size *= 2) {
    const keys = new Array<number>(size).fill(0)
    const query = build((table, alias, column) => db.selectFrom(`${table} as ${alias}`).where(`${alias}.${column}`, 'in', keys), size).compile()
    if (query.parameters.length !== size) throw new Error(`A batched relation query must have only its key list as parameters, got ${query.parameters.length} for ${size} keys`)
    compiled.push(query)
  }
  return compiled
}

/** `build`'s statement joined from the key table, its only parameter, for each size (which only a row cap may read). */
function tableBuckets (db: AnyDatabase, build: BatchBuilder, keyTable: KeyTable): Buckets {
  const compiled: CompiledQuery<Row>[] = []
  for (let size = 1; size <= maxBatch; size *= 2) {
    const query = build((table, alias, column) => fromKeys(db, keyTable.source(keysAlias))
      .innerJoin(`${table} as ${alias}`, `${alias}.${column}`, `${keysAlias}.value`), size).compile()
    if (query.parameters.length !== 1) throw new Error(`A batched relation query must have only its key table as parameter, got ${query.parameters.length}`)
    compiled.push(query)
  }
  return compiled
}

/** A SELECT from the key table, typed as a relation's builder: the table's only column read is `value`, in the join. */
function fromKeys (db: AnyDatabase, source: AliasedRawBuilder<Row, string>): Builder {
  return db.selectFrom(source)
}

/**
 * A relation's statement for a batch of keys, compiled once per power-of-two batch size at registration,
 * so that nothing is compiled per request and each relation has a few SQL texts that prepared-statement
 * caches keep warm. On a dialect with a key table (SQLite's `json_each`), the keys are one parameter and the
 * statement joins from them; elsewhere (and for keys the key table cannot carry) they are an `IN` list padded
 * to its size with its last key by `padList` (`IN (1, 2, 3, 3)` means `IN (1, 2, 3)`).
 *
 * @example
 * ```ts
 * const authors = new BatchedQuery(db, undefined, (keyed) => keyed('authors', 't', 'id').select(['t.id', 't.name']))
 * const rows = await authors.run(db, [1, 2, 3])
 * ```
 */
export class BatchedQuery {
  readonly #lists: Buckets
  readonly #tables: Buckets | undefined
  readonly #keyTable: KeyTable | undefined
  readonly #fallback: { readonly rowsPerKey: number, readonly lists: Buckets, readonly tables: Buckets | undefined } | undefined

  /**
   * `build` must make a query whose only parameters are the keys `keyed` binds.
   * With `fallback`, `build`'s statement reads at most `rowsPerKey` rows per key of its bucket plus one: a batch that
   * gets more than that runs `fallback.build`'s statement instead (a cheap first try, an exact but slower second).
   */
  constructor (db: AnyDatabase, keyTable: KeyTable | undefined, build: BatchBuilder, fallback?: { readonly rowsPerKey: number, readonly build: BatchBuilder }) {
    this.#keyTable = keyTable
    this.#lists = listBuckets(db, build)
    this.#tables = keyTable === undefined ? undefined : tableBuckets(db, build, keyTable)
    this.#fallback = fallback === undefined
      ? undefined
      : { rowsPerKey: fallback.rowsPerKey, lists: listBuckets(db, fallback.build), tables: keyTable === undefined ? undefined : tableBuckets(db, fallback.build, keyTable) }
  }

  /** The SQL text used for a batch of `count` keys of the `IN` list form (for tests and logs). */
  sqlFor (count: number): string {
    return this.#statement(this.#lists, Math.min(count, maxBatch)).sql
  }

  /** The statement of a batch of `count` keys (1 to {@link maxBatch}): the constructor compiled every bucket. */
  #statement (buckets: Buckets, count: number): CompiledQuery<Row> {
    const compiled = buckets[bucketOf(count)]
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
    const table = this.#tables === undefined ? undefined : this.#keyTable?.encode(keys)
    const parameters = table === undefined ? padList(keys) : [table]
    const pick = (lists: Buckets, tables: Buckets | undefined) => this.#statement(table === undefined || tables === undefined ? lists : tables, keys.length)
    const { rows } = await db.executeQuery<Row>({ ...pick(this.#lists, this.#tables), parameters })
    const fallback = this.#fallback
    if (fallback === undefined || rows.length <= paddedLength(keys.length) * fallback.rowsPerKey) return rows
    return (await db.executeQuery<Row>({ ...pick(fallback.lists, fallback.tables), parameters })).rows
  }
}
