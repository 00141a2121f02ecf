import { sql } from 'kysely'
import type { RawBuilder, SelectQueryBuilder } from 'kysely'
import type { ViewsetDialect, WriteTarget } from '../dialect/dialect.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { RowKey } from '../row-key.js'
import { ViewsetErrors } from '../errors.js'
import { retryOnDeadlock } from './retry-on-deadlock.js'
import { checkRepeatedKeys, conflictingElement } from './bulk-conflicts.js'
import type { Eventually } from '../execution/eventually.js'
import type { Condition } from '../query/condition.js'
import { cursorAlias, keysetCondition, keysetPage, reversed } from '../query/cursor.js'
import type { ListQuery } from '../query/list-query.js'
import type { ScopeCondition } from '../query/scope.js'
import type { Precondition, Versioning } from './precondition.js'
import { applyOrdering } from '../query/ordering.js'
import { orderBinding } from '../query/ordering-rules.js'
import { StatementCache } from './statement-cache.js'
import { readBack } from './history-writer.js'
import { firstRead, writeAtOnce } from './write-at-once.js'
import type { FirstRead } from './write-at-once.js'
import { parametersOf, shapeOf } from './condition-shape.js'
import type { Statements } from './statements.js'
import type { RelationLoader } from '../relations/batched-loader.js'
import type { RuleRequest } from '../relations/relation-rule.js'
import { checkedWrite, checkWritten, inTransaction, untouched } from './write-check.js'
import type { WrittenRows } from './write-check.js'
import type { AfterRow, CursorPage, FindOptions } from './gateway-results.js'

/** What a resource is built from, once the catalog has been read at registration. */
export interface TableGatewayConfig {
  readonly dialect: ViewsetDialect
  /** The statements that never change shape, compiled once. */
  readonly statements: Statements
  /** The table, its key and the columns every row is read with. */
  readonly target: Omit<WriteTarget, 'statements'>
  /** The loaders of the relation fields, if the schema has relation fields. */
  readonly relations: RelationLoader | undefined
  /** How a row's version is told, for `If-Match`; with a version column, updates increment it. */
  readonly versioning?: Versioning | undefined
  /** The table's primary key and other unique keys: a bulk write checks its elements against them, and names the one
   * that conflicts. */
  readonly uniqueKeys?: ReadonlyArray<readonly string[]>
  /** The unique key upserts merge on (`conflictFields`), checked against the catalog. */
  readonly conflictFields?: readonly string[] | undefined
  /** The columns whose ordering no index gives (mount/index-report.ts): a page ordered by one sorts every row. */
  readonly unindexedOrder?: ReadonlySet<string> | undefined
  /** A write reads the row it changes with every column of the table, not the schema's only (history's `before`). */
  readonly wholeRows?: boolean
}

/** The `WHERE` terms of a query, the scope first when there is one. */
function scoped (conditions: readonly Condition[], scope: ScopeCondition | undefined): readonly Condition[] {
  return scope === undefined ? conditions : [scope, ...conditions]
}

/** `select` restricted to the rows every condition admits. */
function filtered<O> (
  select: SelectQueryBuilder<Record<string, Row>, string, O>, conditions: readonly Condition[]
): SelectQueryBuilder<Record<string, Row>, string, O> {
  return conditions.length === 0 ? select : select.where((eb) => eb.and(conditions.map((term) => term.expression(eb))))
}

/**
 * The data layer of one viewset: parsed, typed input in, rows out. It holds the compiled statements,
 * the dialect, the relation loaders and the LIST statement caches, and knows nothing of HTTP (no
 * request, no reply, no header). Built once at registration and frozen. Every method takes the
 * database to run on first (`db`, `readDb` or a transaction).
 *
 * @example
 * ```ts
 * const query = parseListQuery(request.query, plan.query)
 * const rows = await resource.list(db, query)
 * const total = await resource.count(db, query)   // after the page: one connection at a time
 * await resource.load(db, rows)
 * ```
 */
