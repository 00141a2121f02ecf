import type { Static, TObject } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Expression, Insertable, Kysely, SelectQueryBuilder, SqlBool, Transaction, Updateable } from 'kysely'
import type { Precondition } from './data/precondition.js'
import type { DatabaseFault } from './errors.js'
import type { Row } from './sql.js'
import { containsPattern } from './sql.js'
import { ViewsetErrors } from './errors.js'
import { isRecord } from './schema/object-schema.js'
import { servedRequest } from './execution/served-request.js'
import { customRouteSchema, representRow, representRows, requestPrecondition } from './http/custom-answers.js'
import type { CustomRouteSchemaOptions } from './http/custom-answers.js'
import {
  asServed, helperHistory, helperRuleOf, mountedOf, preparedOf, typedTransaction, untyped,
} from './mount/viewset-state.js'
import type { ScopedMethod } from './options.js'
import type { ScopeCondition } from './query/scope.js'
import type { KeyFields, KeyOf } from './requests.js'
import { RequestTransactionDatabase } from './execution/request-transaction.js'
import { writeTransactionOn } from './execution/write-transaction.js'
import { describeKey } from './row-key.js'
import { deleteRow } from './data/soft-delete.js'

// The helpers an override calls to read and write its table, each through the table gateway its viewset
// prepared at mounting. `Viewset` extends this class: they are its methods. On a viewset with a row rule they
// apply the rule of the request they serve (execution/served-request.ts); `unscoped` holds the same helpers
// without it, for trusted code.

/** A row given to an answer helper: the schema's fields, written by the serializer (relations are loaded into it). */
function asRow (row: unknown): Row { return isRecord(row) ? row : {} }

/** Where a viewset's table is: what its helpers read. */
export interface TableOptions<DB, TB extends keyof DB & string, S extends TObject> {
  readonly db: Kysely<DB>
  readonly readDb?: Kysely<DB> | undefined
  /** With it, every statement of a request runs in the request's transaction (http/row-level-security.ts). */
  readonly rowLevelSecurity?: object | undefined
  /** With it (not false), too: the answer of a request with `Idempotency-Key` is stored in its transaction. */
  readonly idempotency?: unknown
  readonly table: TB
  readonly schema: S
}

/**
 * The row helpers of a viewset: a typed query of the schema's columns, and reads and writes by key that answer
 * rows as stored. `this.query()` … apply the rule of the request they serve; `this.unscoped` has the same
 * helpers without it.
 */
export interface TableHelpers<
  DB, TB extends keyof DB & string, S extends TObject, K extends KeyFields<S> | undefined = undefined
> {
  /** `SELECT <schema columns> FROM <table>`, typed, to refine and execute. */
  query(db?: Kysely<DB>): SelectQueryBuilder<DB, TB, Static<S>>
  /** The row with this primary key, or `undefined`. */
  findById(id: KeyOf<S, K>, db?: Kysely<DB>): Promise<Static<S> | undefined>
  /** Inserts values and returns the row as stored (generated key and database defaults included). */
  insert(values: Insertable<DB[TB]>, db?: Kysely<DB>): Promise<Static<S>>
  /** Updates one row and returns it as stored, or `undefined` when there is no such row. */
  update(
    id: KeyOf<S, K>,
    values: Updateable<DB[TB]>,
    db?: Kysely<DB>,
    precondition?: Precondition
  ): Promise<Static<S> | undefined>
  /** Deletes one row as DELETE does (with `softDelete`, marks it deleted); false when there was none. */
  deleteById(id: KeyOf<S, K>, db?: Kysely<DB>, precondition?: Precondition): Promise<boolean>
  /** Removes one row from the table, deleted or not (PURGE); false when there was none. */
  purgeById(id: KeyOf<S, K>, db?: Kysely<DB>, precondition?: Precondition): Promise<boolean>
}

/** Which rule a helper applies, by method (`undefined`: none). */
type RuleOf = (method: ScopedMethod) => ScopeCondition | undefined

/**
 * The table helpers of a viewset, for its overrides: a typed query of the schema's columns, transactions,
 * and reads and writes by key that answer rows as stored. See `Viewset`.
 *
 * On a viewset with a `scope`, `query` and `findById` apply its `'LIST'` and `'GET'` rule for the request the
 * calling code serves (an overridden handler, `beforeWrite`, a custom route), `update` its `'PATCH'` rule (as
 * the target and as the row written must be in), `deleteById` its `'DELETE'` rule, and `insert` checks the row
 * stored against the `'GET'` rule (a 403, nothing written); called where no request is served (a startup
 * script, a job), they throw `FST_VIEWSET_OUTSIDE_REQUEST` rather than reach every row.
 *
 * @example
 * ```ts
 * const item = (await this.findById(request.params.id)) ?? this.notFound(request.params.id)
 * ```
 */
