import type {
  AliasedRawBuilder, Compilable, CompiledQuery, Expression, KyselyPlugin, QueryResult, RawBuilder, SqlBool,
} from 'kysely'
import type { DatabaseFault } from '../errors.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { RowKey } from '../row-key.js'
import type { CatalogColumn, CatalogReader } from './shared/catalog.js'
import type { DialectFullText } from './shared/full-text-index.js'
import type { Eventually } from '../execution/eventually.js'
import type { CostDeclaration } from '../execution/cost-class.js'

/** What the viewset reads of a catalog column: its name, its type's base name (`integer`, `int4`, `varchar`) and
 * nullability. */
export type ColumnInfo = Pick<CatalogColumn, 'name' | 'type' | 'nullable'>

/** A statement as the data layer builds it: one of Kysely's query builders, which compile with a plugin added. */
export interface StatementBuilder extends Compilable<Row> {
  withPlugin(plugin: KyselyPlugin): Compilable<Row>
}

/**
 * Statements compiled once per shape and run with each call's values (query/statement-cache.ts): `build()`
 * is compiled the first time (with the dialect's {@link ViewsetDialect.statementPlugin}), and kept when it
 * binds exactly `parameters`, in order. `oneRow`: a SELECT that answers at most one row (by primary key, see
 * one-row.ts).
 */
export interface CompiledStatements {
  /** Kysely's whole result, at once where the database answered at once (eventually.ts): await it. May throw. */
  execute(
    db: AnyDatabase,
    shape: string,
    parameters: readonly unknown[],
    build: () => StatementBuilder,
    oneRow?: boolean,
    /** The shape's class where its tree does not tell it (execution/cost-class.ts). */
    cost?: CostDeclaration,
  ): Eventually<QueryResult<Row>>
  /** The rows, answered as {@link execute} answers. */
  rows(db: AnyDatabase, shape: string, parameters: readonly unknown[], build: () => StatementBuilder): Eventually<Row[]>
}

/** The statements that differ between databases, and the arguments they share. */
export interface WriteTarget {
  table: string
  /** The row key: one column or several (row-key.ts). */
  key: RowKey
  /** Columns read back: the schema's columns, never `*`. */
  columns: readonly string[]
  /** The table's columns by name, from the catalog, for dialects that convert values by column type. */
  catalog?: ReadonlyMap<string, ColumnInfo>
  /** The columns whose schema field is a `date-time`, for dialects that store them in one form (SQLite). */
  dateTimes?: ReadonlySet<string>
  /** Whether deleting one row may reach other tables' rows (TableCatalog's `deleteCascades`); unknown counts as may. */
  deleteCascades?: boolean | undefined
  /** The write statements of this table, compiled once per set of fields sent and scope (see write-shapes.ts). */
  statements: CompiledStatements
}

/**
 * A viewset's row rule as a write adds it: the expression (already qualified with the table), the SQL it
 * compiles to without its values (`shape`), and those values in order (query/scope.ts).
 */
export interface WriteScope {
  readonly where: Expression<SqlBool>
  readonly shape: string
  readonly parameters: readonly unknown[]
}

/**
 * A table of a batch's keys, bound as one parameter, that a relation's statement joins from (column `value`)
 * instead of testing an `IN` list.
 */
export interface KeyTable {
  /** The table, aliased, with a placeholder for its one parameter. */
  source(alias: string): AliasedRawBuilder<Row, string>
  /** The keys as that parameter, or `undefined` when one of them cannot be carried (the batch then binds an `IN` list).
   * */
  encode(keys: readonly unknown[]): unknown
}

/** What a stored version's columns are read back with: each catalog column's name, types, and whether it holds JSON. */
export type StoredColumn = Pick<CatalogColumn, 'name' | 'type' | 'declared' | 'json'>

/**
 * Rows as the history stored them (`documents`: a JSON array of objects, each a row's columns by name) as a derived
 * table aliased as the table itself, with every column of `columns` plus {@link storedVersionColumn}: a row rule or a
 * filter written for the table reads it as it reads the table (dialect/<db>/<db>-stored-rows.ts).
 */
export type StoredRows = (table: string, columns: readonly StoredColumn[], documents: string) =>
AliasedRawBuilder<Row, string>

/** The column of {@link DialectSyntax.storedRows} that holds each version's 1-based index in the array given. */
export const storedVersionColumn = '__viewset_version'