export class TableGateway {
  readonly dialect: ViewsetDialect
  readonly #statements: Statements
  readonly #target: WriteTarget
  readonly #relations: RelationLoader | undefined
  readonly #versioning: Versioning | undefined
  readonly #uniqueKeys: ReadonlyArray<readonly string[]>
  readonly #conflictFields: readonly string[] | undefined
  readonly #pages: StatementCache
  readonly #counts: StatementCache
  /** Whether a page's LIMIT is written into its SQL (DialectSyntax.literalLimit), decided once. */
  readonly #literalLimit: boolean
  readonly #unindexedOrder: ReadonlySet<string>
  /** See {@link TableGatewayConfig.wholeRows}. */
  readonly wholeRows: boolean
  readonly #firstRead: FirstRead

  constructor (config: TableGatewayConfig) {
    const { dialect, statements, target, relations, versioning, uniqueKeys = [], conflictFields } = config
    this.#versioning = versioning
    this.#uniqueKeys = uniqueKeys
    this.#conflictFields = conflictFields
    this.dialect = dialect
    this.#literalLimit = dialect.syntax.literalLimit
    this.#unindexedOrder = config.unindexedOrder ?? new Set()
    this.wholeRows = config.wholeRows === true
    this.#firstRead = { whole: this.wholeRows, lock: dialect.capabilities.rowLocks }
    this.#statements = statements
    this.#pages = new StatementCache(dialect.syntax.statementPlugin, statements.decode)
    this.#counts = new StatementCache(dialect.syntax.statementPlugin)
    // The writes' statements, compiled once per set of fields sent and scope (dialect/write-shapes.ts).
    this.#target = { ...target, statements: new StatementCache(dialect.syntax.statementPlugin, statements.decode) }
    this.#relations = relations
    Object.freeze(this)
  }

  /** The row with this key, or `undefined`; with a selection, only its columns are read. At once where the database
   * answered at once (eventually.ts); may throw. */
  find (db: AnyDatabase, id: unknown, options: FindOptions = {}): Eventually<Row | undefined> {
    return this.#statements.findById(db, id, options.selection, options.scope)
  }