export class ViewsetTable<
  DB, TB extends keyof DB & string, S extends TObject, K extends KeyFields<S> | undefined = undefined
> implements TableHelpers<DB, TB, S, K> {
  /** The database written to. */
  readonly db: Kysely<DB>
  /** The database LIST and GET read from (`readDb`, else `db`). */
  readonly readDb: Kysely<DB>
  readonly table: TB
  readonly schema: S
  readonly #declaredKey: string // the option's (`id` by default) until mounting settles the key
  /** The key's first column: the whole key unless it is composite (see {@link keyColumns}). */
  get primaryKey (): string { return this.keyColumns[0] ?? this.#declaredKey }
  /** The key's columns in key order; a composite key's value (`params.id`, `findById(id)`) is its parts in order. */
  get keyColumns (): readonly string[] { return mountedOf(this)?.context.schemas.key.columns ?? [this.#declaredKey] }

  /** The schema fields that are columns (relation fields excluded): the only columns ever selected. */
  readonly columns: readonly string[]
  /**
   * The same helpers without the row rule: every row of the table, whatever the request. For trusted code
   * only (a script, a job, an admin route that checks its caller itself): a client's input must never choose
   * what it reaches.
   *
   * @example
   * ```ts
   * const all = await viewset.unscoped.query().execute() // in a startup script: every tenant's rows
   * ```
   */
  readonly unscoped: TableHelpers<DB, TB, S, K>

  constructor (options: TableOptions<DB, TB, S>, primaryKey: string, columns: readonly string[]) {
    // Wrapped whatever the options: a request transaction (rowLevelSecurity, a batch) reaches every statement.
    this.db = new RequestTransactionDatabase(options.db)
    const replica = options.rowLevelSecurity === undefined && options.readDb !== options.db ? options.readDb : undefined
    this.readDb = replica ?? this.db
    this.table = options.table
    this.schema = options.schema
    this.#declaredKey = primaryKey
    this.columns = Object.freeze([...columns])
    this.unscoped = Object.freeze(this.#helpers(() => undefined))
  }

  /** The helpers applying `ruleOf`, read when each is called. */
  #helpers (ruleOf: RuleOf): TableHelpers<DB, TB, S, K> {
    return {
      query: (db = this.#reads()) => this.#query(db, ruleOf('LIST')),
      findById: async (id, db = this.#reads()) => await this.#findById(id, db, ruleOf('GET')),
      insert: async (values, db = this.#writes()) => await this.#insert(values, db, ruleOf('GET')),
      update: async (id, values, db = this.#writes(), precondition = undefined) =>
        await this.#update(id, values, db, precondition, ruleOf('PATCH')),
      deleteById: async (id, db = this.#writes(), precondition = undefined) =>
        await this.#deleteById(id, db, precondition, ruleOf('DELETE')),
      purgeById: async (id, db = this.#writes(), precondition = undefined) =>
        await this.#purgeById(id, db, precondition, ruleOf('PURGE')),
    }
  }

  /** Where a helper reads by default: the write's transaction inside a `beforeWrite` (write-transaction.ts), else
   * `readDb`. */
  #reads (): Kysely<DB> {
    const open = writeTransactionOn(this.db)
    return open === undefined ? this.readDb : typedTransaction<DB>(open)
  }

  /** Where a helper writes by default: the write's transaction inside a `beforeWrite`, else `db`. */
  #writes (): Kysely<DB> {
    const open = writeTransactionOn(this.db)
    return open === undefined ? this.db : typedTransaction<DB>(open)
  }

  /**
   * The rule `helper` applies for `method`: the viewset's `scope` for the request being served; `undefined` without
   * a `scope`; thrown outside any request, where running open would reach every row.
   */
  #rule (method: ScopedMethod, helper: string): ScopeCondition | undefined {
    const rule = helperRuleOf(this)
    if (rule === undefined) return undefined
    const request = servedRequest()
    if (request === undefined) throw new ViewsetErrors.OutsideRequest(helper, this.table, helper)
    return rule(request, request.viewsetToken, method)
  }

  /**
   * `SELECT <schema columns> FROM <table>`, typed, to refine and execute; on a viewset with a `scope`, only the
   * rows its `'LIST'` rule admits for the request being served.
   */
  query (db: Kysely<DB> = this.#reads()): SelectQueryBuilder<DB, TB, Static<S>> {
    return this.#query(db, this.#rule('LIST', 'query'))
  }

  #query (db: Kysely<DB>, rule: ScopeCondition | undefined): SelectQueryBuilder<DB, TB, Static<S>> {
    const table: string = this.table
    const select = untyped(db).selectFrom(table).select(this.columns)
    const query = rule === undefined ? select : select.where(rule.where)
    return query as unknown as SelectQueryBuilder<DB, TB, Static<S>> // the schema's columns, checked at mounting
  }

  /** Runs `work` in a transaction; it commits when `work` resolves and rolls back when it throws. */
  async transaction<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    // Inside a beforeWrite, the write's own transaction: a second one would wait for its connection on SQLite.
    const open = writeTransactionOn(this.db)
    return open === undefined ? await this.db.transaction().execute(work) : await work(typedTransaction<DB>(open))
  }

  /** The row with this primary key, or `undefined` (also when the `'GET'` rule of the request leaves it out). */
  async findById (id: KeyOf<S, K>, db: Kysely<DB> = this.#reads()): Promise<Static<S> | undefined> {
    return await this.#findById(id, db, this.#rule('GET', 'findById'))
  }

  async #findById (id: KeyOf<S, K>, db: Kysely<DB>, rule: ScopeCondition | undefined): Promise<Static<S> | undefined> {
    const { resource } = preparedOf(this)
    const row = await resource.find(untyped(db), resource.target.key.given(id), { scope: rule })
    return row === undefined ? undefined : asServed(row)
  }

  /**
   * Inserts values and returns the row as stored (generated key and database defaults included); on a viewset
   * with a `scope`, the row stored must be in the request's `'GET'` rule, else a 403 and nothing is written.
   *
   * @example
   * ```ts
   * await this.insert({ ...this.writable(request.body), owner: token?.sub ?? null })
   * ```
   */
  async insert (values: Insertable<DB[TB]>, db: Kysely<DB> = this.#writes()): Promise<Static<S>> {
    return await this.#insert(values, db, this.#rule('GET', 'insert'))
  }

  async #insert (values: Insertable<DB[TB]>, db: Kysely<DB>, check: ScopeCondition | undefined): Promise<Static<S>> {
    const after = helperHistory(this, 'POST')
    return asServed(await preparedOf(this).resource.insert(untyped(db), { ...values }, check, after))
  }

  /**
   * Updates one row and returns it as stored, or `undefined` when there is no such row (or none in the request's
   * `'PATCH'` rule, on a viewset with a `scope`; the row as written must be in it too, else a 403). With a
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
    id: KeyOf<S, K>,
    values: Updateable<DB[TB]>,
    db: Kysely<DB> = this.#writes(),
    precondition?: Precondition
  ): Promise<Static<S> | undefined> {
    return await this.#update(id, values, db, precondition, this.#rule('PATCH', 'update'))
  }

  async #update (
    id: KeyOf<S, K>,
    values: Updateable<DB[TB]>,
    db: Kysely<DB>,
    precondition: Precondition | undefined,
    rule: ScopeCondition | undefined
  ): Promise<Static<S> | undefined> {
    const { resource } = preparedOf(this)
    const key = resource.target.key.given(id)
    const after = helperHistory(this, 'PATCH')
    const row = await resource.update(untyped(db), key, { ...values }, rule, precondition, rule, undefined, after)
    return row === undefined ? undefined : asServed(row)
  }

  /**
   * Deletes one row as DELETE does: on a viewset with `softDelete` it marks a live row deleted (the row stays; a hard
   * delete is {@link purgeById}), else removes it; false when there was none (or none in the request's `'DELETE'`
   * rule, on a viewset with a `scope`). A `precondition` is checked as `update` checks it. `id` is the key's value, a
   * composite key's parts in order, or an object of the key's columns (`{ book_id: 1, tag_id: 2 }`).
   *
   * @example
   * ```ts
   * if (!(await this.deleteById(request.params.id))) this.notFound(request.params.id)
   * ```
   */
  async deleteById (id: KeyOf<S, K>, db: Kysely<DB> = this.#writes(), precondition?: Precondition): Promise<boolean> {
    return await this.#deleteById(id, db, precondition, this.#rule('DELETE', 'deleteById'))
  }

  async #deleteById (
    id: KeyOf<S, K>,
    db: Kysely<DB>,
    precondition: Precondition | undefined,
    rule: ScopeCondition | undefined
  ): Promise<boolean> {
    const { resource, defaults } = preparedOf(this)
    const key = resource.target.key.given(id)
    const { softDelete } = defaults.context
    return await deleteRow(resource, untyped(db), key, softDelete, rule, precondition, helperHistory(this, 'DELETE'))
  }

  /**
   * Removes one row from the table for good, as PURGE does: on a viewset with `softDelete` a row marked deleted too
   * (`deleteById` marks rows deleted there); false when there was none (or none in the request's `'PURGE'` rule,
   * `scope.PURGE` AND `scope.DELETE`, on a viewset with a `scope`). A `precondition` is checked as `update` checks it.
   *
   * @example
   * ```ts
   * const removed = await this.purgeById(request.params.id, this.db, this.precondition(request))
   * ```
   */
  async purgeById (id: KeyOf<S, K>, db: Kysely<DB> = this.#writes(), precondition?: Precondition): Promise<boolean> {
    return await this.#purgeById(id, db, precondition, this.#rule('PURGE', 'purgeById'))
  }

  async #purgeById (
    id: KeyOf<S, K>,
    db: Kysely<DB>,
    precondition: Precondition | undefined,
    rule: ScopeCondition | undefined
  ): Promise<boolean> {
    const { resource } = preparedOf(this)
    const key = resource.target.key.given(id)
    return await resource.delete(untyped(db), key, rule, precondition, helperHistory(this, 'PURGE'))
  }

  /**
   * The If-Match condition of a request that writes the row its `:id` names (PUT, PATCH, DELETE, or a custom
   * action route such as `POST /:id/close`), to pass to `update` or `deleteById`: a stale tag is then the 412 and,
   * under `requireIfMatch`, a missing `If-Match` the 428, exactly as PATCH answers them (after the 404, nothing
   * changed). `undefined` without `If-Match` and `requireIfMatch`. Throws `FST_VIEWSET_PRECONDITION_NOT_APPLICABLE`
   * on a route without `:id` or a request that only reads, rather than ignore the header.
   *
   * @example
   * ```ts
   * fastify.post<{ Params: { id: number } }>('/:id/close', async (request, reply) => {
   *   const closed = await this.update(request.params.id, { status: 'closed' }, this.db, this.precondition(request))
   *   return await this.represent(reply, closed ?? this.notFound(request.params.id))
   * })
   * ```
   */
  precondition (request: FastifyRequest): Precondition | undefined {
    return requestPrecondition(preparedOf(this).context, request)
  }

  /**
   * Answers one row as GET and PATCH answer it: its default relations loaded under the request's rules (relation
   * rules included), its `ETag` header set, and the body written by the resource's serializer (only the schema's
   * fields). Return what it resolves to from the route's handler.
   *
   * @example
   * ```ts
   * fastify.get<{ Params: { id: number } }>('/:id/latest', async (request, reply) =>
   *   await this.represent(reply, (await this.findById(request.params.id)) ?? this.notFound(request.params.id)))
   * ```
   */
  async represent (reply: FastifyReply, row: Static<S>): Promise<string> {
    return await representRow(preparedOf(this).context, reply, asRow(row))
  }

  /**
   * Answers rows as LIST answers them (without its paging headers): their default relations loaded (one
   * statement per relation), each row written by the resource's serializer.
   *
   * @example
   * ```ts
   * fastify.get('/open', async (_request, reply) =>
   *   await this.representList(reply, await this.query().where('status', '=', 'open').limit(100).execute()))
   * ```
   */
  async representList (reply: FastifyReply, rows: ReadonlyArray<Static<S>>): Promise<string> {
    return await representRows(preparedOf(this).context, reply, rows.map(asRow))
  }

  /**
   * The schema of a custom route, documented as the generated routes are: the viewset's tags, the key as a path
   * parameter (`element`, the default; with a nested viewset's parent parameters), the row component as the answer
   * with its `ETag`, and the error answers it can give (404, 412 and 428 with `precondition: true`, …). Call it in
   * `customRoutes`, once the viewset is mounted.
   *
   * @example
   * ```ts
   * fastify.post('/:id/close', { schema: this.routeSchema('POST', { operationId: 'closeIssue', precondition: true }) },
   *   async (request, reply) => { … })
   * ```
   */
  routeSchema (method: string, options: CustomRouteSchemaOptions): Record<string, unknown> {
    return customRouteSchema(preparedOf(this).context, method, options)
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
    throw new ViewsetErrors.NotFound(`No row with ${describeKey(this.keyColumns, id)}`)
  }
}
