import { sql } from 'kysely'
import type { AliasedRawBuilder, CompiledQuery, KyselyPlugin, SelectQueryBuilder } from 'kysely'
import type { KeyTable, StatementBuilder, ViewsetDialect } from '../dialect/dialect.js'
import type { AnyDatabase, Row } from '../sql.js'
import { compileWith, paddedLength, padList, withParameters } from '../data/statement-cache.js'
import { currentCancellation, withCancellation } from '../execution/cancellation.js'
import { declareCost, learnedHeavy } from '../execution/cost-class.js'
import type { CostDeclaration } from '../execution/cost-class.js'

/** The most keys one statement carries; larger sets are split (every dialect allows far more parameters). */
export const maxBatch = 1024

/** Children per parent past which a relation without a limit is a heavy statement (execution/cost-class.ts). */
const manyRowsPerKey = 100

/** A relation's SELECT: tables known at run time, every name checked against the catalog at registration. */
export type Builder = SelectQueryBuilder<Record<string, Row>, string, Row>

/**
 * The rows of `table as alias` whose `column` is one of a batch's keys, to build a relation's statement on:
 * `where alias.column in (...)`, or a join from the dialect's key table.
 */
export type Keyed = (table: string, alias: string, column: string) => Builder

/** The alias of a batch's keys read as rows (one per distinct key, column `value`). */
export const keyRowsAlias = 'viewset_keys'

/** A batch's keys as rows, with column `value`; `cast`: the SQL type each key is read as (PostgreSQL needs one). */
export type KeyRows = (cast: string | undefined) => AliasedRawBuilder<Row, string>

/**
 * Builds a relation's statement for a batch of `count` keys (a power of two, see {@link maxBatch}) from {@link Keyed},
 * or from the keys as rows (`keys`, see relation-limit.ts).
 */
export type BatchBuilder = (keyed: Keyed, count: number, keys: KeyRows) => StatementBuilder

/** Bucket index of a key count: 1 → 0, 2 → 1, 3..4 → 2, 5..8 → 3, ... 513..1024 → 10. */
function bucketOf (count: number): number {
  return Math.log2(paddedLength(count))
}

/**
 * `build`'s statement for each power-of-two size up to {@link maxBatch}, its keys bound by `keyedFor(size)`, which
 * binds `parameters(size)` values: an `IN` list of `size` keys, or the key table's one parameter. Compiled with the
 * dialect's `statementPlugin`, each on first use: an `IN` list of 1,024 keys is a tree of 1,024 nodes and an SQL
 * text of as many pieces, and most sizes (on SQLite, the whole `IN` form) are never used. At most eleven per form.
 */
class Buckets {
  readonly #compiled: Array<CompiledQuery<Row> | undefined> = []
  readonly #compile: (size: number) => CompiledQuery<Row>

  constructor (
    build: BatchBuilder,
    keyedFor: (size: number) => { readonly keyed: Keyed; readonly rows: KeyRows },
    parameters: (size: number) => number,
    plugin: KyselyPlugin | undefined,
    extra: number,
    cost: CostDeclaration | undefined
  ) {
    this.#compile = (size) => {
      const { keyed, rows } = keyedFor(size)
      const query = compileWith(build(keyed, size, rows), plugin)
      if (cost !== undefined) declareCost(query, cost)
      if (query.parameters.length !== parameters(size) + extra) {
        throw new Error(
          `A batched relation query must have only its keys (then its ${extra} rule values) as parameters, ` +
            `got ${query.parameters.length} for ${size} keys`
        )
      }
      return query
    }
    // The smallest is compiled now: a statement that binds more than its keys fails at registration.
    this.#compiled.push(this.#compile(1))
  }

  /** The statement of a batch of `count` keys (1 to {@link maxBatch}). */
  for (count: number): CompiledQuery<Row> {
    if (count > maxBatch) throw new Error(`no batched statement for ${count} keys`)
    const bucket = bucketOf(count)
    return (this.#compiled[bucket] ??= this.#compile(2 ** bucket))
  }
}

/** Binds `size` keys as `where alias.column in (...)`. */
function listKeyed (db: AnyDatabase, size: number): Keyed {
  const keys = new Array<number>(size).fill(0)
  return (table, alias, column) => db.selectFrom(`${table} as ${alias}`).where(`${alias}.${column}`, 'in', keys)
}

/**
 * `size` keys as rows: `values (?), (?)` made distinct (an `IN` list's padding repeats its last key), each cast to
 * `cast` where given.
 */
function listRows (size: number): KeyRows {
  return (cast) => {
    const values = new Array<number>(size).fill(0).map((key) =>
      cast === undefined ? sql`(${key})` : sql`(cast(${key} as ${sql.raw(cast)}))`
    )
    return sql<Row>`(select distinct column1 as value from (values ${sql.join(values)}) as viewset_values)`
      .as(keyRowsAlias)
  }
}

/** Joins from the key table, whatever the batch's size. */
function tableKeyed (db: AnyDatabase, keyTable: KeyTable): Keyed {
  return (table, alias, column) =>
    db
      .selectFrom(keyTable.source(keyRowsAlias))
      .innerJoin(`${table} as ${alias}`, `${alias}.${column}`, `${keyRowsAlias}.value`)
}

