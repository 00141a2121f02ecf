import type { CatalogColumn } from './catalog.js'

// Types only: how each database's driver answers its columns, for the code generator. Each
// <db>-column-types.ts implements it; lib/generate/ reads it without knowing which database it is.

/** What a column holds, as the viewset serves it. */
export type ColumnKind =
  | 'integer' | 'bigint' | 'number' | 'decimal' | 'boolean' | 'string'
  | 'uuid' | 'date-time' | 'date' | 'json' | 'enum' | 'binary'

/** The types a driver answers a kind of column in, where they are not the usual ones. */
export interface DriverType {
  /** The Kysely column type in db.ts: a TypeScript type or one of the aliases db.ts declares. */
  readonly kysely: string
  /** The type a select returns. */
  readonly selected: string
  /** The TypeBox type of the schema (`String`), when not the kind's usual one. */
  readonly typebox?: string
}

/**
 * How one database stores and its driver (through createDatabase) answers each kind of column.
 *
 * @example
 * ```ts
 * sqliteColumnTypes.kindOf(column)        // 'boolean' for a BOOLEAN column
 * sqliteColumnTypes.driverTypes.boolean   // { kysely: 'number', selected: 'number' }: SQLite stores 0/1
 * ```
 */
export interface ColumnTypes {
  /** The kind of a column from its catalog type (enums are recognised before). */
  kindOf (column: CatalogColumn): ColumnKind
  /** Where Kysely's and the select's types differ from the defaults: `Int8`, `Numeric`, `Timestamp`, `Json`. */
  readonly driverTypes: Partial<Record<ColumnKind, DriverType>>
  /**
   * The kinds whose driver values are not the JSON type that the schema declares (numeric strings, Date
   * objects, SQLite's 0/1), by that TypeScript type: the serializer converts them.
   */
  readonly converted: Partial<Record<ColumnKind, string>>
  /** Whether a type named `_t` is an array of `t` (PostgreSQL). */
  readonly arrays: boolean
}
