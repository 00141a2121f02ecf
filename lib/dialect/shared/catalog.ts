import type { Kysely } from 'kysely'

// Types only, plus pure helpers: dialect.ts and each <db>-catalog.ts import this file, and it imports none of them.

/** Kysely over tables known only at run time (the same shape as `AnyDatabase`). */
export type CatalogDatabase = Kysely<Record<string, Record<string, unknown>>>

/** One column as the catalog describes it. */
export interface CatalogColumn {
  readonly name: string
  /** The type's base name, lower-case, without its parameters: `integer`, `varchar`, `int4`, `timestamptz`, `enum`. */
  readonly type: string
  /** The type as declared, lower-case: `varchar(255)`, `tinyint(1)`, `enum('a','b')`, `numeric(10,2)`. */
  readonly declared: string
  readonly nullable: boolean
  /** The default's SQL expression as the catalog prints it, or `undefined` when there is none. */
  readonly default: string | undefined
  /** Computed by the database from other columns (`GENERATED ALWAYS AS (...)`): never written. */
  readonly generated: boolean
  /** Numbered by the database when omitted: identity, serial, AUTO_INCREMENT, SQLite's rowid alias. */
  readonly autoIncrement: boolean
  /** `varchar(n)` / `char(n)` length. */
  readonly maxLength: number | undefined
  /** Allowed values: an enum type, MySQL ENUM, or a `CHECK (column IN (...))` constraint. */
  readonly enumValues: readonly string[] | undefined
  /** MariaDB stores JSON as LONGTEXT with a `json_valid` check; the driver still parses it. */
  readonly json: boolean
}

/** A foreign key: `columns` of this table reference `references` of `table`. */
export interface CatalogForeignKey {
  readonly columns: readonly string[]
  /** The referenced table, as queries name it (schema-qualified on PostgreSQL only outside the search_path). */
  readonly table: string
  readonly references: readonly string[]
  /** False where the database does not check it (SQLite with `foreign_keys` off): a row may reference nothing. */
  readonly enforced?: boolean
}

/** A table or view, as the catalog describes it. */
export interface TableCatalog {
  readonly name: string
  readonly view: boolean
  readonly columns: readonly CatalogColumn[]
  /** The primary key's columns in key order; empty for a view or a table without one. */
  readonly primaryKey: readonly string[]
  /** Unique constraints and plain unique indexes (never partial or expression indexes), primary key excluded. */
  readonly unique: ReadonlyArray<readonly string[]>
  /** Partial unique indexes over columns only, with their predicate as the database prints it (PostgreSQL, SQLite):
   * what `conflictFields` of a soft-deleting viewset may name when it reads "the soft-delete column is null". */
  readonly partialUnique?: ReadonlyArray<{ readonly columns: readonly string[]; readonly predicate: string }>
  /** Every plain B-tree index's columns (primary key and unique ones included), in index order: what can serve a filter
   * or an ordering by its leading column (no partial, expression, GIN, hash or FULLTEXT index). */
  readonly indexes: ReadonlyArray<readonly string[]>
  readonly foreignKeys: readonly CatalogForeignKey[]
  /**
   * Whether deleting one row may write or scan rows of other tables: a foreign key to this table deletes or sets
   * its rows (ON DELETE CASCADE, SET NULL, SET DEFAULT), or no index serves its check. Unknown (`undefined`, SQLite,
   * whose writes take no pool connection) counts as may: a DELETE is then a heavy statement (execution/cost-class.ts).
   */
  readonly deleteCascades?: boolean
}

/** A relation of the schema or database. */
export interface CatalogRelation {
  readonly name: string
  readonly view: boolean
}

/**
 * Reads the structure of a database: part of the dialect seam, one implementation per database.
 *
 * @example
 * ```ts
 * const books = await dialect.catalog.table(db, 'books')
 * books?.foreignKeys // [{ columns: ['author_id'], table: 'authors', references: ['id'] }]
 * ```
 */
export interface CatalogReader {
  /** A table or view (`schema.table` on PostgreSQL, resolved through search_path), or `undefined` when there is none.
   * */
  table(db: CatalogDatabase, name: string): Promise<TableCatalog | undefined>
  /** The tables and views of the current schema (PostgreSQL) or database (MySQL, SQLite), by name. */
  relations(db: CatalogDatabase): Promise<CatalogRelation[]>
}

/**
 * Whether `column` identifies one row: the single-column primary key, or a NOT NULL column with a
 * single-column unique constraint or plain unique index.
 */
export function isRowKey (table: TableCatalog, column: string): boolean {
  if (table.primaryKey.length === 1 && table.primaryKey[0] === column) return true
  const info = table.columns.find((entry) => entry.name === column)
  if (info === undefined || info.nullable) return false
  return table.unique.some((columns) => columns.length === 1 && columns[0] === column)
}

/**
 * Whether an index of `table` (its primary key included) starts with exactly `columns`, in order: one that finds the
 * rows of an equality on the first and gives them in the order of the others, so a LIMIT reads only what it keeps.
 */
export function indexStartsWith (table: TableCatalog, columns: readonly string[]): boolean {
  const starts = (index: readonly string[]) => columns.every((column, at) => index[at] === column)
  return columns.length > 0 && (starts(table.primaryKey) || table.indexes.some(starts))
}