/** The write statements that differ between databases (RETURNING, or a read-back where there is none). */
export interface DialectWrites {
  /**
   * Inserts a row and returns it as stored, defaults and generated key included: at once where the database answered
   * at once (see execution/eventually.ts). May throw.
   */
  insert(db: AnyDatabase, target: WriteTarget, values: Row): Eventually<Row>
  /**
   * Inserts rows, all or nothing when `db` is a transaction: one multi-row INSERT per set of fields sent,
   * cut to {@link DialectCapabilities.maxParameters}. Returns the rows as stored, in the order given.
   */
  insertMany(db: AnyDatabase, target: WriteTarget, rows: readonly Row[]): Promise<Row[]>
  /**
   * Updates one row and returns it as stored, or `undefined` when there is none. With a `scope` (a
   * viewset's row rule, already qualified with the table), a row outside it is none, and nothing changes:
   * the check is part of the write, or of its transaction, so it cannot race.
   */
  update(
    db: AnyDatabase,
    target: WriteTarget,
    id: unknown,
    values: Row,
    scope?: WriteScope,
  ): Eventually<Row | undefined>
  /** Deletes the row with this key (if it is in `scope`, checked as `update` checks it); false when there was none.
   * Both answered as `insert` answers. */
  delete(db: AnyDatabase, target: WriteTarget, id: unknown, scope?: WriteScope): Eventually<boolean>
  /** The values of a write as the driver binds them (date-times, booleans, JSON text), for writes by key list
   * (data/bulk-update.ts); absent where they bind as they are. */
  bindable?(target: WriteTarget, values: Row): Row
}

/** How values cross the driver, both ways: what it binds, and how what it answers compares. */
export interface DialectValues {
  /**
   * A JavaScript value as the driver can bind it (better-sqlite3 takes no booleans): applied to every value a
   * LIST filter compares with, and by the dialect itself to the values it writes. Patterns (strings) bind everywhere.
   */
  parameter(value: unknown): unknown
  /** `count(*)` as the driver answers it (a number, or a bigint's digits), as a number. */
  count(cell: unknown): number
  /**
   * A key value as a Map key, so that the two ends of a relation meet whatever types the driver answers them
   * in: values the database compares equal give the same key (see `mapKey` in sql.ts).
   */
  keyOf(value: unknown): unknown
  /** A key's values as the database prints them in a constraint error (the `value` of a `DatabaseFault`). */
  keyText(values: readonly unknown[]): string
}

/** SQL the data layer writes differently on each database; an optional member is one a database does without. */
export interface DialectSyntax {
  /** Case-insensitive `LIKE` of an already escaped pattern (escape character `!`). */
  ilike(column: Expression<unknown>, pattern: string): Expression<SqlBool>
  /** A value as text: an aggregate of a DECIMAL or BIGINT read back with its exact digits (AGGREGATE's sums). */
  asText(value: Expression<unknown>): RawBuilder<unknown>
  /**
   * The value an ordering filter (`__gt`, `__lte`, …) compares an integer column with, where the driver binds a
   * parameter as the column's own type: PostgreSQL would refuse a bound past an int4 column's range, which the
   * document allows (an ordering bound need not be storable). Absent: the value is bound as it is.
   */
  integerBound?(value: unknown): Expression<unknown>
  /**
   * The scalar at `keys` inside the JSON column `column`, as SQL compares and sorts it (query/json-paths.ts): text for
   * a string, a number for a number, the driver's boolean (or 0/1) for a boolean; NULL when the key is missing, holds
   * JSON null, or the column is NULL. `keys` are identifiers checked at startup: they are written into the SQL.
   */
  jsonScalar(column: string, keys: readonly string[], type: 'string' | 'number' | 'integer' | 'boolean'):
  Expression<unknown>
  /** Where the keys of a relation's batch come from, when not from an `IN` list (see relations/batched-query.ts). */
  readonly keyTable?: KeyTable
  /**
   * Stored versions of rows as the table's rows (the HISTORY route's rule on a deleted row, `changed_since`'s
   * deletions, the change feed's matches): data/history-rule.ts, data/changes-page.ts, data/version-match.ts.
   */
  readonly storedRows: StoredRows
  /**
   * A LIST page's LIMIT is written into its SQL rather than bound: SQLite plans an index-ordered LIMIT with the
   * bound value, so it would prepare such a statement again on every step (see
   * benchmarks/analysis.md#literal-limit). Each page size is then a statement of its own, under the statement
   * caches' bounds.
   */
  readonly literalLimit: boolean
  /**
   * A plugin every statement of the data layer is compiled with (never the user's own queries). SQLite's
   * spells each compared value `+?`, so that STAT4 does not prepare the statement again on each run
   * (sqlite-stable-plans.ts).
   */
  readonly statementPlugin?: KyselyPlugin
}

/** What the planner knows of a statement's rows before running it: PostgreSQL's and MySQL's `EXPLAIN`. */
export interface DialectStatistics {
  /**
   * The planner's estimate of how many rows `query` (a SELECT) answers, without running it; `undefined` when the
   * plan gives none. It reads the table's statistics, so it is as fresh as the last ANALYZE.
   */
  estimateRows(db: AnyDatabase, query: CompiledQuery<Row>): Promise<number | undefined>
}