  /** One page of rows matching the query (and the scope), in its order, as {@link find} answers. */
  list (db: AnyDatabase, query: ListQuery, scope?: ScopeCondition): Eventually<Row[]> {
    const { limit, offset, ordering, fields } = query
    // A scope is a WHERE term: the precompiled page statement has none, a scoped page is keyed by its shape.
    if (query.pageOnly) {
      return scope === undefined
        ? this.#statements.page(db, limit, offset)
        : this.#statements.scopedPage(db, limit, offset, scope)
    }
    const conditions = scoped(query.conditions, scope)
    const read = fields?.columns ?? this.#target.columns
    const order = orderBinding(ordering, this.dialect)
    const parameters = [...parametersOf(conditions), ...order.ordered]
    const limited = this.#limitShape(limit, parameters)
    parameters.push(offset)
    const shape = `${order.shape}|${fields?.shape ?? '*'}|${shapeOf(conditions)}${limited}`
    return this.#pages.rows(db, shape, parameters, () => {
      let select = db.selectFrom(this.#target.table).select(read)
      if (conditions.length > 0) {
        select = select.where((eb) => eb.and(conditions.map((condition) => condition.expression(eb))))
      }
      return applyOrdering(select, ordering.keys, this.dialect).limit(this.#limit(limit)).offset(offset)
    }, this.#sorts(ordering) ? 'unbounded' : undefined)
  }

  /**
   * Whether a page in this order sorts every row for want of an index: a heavy statement, on every dialect. A
   * relation path's value (a subquery per row) is an order no index gives, whatever the related table's indexes.
   */
  #sorts (ordering: ListQuery['ordering']): boolean {
    return ordering.keys.some((key) => key.related !== undefined || this.#unindexedOrder.has(key.field))
  }

  /**
   * One page by keyset (`pagination: 'cursor'`): the `limit` rows after (or before) the query's cursor, in
   * one statement that reads one row more, to know whether a next (or previous) page exists. A page before
   * the cursor is read in the reversed order and turned back.
   */
  async cursorPage (db: AnyDatabase, query: ListQuery, scope?: ScopeCondition): Promise<CursorPage> {
    const { limit, cursor, fields } = query
    const conditions = scoped(query.conditions, scope)
    const backwards = cursor?.direction === 'before'
    const ordering = backwards ? reversed(query.ordering) : query.ordering
    const keyset = cursor === undefined ? undefined : keysetCondition(ordering, cursor.values, this.dialect)
    const where = keyset === undefined ? conditions : [...conditions, keyset]
    // The ordering keys are read even when `?fields=` leaves them out: the links are made of them.
    const read = [
      ...new Set([
        ...(fields?.columns ?? this.#target.columns),
        ...ordering.keys.flatMap((key) => (key.expression === undefined ? [key.field] : [])),
      ]),
    ]
    // A relation path's value is selected under an alias, and dropped from the rows once the links are made.
    const related = ordering.keys.flatMap((key, index) =>
      key.expression === undefined ? [] : [{ alias: cursorAlias(index), expression: key.expression }]
    )
    const bound = orderBinding(ordering, this.dialect)
    const parameters = [...bound.selected, ...parametersOf(where), ...bound.ordered]
    const shape = `cursor|${bound.shape}|${fields?.shape ?? '*'}|${shapeOf(where)}` +
      this.#limitShape(limit + 1, parameters)
    const fetched = await this.#pages.rows(db, shape, parameters, () => {
      let select = db.selectFrom(this.#target.table).select(read)
      for (const { alias, expression } of related) select = select.select(sql`${expression}`.as(alias))
      if (where.length > 0) select = select.where((eb) => eb.and(where.map((condition) => condition.expression(eb))))
      return applyOrdering(select, ordering.keys, this.dialect).limit(this.#limit(limit + 1))
    }, this.#sorts(ordering) ? 'unbounded' : undefined)
    const page = keysetPage(fetched, limit, query.ordering, cursor)
    for (const row of page.rows) for (const { alias } of related) delete row[alias]
    return page
  }

  /**
   * A page's LIMIT in a LIST statement's shape and parameters: bound after the `parameters` so far, or, written
   * into the SQL (DialectSyntax.literalLimit), part of the shape instead. Answers the shape's suffix.
   */
  #limitShape (limit: number, parameters: unknown[]): string {
    if (this.#literalLimit) return `|${limit}`
    parameters.push(limit)
    return ''
  }

  /** A page's LIMIT as the statement's builder writes it, as {@link #limitShape} shaped it. */
  #limit (limit: number): number | RawBuilder<number> {
    return this.#literalLimit ? sql.lit(limit) : limit
  }

  /** The number of rows matching the query's conditions (its page and order aside). */
  async count (db: AnyDatabase, query: Pick<ListQuery, 'conditions'>, scope?: ScopeCondition): Promise<number> {
    const conditions = scoped(query.conditions, scope)
    const parameters = parametersOf(conditions)
    const [row] = await this.#counts.rows(db, shapeOf(conditions), parameters, () =>
      filtered(db.selectFrom(this.#target.table).select((eb) => eb.fn.countAll().as('count')), conditions)
    )
    // pg answers count(*) as a string (a bigint), mysql2 as a number or a string: the dialect converts it.
    return this.dialect.values.count(row?.count ?? 0)
  }

  /** The planner's estimate of {@link count}, without counting; `undefined` where the dialect has no statistics. */
  async estimate (db: AnyDatabase, query: Pick<ListQuery, 'conditions'>, scope?: ScopeCondition) {
    const { statistics } = this.dialect
    const select = db.selectFrom(this.#target.table).select(sql.lit(1).as('one'))
    return await statistics?.estimateRows(db, filtered(select, scoped(query.conditions, scope)).compile())
  }

  /** Inserts the values and returns the row as stored (generated key and defaults included), as {@link find} answers;
   * with a `check`, the stored row must be in it, else a 403 and nothing is written (write-check.ts); `after` runs
   * with the row stored, in the same transaction. */
  insert (db: AnyDatabase, values: Row, check?: ScopeCondition, after?: AfterRow): Eventually<Row> {
    const insert = (on: AnyDatabase) => this.dialect.writes.insert(on, this.#target, values)
    const write = (on: AnyDatabase) =>
      check === undefined ? insert(on) : checkedWrite(on, this.#target, this.dialect.values.keyOf, check, insert)
    if (after === undefined) return write(db)
    return inTransaction(db, async (trx) => {
      const row = await write(trx)
      await after(trx, null, row)
      return row
    })
  }

  /**
   * Inserts rows all or none (in a transaction, or the caller's), one multi-row INSERT per set of fields
   * sent, and returns them as stored, in the order given; with a `check`, as {@link insert} (one statement).
   */
  async insertMany (db: AnyDatabase, rows: readonly Row[], check?: ScopeCondition): Promise<Row[]> {
    if (rows.length === 0) return []
    return await this.#bulk(db, rows, async (trx) => {
      const stored = await this.dialect.writes.insertMany(trx, this.#target, rows)
      if (check !== undefined) await this.#check(trx, stored, () => check, true)
      return stored
    })
  }

  /** The write check of rows just written (write-check.ts). */
  async #check (trx: AnyDatabase, rows: readonly Row[], ruleOf: WrittenRows['ruleOf'], bulk: boolean): Promise<void> {
    await checkWritten(trx, this.#target, this.dialect.values.keyOf, { rows, ruleOf, bulk })
  }

  /**
   * Runs a bulk write all or none (in a transaction, or the caller's), after checking that no two elements
   * repeat a unique key. A unique or foreign-key fault names its element by JSON pointer when the database
   * says which (see bulk-conflicts.ts); else it is answered like every other fault.
   */
  async #bulk<T>(db: AnyDatabase, rows: readonly Row[], write: (trx: AnyDatabase) => Promise<T>): Promise<T> {
    checkRepeatedKeys(rows, this.#uniqueKeys, this.dialect.values.keyOf)
    try {
      if (db.isTransaction) return await write(db)
      return await retryOnDeadlock(this.dialect, async () => await db.transaction().execute(write))
    } catch (error) {
      // After the rollback, or in the caller's transaction (a beforeWrite's, an afterWrite's), which SQLite and MySQL
      // keep usable after a failed statement (PostgreSQL's is aborted, but its fault names the value).
      throw (await conflictingElement(this.dialect, this.#target, this.#uniqueKeys, db, error, rows)) ?? error
    }
  }

  /**
   * Updates one row and returns it as stored, or `undefined` when there is no such row, or none in the scope:
   * then nothing changes (the dialect checks the scope in the write itself, or in its transaction). With a
   * precondition (If-Match), a version column to increment or a `before` (the foreign-key check), the row is read
   * and locked first, in the scope, in the write's transaction: a 428 or 412 (thrown) changes nothing, and two
   * writers with the same tag get one write. With `check`, the row as written must be in it, else a 403 (not read
   * again when `check` is the scope and the write sets no column it reads: write-check.ts `untouched`). With
   * `after` (afterWrite), the row is read first too, and `after` runs with it and the row written, in the transaction.
   */
  update (
    db: AnyDatabase,
    id: unknown,
    values: Row,
    scope?: ScopeCondition,
    precondition?: Precondition,
    check?: ScopeCondition,
    before?: (trx: AnyDatabase) => Promise<void>,
    after?: AfterRow
  ): Eventually<Row | undefined> {
    const versionField = this.#versioning?.versionField
    const inStatement = (written: Row): boolean => // the check needs no statement of its own
      check === undefined || (check === scope && untouched(check, written, this.#target.catalog))
    const write = (on: AnyDatabase, written: Row): Eventually<Row | undefined> =>
      check === undefined || inStatement(written)
        ? this.dialect.writes.update(on, this.#target, id, written, scope)
        : checkedWrite(on, this.#target, this.dialect.values.keyOf, check, (trx) =>
          this.dialect.writes.update(trx, this.#target, id, written, scope))
    const plain = precondition === undefined && before === undefined && after === undefined
    if (plain && versionField === undefined) return write(db, values)
    const next = (row: Row): Row => // the increment is computed from the locked row, so it is part of this one UPDATE
      versionField === undefined ? values : { ...values, [versionField]: Number(row[versionField] ?? 0) + 1 }
    // With nothing asynchronous to run (the history alone, a write checked in its statement), at once on SQLite.
    const now = precondition === undefined && before === undefined && inStatement(next(values)) ? after?.now : undefined
    const read = (trx: AnyDatabase) => firstRead(trx, this.#target, this.#firstRead, id, scope)
    const done = now && writeAtOnce(db, read, (trx, row) => write(trx, next(row)), now)
    if (done !== undefined) return done.value
    return this.#guarded(db, id, scope, precondition, async (trx, row) => {
      await before?.(trx)
      const written = await write(trx, next(row))
      if (written !== undefined) await after?.(trx, row, readBack(written))
      return written
    })
  }

  /** Deletes one row; false when there was none (in the scope, when one is given). A precondition is checked as
   * `update` checks it, and `after` runs as `update` runs it. Answered as {@link find} answers. */
  delete (
    db: AnyDatabase,
    id: unknown,
    scope?: ScopeCondition,
    precondition?: Precondition,
    after?: AfterRow
  ): Eventually<boolean> {
    const remove = (on: AnyDatabase) => this.dialect.writes.delete(on, this.#target, id, scope)
    if (precondition === undefined && after === undefined) return remove(db)
    return this.#guarded(db, id, scope, precondition, async (trx, row) => {
      const deleted = await remove(trx)
      if (deleted) await after?.(trx, row, null)
      return deleted
    }).then((deleted) => deleted ?? false)
  }

  /**
   * Runs `write` in a transaction once the row is read (key and scope) and locked (`SELECT … FOR UPDATE`
   * where the database has row locks; SQLite has one writer, so its transaction is enough) and the
   * precondition holds: `undefined` without writing when there is no such row (404), else
   * PreconditionRequired (428) or PreconditionFailed (412) thrown.
   */
  async #guarded<T>(
    db: AnyDatabase,
    id: unknown,
    scope: ScopeCondition | undefined,
    precondition: Precondition | undefined,
    write: (trx: AnyDatabase, row: Row) => Eventually<T>
  ): Promise<T | undefined> {
    const run = async (trx: AnyDatabase): Promise<T | undefined> => {
      const row = await firstRead(trx, this.#target, this.#firstRead, id, scope)
      if (row === undefined) return undefined
      if (precondition?.kind === 'required') throw new ViewsetErrors.PreconditionRequired()
      if (precondition?.kind === 'match' && !(await this.#matches(trx, row, precondition))) {
        throw new ViewsetErrors.PreconditionFailed()
      }
      return await write(trx, row)
    }
    return db.isTransaction ? await run(db) : await db.transaction().execute(run)
  }

  /** The table, its key and the `conflictFields` upserts merge on (data/upsert-branches.ts). */
  get upsertKey (): { table: string; key: RowKey; conflictFields: readonly string[] } {
    const conflictFields = this.#conflictFields
    if (conflictFields === undefined) throw new Error('upsert needs conflictFields')
    return { table: this.#target.table, key: this.#target.key, conflictFields }
  }

  /** Whether the row's tag is one of `tags` (strong comparison: a weak `W/` tag never matches). */
  async #matches (db: AnyDatabase, row: Row, { tags, reader }: Precondition & { kind: 'match' }): Promise<boolean> {
    if (tags === '*') return true
    const versioning = this.#versioning
    if (versioning === undefined) return false
    // The representation includes the relations: load them as GET would, in this transaction.
    if (versioning.versionField === undefined) await this.load(db, [row], versioning.relations, reader)
    // Under a field rule, the tag of the row as GET served it to this caller: without the fields it hides.
    const hidden = reader?.hidden
    const served = hidden === undefined
      ? row
      : Object.fromEntries(Object.entries(row).filter(([name]) => !hidden.has(name)))
    return tags.includes(versioning.tagOf(served))
  }

  /** The table, its key and the columns rows are read with: what writes by key list take (data/bulk-update.ts). */
  get target (): WriteTarget { return this.#target }

  /** Whether the rows have relation fields to load. */
  get hasRelations (): boolean {
    return this.#relations !== undefined
  }

  /**
   * Loads the relation fields of these rows in place (`only`: just these relations), batched per relation; with
   * `request`, only the related rows the rules of their tables admit for it.
   */
  async load (db: AnyDatabase, rows: Row[], only?: ReadonlySet<string>, request?: RuleRequest): Promise<void> {
    if (this.#relations !== undefined && rows.length > 0) await this.#relations.load(db, rows, only, request)
  }
}