/** The values of a `CHECK (column IN ('a', 'b'))` or `column = ANY (ARRAY['a', 'b'])` constraint, if it is one. */
export function checkInList (check: string, column: string): string[] | undefined {
  const quoted = `(?:"${column}"|\`${column}\`|\\[${column}\\]|${column})`
  const list = new RegExp(
    `^\\s*\\(*\\s*${quoted}\\s*\\)*(?:::[\\w ]+)?\\s*\\)*\\s*(?:in\\s*\\(|=\\s*any\\s*\\(+\\s*array\\s*\\[)(.*)$`,
    'is'
  ).exec(check)?.[1]
  if (list === undefined) return undefined
  const values = [...list.matchAll(/'((?:[^']|'')*)'/g)].map((match) => (match[1] ?? '').replaceAll("''", "'"))
  return values.length === 0 ? undefined : values
}

/** Whether `columns` are the table's primary key, in its order. */
function isPrimaryKey (table: TableCatalog, columns: readonly string[]): boolean {
  return table.primaryKey.length === columns.length && columns.every((column, at) => table.primaryKey[at] === column)
}

/**
 * Why `primaryKey` (its columns) cannot address one row of `table` through the given methods, naming the option at
 * fault. Several columns must be the table's primary key, in its order (the order of the key's path parts).
 */
export function rowKeyProblem (
  table: TableCatalog,
  columns: readonly string[],
  explicit: boolean,
  methods: readonly string[]
): { option: 'primaryKey' | 'methods'; message: string } | undefined {
  const named = columns.join(', ')
  if (table.view) {
    // A view has no key in the catalog: the user vouches for one, and only reads go through it.
    if (!explicit || !columns.every((column) => table.columns.some((entry) => entry.name === column))) {
      return {
        option: 'primaryKey',
        message: `"${table.name}" is a view: name a column that identifies its rows with primaryKey`,
      }
    }
    const writes = methods.filter((method) => method !== 'LIST' && method !== 'GET')
    return writes.length === 0
      ? undefined
      : {
          option: 'methods',
          message: `"${table.name}" is a view, which serves LIST and GET only; remove ${writes.join(', ')}`,
        }
  }
  const [column] = columns
  if (columns.length === 1 && column !== undefined ? isRowKey(table, column) : isPrimaryKey(table, columns)) {
    return undefined
  }
  const key = table.primaryKey.length === 0 ? 'no primary key' : `the primary key (${table.primaryKey.join(', ')})`
  return {
    option: 'primaryKey',
    message: `"${named}" does not identify one row of "${table.name}" (${key}): use the primary key (its columns in ` +
      'key order) or a NOT NULL column with a unique constraint or plain unique index',
  }
}

/** A predicate as printed, reduced to its words: `("deleted_at" IS NULL)` → `deleted_at is null`. */
function predicateWords (predicate: string): string {
  return predicate.toLowerCase().replace(/[()"`[\]]/g, ' ').replace(/\s+/g, ' ').trim()
}

/**
 * The partial unique indexes whose predicate is "the soft-delete column is null" (or false), by their columns: those a
 * soft-deleting viewset's `conflictFields` may name (only live rows are unique, which is what its upserts see).
 */
function liveUnique (table: TableCatalog, column: string | undefined): ReadonlyArray<readonly string[]> | undefined {
  if (column === undefined) return undefined
  const live = new Set([`${column} is null`, `${column} = false`, `${column} = 0`, `not ${column}`])
  return table.partialUnique?.filter((index) => live.has(predicateWords(index.predicate))).map((index) => index.columns)
}

/**
 * Why `conflictFields` cannot choose the row an upsert merges into, or `undefined`: it must be exactly the
 * columns of one unique constraint or plain unique index (in any order), none of them read-only; with
 * `softDeleteColumn`, a partial unique index whose predicate is that column being null (or false) too. With
 * `onAnyKey` (MySQL's `ON DUPLICATE KEY UPDATE`, which fires on whichever unique key conflicts), it must
 * also be the table's only unique key besides an AUTO_INCREMENT one.
 */
export function conflictKeyProblem (
  table: TableCatalog,
  fields: readonly string[],
  writable: readonly string[],
  onAnyKey: boolean,
  softDeleteColumn?: string
): string | undefined {
  const readOnly = fields.filter((field) => !writable.includes(field))
  if (readOnly.length > 0) {
    return `${readOnly.join(', ')} ${readOnly.length === 1 ? 'is' : 'are'} read-only (or not a column): ` +
      'an upsert matches rows on fields the body sends'
  }
  const same = (columns: readonly string[]) =>
    columns.length === fields.length && columns.every((column) => fields.includes(column))
  // A composite primary key's parts are writable: it is a key to merge on too (a single-column key is read-only).
  const keys = [...(table.primaryKey.length > 1 ? [table.primaryKey] : []), ...table.unique]
  const key = keys.find(same) ?? liveUnique(table, softDeleteColumn)?.find(same)
  if (key === undefined) {
    const keys = table.unique.map((columns) => `(${columns.join(', ')})`).join(', ')
    return `(${fields.join(', ')}) is not the set of columns of a unique constraint or plain unique index ` +
      `of "${table.name}" (${keys === '' ? 'it has none' : `its unique keys: ${keys}`})`
  }
  if (!onAnyKey) return undefined
  const numbered = (columns: readonly string[]) =>
    columns.length === 1 && table.columns.some((column) => column.name === columns[0] && column.autoIncrement)
  const others = [
    ...(table.primaryKey.length > 0 ? [table.primaryKey] : []),
    ...table.unique,
  ].filter((columns) => columns !== key && !numbered(columns))
  if (others.length === 0) return undefined
  return `on MySQL and MariaDB, ON DUPLICATE KEY UPDATE fires on any unique key, so (${fields.join(', ')}) ` +
    `must be the only unique key of "${table.name}" besides an AUTO_INCREMENT key; ` +
    `it also has ${others.map((columns) => `(${columns.join(', ')})`).join(', ')}`
}