/** How far a read replica is behind its primary: PostgreSQL's and MySQL's replication status. */
export interface DialectReplication {
  /**
   * Milliseconds the replica is behind `primary`: 0 when it has replayed all the primary wrote (or is no replica),
   * `Infinity` when it cannot say (replication stopped). Rejects when the replica cannot be reached.
   */
  lag(primary: AnyDatabase, replica: AnyDatabase): Promise<number>
}

/** What the database does, or lacks, that changes what the data layer asks of it. */
export interface DialectCapabilities {
  /** `SELECT … FOR UPDATE` locks the row until the transaction ends (SQLite has none: one writer at a time). */
  readonly rowLocks: boolean
  /** The most values one statement may bind (SQLite 32,766; PostgreSQL and MySQL 65,535). */
  readonly maxParameters: number
  /**
   * `ON DUPLICATE KEY UPDATE` fires on any unique key (MySQL, MariaDB), not on `conflictFields` alone:
   * then `conflictFields` must be the table's only unique key besides an AUTO_INCREMENT key.
   */
  readonly upsertOnAnyKey: boolean
  /**
   * Whether NULL sorts as larger than every value by default (last ascending, first descending), the rule
   * every dialect follows here: true on PostgreSQL; SQLite and MySQL sort NULL first, so ordering adds a key.
   */
  readonly nullsSortLargest: boolean
  /**
   * How a to-many relation with a `limit` reads at most `limit` children of each parent: a `LATERAL` join
   * (PostgreSQL), or a correlated `IN` subquery with `LIMIT`, run once per key (SQLite). Absent (MariaDB has neither):
   * the children of a batch are read and numbered by a window function (relations/relation-queries.ts).
   */
  readonly limitPerParent?: 'lateral' | 'correlated-in'
  /**
   * An UPDATE's WHERE may count rows of its own table in a subquery, and the driver answers the rows it matched
   * (PostgreSQL, SQLite): a write by filter bounded by `max-affected` is then one statement (data/bulk-update.ts
   * `updateBounded`). MariaDB's affected rows are the rows changed, unless the client asked otherwise.
   */
  readonly boundedUpdate: boolean
}

/**
 * The seam between the viewset and a database. Everything that differs between SQLite, PostgreSQL and MySQL
 * lives behind it, one file per dialect, grouped by what it does: read the catalog, write rows, carry values,
 * spell SQL, state capabilities, and recognise errors. A feature a database lacks is an optional member or a
 * capability flag, never a test of `name`.
 *
 * @example
 * ```ts
 * const dialect = await dialectOf(db)
 * const row = await dialect.writes.insert(db, target, values)
 * if (dialect.capabilities.rowLocks) query = query.forUpdate()
 * ```
 */
export interface ViewsetDialect {
  readonly name: 'sqlite' | 'postgres' | 'mysql'
  /** Keys, unique indexes, foreign keys, defaults and the list of relations: what startup checks and `generate` read.
   * */
  readonly catalog: CatalogReader
  readonly writes: DialectWrites
  readonly values: DialectValues
  readonly syntax: DialectSyntax
  readonly capabilities: DialectCapabilities
  /** Row estimates for `Prefer: count=estimated`; SQLite has none, and counts. */
  readonly statistics?: DialectStatistics
  /** The lag of a `readDb` replica; SQLite has no replicas (a `readDb` is only checked to answer). */
  readonly replication?: DialectReplication
  /** Row-level security enforced by the database (`rowLevelSecurity`); PostgreSQL only. */
  readonly rowSecurity?: RowSecurity
  /** `?q=` served by the database's own full-text index (`fullText`). */
  readonly fullText?: DialectFullText
  /** Recognises the driver errors a client can act on. */
  classify(error: unknown): DatabaseFault | undefined
}

/**
 * How a database enforces its own row-level security policies for a request: the settings each request's
 * transaction starts with, and the startup check that the roles and the table make the policies bind.
 *
 * @example
 * ```ts
 * const problem = await dialect.rowSecurity?.problem(db, 'tasks', ['app_user', 'app_anon'])
 * if (problem !== undefined) throw new ViewsetErrors.InvalidOption('rowLevelSecurity', problem)
 * ```
 */
export interface RowSecurity {
  /** The statement that sets the token's claims (JSON text) and switches to `role` until the transaction ends. */
  settings(claims: string, role: string): RawBuilder<unknown>
  /** The first reason the policies of `table` would not bind every one of `roles` (missing, bypassing, not
   * grantable, row security disabled), or `undefined`. */
  problem(db: AnyDatabase, table: string, roles: readonly string[]): Promise<string | undefined>
}
