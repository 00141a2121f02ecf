import type { Static, TObject } from '@sinclair/typebox'
import type { Expression, Insertable, Kysely, SelectQueryBuilder, SqlBool, Transaction, Updateable } from 'kysely'
import type { Precondition } from './data/precondition.js'
import type { DatabaseFault } from './errors.js'
import type { AnyDatabase, Row } from './sql.js'
import { containsPattern } from './sql.js'
import { ViewsetErrors } from './errors.js'
import type { PreparedViewset } from './mount/mount-viewset.js'
import type { IdOf } from './requests.js'

// The helpers an override calls to read and write its table, each through the table gateway its viewset
// prepared at mounting. `Viewset` extends this class: they are its methods.

/** Rows read through the schema's columns, typed as the schema types them: the serializer writes them by it. */
export function asServed<T> (rows: Row | Row[]): T {
  return rows as T // selected by the schema's own columns; the driver's value types are coerced on the way out
}

/** The viewset reaches tables by names checked at mounting, so it queries through an untyped view of `db`. */
export function untyped<DB> (db: Kysely<DB>): AnyDatabase {
  return db as unknown as AnyDatabase // DB is a compile-time map of tables; the instance is the same
}

// What each viewset prepared when it was mounted; a viewset not mounted yet has none.
const prepared = new WeakMap<object, PreparedViewset>()

/** Records what mounting prepared for `viewset`: its helpers and handlers read it from then on. */
export function setPrepared (viewset: object, viewsetPrepared: PreparedViewset): void {
  prepared.set(viewset, viewsetPrepared)
}

/** What mounting prepared for `viewset`; a helper called before the viewset is registered throws. */
export function preparedOf (viewset: object): PreparedViewset {
  const found = prepared.get(viewset)
  if (found === undefined) {
    throw new Error('The viewset is not registered yet: register() it on a Fastify instance first')
  }
  return found
}

/** Where a viewset's table is: what its helpers read. */
export interface TableOptions<DB, TB extends keyof DB & string, S extends TObject> {
  readonly db: Kysely<DB>
  readonly readDb?: Kysely<DB> | undefined
  readonly table: TB
  readonly schema: S
}

/**
 * The table helpers of a viewset, for its overrides: a typed query of the schema's columns, transactions,
 * and reads and writes by key that answer rows as stored. See `Viewset`.
 *
 * @example
 * ```ts
 * const item = (await this.findById(request.params.id)) ?? this.notFound(request.params.id)
 * ```
 */
export class ViewsetTable<DB, TB extends keyof DB & string, S extends TObject> {
  /** The database written to. */
  readonly db: Kysely<DB>
  /** The database LIST and GET read from (`readDb`, else `db`). */
  readonly readDb: Kysely<DB>
  readonly table: TB
  readonly schema: S
  readonly primaryKey: string
  /** The schema fields that are columns (relation fields excluded): the only columns ever selected. */
  readonly columns: readonly string[]

  constructor (options: TableOptions<DB, TB, S>, primaryKey: string, columns: readonly string[]) {
    this.db = options.db
    this.readDb = options.readDb ?? options.db
    this.table = options.table
    this.schema = options.schema
    this.primaryKey = primaryKey
    this.columns = Object.freeze([...columns])
  }

  /** `SELECT <schema columns> FROM <table>`, typed, to refine and execute. */
  query (db: Kysely<DB> = this.readDb): SelectQueryBuilder<DB, TB, Static<S>> {
    const table: string = this.table
    const query = untyped(db).selectFrom(table).select(this.columns)
    return query as unknown as SelectQueryBuilder<DB, TB, Static<S>> // the schema's columns, checked at mounting
  }

  /** Runs `work` in a transaction; it commits when `work` resolves and rolls back when it throws. */
  async transaction<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return await this.db.transaction().execute(work)
  }

  /** The row with this primary key, or `undefined`. */
  async findById (id: IdOf<S>, db: Kysely<DB> = this.readDb): Promise<Static<S> | undefined> {
    const row = await preparedOf(this).resource.find(untyped(db), id)
    return row === undefined ? undefined : asServed(row)
  }

  /**
   * Inserts values and returns the row as stored (generated key and database defaults included).
   *
   * @example
   * ```ts
   * await this.insert({ ...this.writable(request.body), owner: token?.sub ?? null })
   * ```
   */
  async insert (values: Insertable<DB[TB]>, db: Kysely<DB> = this.db): Promise<Static<S>> {
    return asServed(await preparedOf(this).resource.insert(untyped(db), { ...values }))
  }

  /**
   * Updates one row and returns it as stored, or `undefined` when there is no such row. With a
   * `precondition` (`this.precondition(request)`: the request's If-Match), a stale tag throws the 412
   * and requireIfMatch's 428, checked with the write so that nothing changes.
   *
   * @example
   * ```ts
   * const updated = await this.update(request.params.id, values, this.db, this.precondition(request))
   * return updated ?? this.notFound(request.params.id)
   * ```
   */
  async update (
    id: IdOf<S>,
    values: Updateable<DB[TB]>,
    db: Kysely<DB> = this.db,
    precondition?: Precondition
  ): Promise<Static<S> | undefined> {
    const row = await preparedOf(this).resource.update(untyped(db), id, { ...values }, undefined, precondition)
    return row === undefined ? undefined : asServed(row)
  }

  /** Deletes one row; false when there was none. A `precondition` is checked as `update` checks it. */
  async deleteById (id: IdOf<S>, db: Kysely<DB> = this.db, precondition?: Precondition): Promise<boolean> {
    return await preparedOf(this).resource.delete(untyped(db), id, undefined, precondition)
  }

  /** A case-insensitive substring match that behaves the same on every dialect (`%` and `_` match themselves). */
  contains (column: Expression<unknown>, term: string): Expression<SqlBool> {
    return preparedOf(this).resource.dialect.syntax.ilike(column, containsPattern(term))
  }

  /**
   * What a database error means to a client (`unique`, `foreign-key`, `not-null`, `check`, `invalid-value`,
   * `unavailable`), or `undefined`: for answers more precise than the default ones.
   *
   * @example
   * ```ts
   * try { return await this.insert(values) } catch (error) {
   *   if (this.classify(error)?.kind === 'unique') {
   *     throw new ViewsetErrors.Conflict('an item with that name already exists')
   *   }
   *   throw error
   * }
   * ```
   */
  classify (error: unknown): DatabaseFault | undefined {
    return preparedOf(this).resource.dialect.classify(error)
  }

  /** Throws the 404 problem for this id. */
  notFound (id: unknown): never {
    throw new ViewsetErrors.NotFound(`No row with ${this.primaryKey} = ${String(id)}`)
  }
}