/** A form's statements: the first try, and the exact one a batch that gets more than `rowsPerKey` rows per key from it
 * runs instead. */
interface Statements {
  readonly first: Buckets
  readonly exact: { readonly rowsPerKey: number; readonly buckets: Buckets } | undefined
}

/**
 * A relation's statement for a batch of keys, compiled once per power-of-two batch size (see {@link Buckets}),
 * so that each relation has a few SQL texts that prepared-statement caches keep warm. On a dialect with a key
 * table (SQLite's `json_each`), the keys are one parameter and the statement joins from them; elsewhere (and for
 * keys the key table cannot carry) they are an `IN` list padded to its size with its last key by `padList`
 * (`IN (1, 2, 3, 3)` means `IN (1, 2, 3)`).
 *
 * @example
 * ```ts
 * const authors = new BatchedQuery(db, dialect, (keyed) => keyed('authors', 't', 'id').select(['t.id', 't.name']))
 * const rows = await authors.run(db, [1, 2, 3])
 * ```
 */
export class BatchedQuery {
  readonly #list: Statements
  readonly #table: { readonly keyTable: KeyTable; readonly statements: Statements } | undefined

  /**
   * `build` must make a query whose only parameters are the keys `keyed` binds. `dialect`: its key table, if any,
   * and the plugin its statements compile with.
   * `extra`: how many values the statement binds after its keys (a row rule's), given to each {@link run}.
   * With `fallback`, `build`'s statement reads at most `rowsPerKey` rows per key of its bucket plus one: a batch that
   * gets more than that runs `fallback.build`'s statement instead (a cheap first try, an exact but slower second).
   * `cost`: the statements' class, when their shape does not tell it (execution/cost-class.ts).
   */
  constructor (
    db: AnyDatabase,
    { syntax: { keyTable, statementPlugin } }: Pick<ViewsetDialect, 'syntax'>,
    build: BatchBuilder,
    fallback?: { readonly rowsPerKey: number; readonly build: BatchBuilder },
    extra = 0,
    cost?: CostDeclaration
  ) {
    type KeyedFor = (size: number) => { readonly keyed: Keyed; readonly rows: KeyRows }
    const statements = (keyedFor: KeyedFor, parameters: (size: number) => number): Statements => ({
      first: new Buckets(build, keyedFor, parameters, statementPlugin, extra, cost),
      exact:
        fallback === undefined
          ? undefined
          : {
              rowsPerKey: fallback.rowsPerKey,
              buckets: new Buckets(fallback.build, keyedFor, parameters, statementPlugin, extra, cost),
            },
    })
    this.#list = statements(
      (size) => ({ keyed: listKeyed(db, size), rows: listRows(size) }),
      (size) => size
    )
    if (keyTable !== undefined) {
      const keyed = { keyed: tableKeyed(db, keyTable), rows: () => keyTable.source(keyRowsAlias) }
      this.#table = {
        keyTable,
        statements: statements(
          () => keyed,
          () => 1
        ),
      }
    }
  }

  /** The SQL text used for a batch of `count` keys of the `IN` list form (for tests and logs). */
  sqlFor (count: number): string {
    return this.#list.first.for(Math.min(count, maxBatch)).sql
  }

  /**
   * The rows matching any of the keys (distinct, non-null); one statement per {@link maxBatch} keys. `extra`: the
   * values bound after the keys (as many as the constructor's `extra`).
   */
  async run (db: AnyDatabase, keys: readonly unknown[], extra: readonly unknown[] = []): Promise<Row[]> {
    if (keys.length <= maxBatch) return await this.#runBatch(db, keys, extra)
    // Each batch starts in the request's cancellation context (execution/cancellation.ts).
    const context = currentCancellation()
    let rows: Row[] = []
    for (let start = 0; start < keys.length; start += maxBatch) {
      const batch = keys.slice(start, start + maxBatch)
      rows = rows.concat(await withCancellation(context, () => this.#runBatch(db, batch, extra)))
    }
    return rows
  }

  async #runBatch (db: AnyDatabase, keys: readonly unknown[], extra: readonly unknown[]): Promise<Row[]> {
    if (keys.length === 0) return []
    const table = this.#table
    const encoded = table?.keyTable.encode(keys)
    const statements = table === undefined || encoded === undefined ? this.#list : table.statements
    const keyed = encoded === undefined ? padList(keys) : [encoded]
    const parameters = extra.length === 0 ? keyed : [...keyed, ...extra]
    const context = currentCancellation()
    const first = statements.first.for(keys.length)
    const { rows } = await db.executeQuery<Row>(withParameters(first, parameters))
    const { exact } = statements
    // More children than the cap: their parents may have any number, so this statement is heavy from now on.
    if (rows.length > paddedLength(keys.length) * (exact?.rowsPerKey ?? manyRowsPerKey)) learnedHeavy(first.query)
    if (exact === undefined || rows.length <= paddedLength(keys.length) * exact.rowsPerKey) return rows
    const windowed = withParameters(exact.buckets.for(keys.length), parameters)
    return (await withCancellation(context, () => db.executeQuery<Row>(windowed))).rows
  }
}
