import { sql } from 'kysely'
import type { CompiledQuery } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { RowKey } from '../row-key.js'
import { firstRow, resultRows } from '../sql.js'
import { markOneRow } from '../execution/one-row.js'
import { runCompiled } from '../execution/prepared-kysely.js'
import { andThen } from '../execution/eventually.js'
import type { Eventually } from '../execution/eventually.js'
import type { ScopeCondition } from '../query/scope.js'
import { StatementCache, withParameters } from './statement-cache.js'
import type { RowDecoder } from './json-text.js'

/**
 * The SQL that never changes shape, compiled once at registration and executed with new parameters.
 * Compiling on every request costs more than the query itself on short SQLite reads. On databases from
 * createDatabase, `executeQuery` also skips preparing it again (see dialect/sqlite-statements.ts and
 * dialect/postgres-statements.ts).
 */
export class Statements {
  readonly #byId: CompiledQuery<Row>
  /** The page statement, or with `literalLimit` the page statement of each page size. */
  readonly #page: CompiledQuery<Row> | StatementCache
  /** `findById` with a `?fields=` selection or a scope: one statement per field set and scope. */
  readonly #byIdSelecting: StatementCache
  /** The page statement of each scope shape (and with `literalLimit`, page size). */
  readonly #scopedPage: StatementCache
  readonly #literalLimit: boolean
  readonly #table: string
  readonly #key: RowKey
  readonly #columns: readonly string[]
  /** What parses the JSON text of the rows read (data/json-text.ts), for every statement of the table. */
  readonly decode: RowDecoder | undefined

  /** The dialect's `syntax.literalLimit`: the page's LIMIT is written into its SQL; `syntax.statementPlugin`: what the
   * statements compile with. */
  constructor (
    db: AnyDatabase,
    table: string,
    key: RowKey,
    columns: readonly string[],
    { syntax: { literalLimit, statementPlugin } }: Pick<ViewsetDialect, 'syntax'>,
    decode?: RowDecoder
  ) {
    this.decode = decode
    this.#table = table
    this.#key = key
    this.#columns = columns
    // The placeholder values only fix each parameter's position; every call passes its own.
    const placeholder = key.composite ? key.columns.map(() => 0) : 0
    this.#byId = markOneRow(db.selectFrom(table).select(columns).where(key.match(placeholder)).compile())
    this.#byIdSelecting = new StatementCache(statementPlugin, decode)
    this.#scopedPage = new StatementCache(statementPlugin, decode)
    this.#literalLimit = literalLimit
    this.#page = literalLimit
      ? new StatementCache(statementPlugin, decode)
      : db.selectFrom(table).select(columns).orderBy(key.ordered()).limit(1).offset(0).compile()
  }

  /**
   * The row with this key (and in `scope`, when given), or `undefined`; with `selection`, only its columns are
   * read. At once where the database answered at once (eventually.ts). May throw.
   */
  findById (
    db: AnyDatabase,
    id: unknown,
    selection?: { readonly shape: string; readonly columns: readonly string[] },
    scope?: ScopeCondition
  ): Eventually<Row | undefined> {
    if (scope !== undefined) {
      // One statement per field set and scope shape, like a LIST; the key is bound first, then the scope's values.
      const columns = selection?.columns ?? this.#columns
      return andThen(
        this.#byIdSelecting.execute(
          db,
          // The scope's shape alone when every column is read: a key already hashed, not a new string per request.
          selection === undefined ? scope.shape : `${selection.shape}|${scope.shape}`,
          withKeyFirst(this.#key.parts(id), scope.parameters),
          () => db.selectFrom(this.#table).select(columns).where(this.#key.match(id)).where(scope.where),
          true
        ),
        firstRow
      )
    }
    if (selection !== undefined) {
      return andThen(
        this.#byIdSelecting.execute(
          db,
          selection.shape,
          this.#key.parts(id),
          () => db.selectFrom(this.#table).select(selection.columns).where(this.#key.match(id)),
          true
        ),
        firstRow
      )
    }
    const found = runCompiled(db, withParameters(this.#byId, this.#key.parts(id)))
    return andThen(this.decode === undefined ? found : andThen(found, this.decode), firstRow)
  }

  /** One page of rows in primary-key order, as {@link findById} answers. */
  page (db: AnyDatabase, limit: number, offset: number): Eventually<Row[]> {
    const page = this.#page
    if (page instanceof StatementCache) {
      return page.rows(db, String(limit), [offset], () =>
        db.selectFrom(this.#table).select(this.#columns).orderBy(this.#key.ordered()).limit(sql.lit(limit))
          .offset(offset)
      )
    }
    const read = runCompiled(db, withParameters(page, [limit, offset]))
    return andThen(this.decode === undefined ? read : andThen(read, this.decode), resultRows)
  }

  /**
   * {@link page} of the rows `scope` admits: a LIST with no filter, order or field selection, keyed by the scope's
   * shape alone (a key already hashed), as a scoped {@link findById} is, rather than by a shape string per request.
   */
  scopedPage (db: AnyDatabase, limit: number, offset: number, scope: ScopeCondition): Eventually<Row[]> {
    const literal = this.#literalLimit
    const parameters: unknown[] = []
    for (const value of scope.parameters) parameters.push(value)
    if (!literal) parameters.push(limit)
    parameters.push(offset)
    return this.#scopedPage.rows(db, literal ? `${scope.shape}|${limit}` : scope.shape, parameters, () =>
      db.selectFrom(this.#table).select(this.#columns).where(scope.where).orderBy(this.#key.ordered())
        .limit(literal ? sql.lit(limit) : limit).offset(offset)
    )
  }
}

/** The key's parts, then a scope's values: the parameters of a scoped statement by key. */
function withKeyFirst (parts: readonly unknown[], values: readonly unknown[]): unknown[] {
  const parameters: unknown[] = parts.slice()
  for (const value of values) parameters.push(value)
  return parameters
}
