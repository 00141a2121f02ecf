import { sql } from 'kysely'
import type { RawBuilder } from 'kysely'
import type { ColumnInfo, ViewsetDialect } from '../dialect/dialect.js'
import type { ScopeCondition } from '../query/scope.js'
import type { AnyDatabase, Row } from '../sql.js'

// A hard-deleted row's rule is evaluated on its last stored version (issue 39 item 3): the history holds that version
// as JSON, and the rule is SQL over the table's columns, so the version is turned back into a one-row table under the
// table's name (each value cast to its column's type on PostgreSQL, which types parameters strictly) and the rule is
// asked of it in one SELECT.

/** A catalog type name that may be written into a cast: a plain identifier (`int4`, `timestamptz`, `_text`). */
const castable = /^[a-z_][a-z0-9_]*$/

/** A stored value as a parameter: objects (JSON documents, arrays on MySQL/SQLite) as JSON text. */
function cell (dialect: ViewsetDialect, column: ColumnInfo, value: unknown): RawBuilder<unknown> {
  const bound = value === undefined ? null : value
  if (dialect.name === 'postgres') {
    const text = typeof bound === 'object' && bound !== null && !Array.isArray(bound) ? JSON.stringify(bound) : bound
    return castable.test(column.type) ? sql`cast(${text} as ${sql.raw(column.type)})` : sql`${text}`
  }
  const scalar = typeof bound === 'object' && bound !== null ? JSON.stringify(bound) : bound
  return sql`${dialect.values.parameter(scalar)}`
}

/**
 * Whether the row rule `scope` admits `version`, a stored version of a row of `table` (every column of `catalog`);
 * false too when the database cannot evaluate it on such a version (fails closed: the caller answers 404).
 *
 * @example
 * ```ts
 * if (!(await ruleAdmitsVersion(db, dialect, { table, catalog }, entry.before, scope))) throw notFound
 * ```
 */
export async function ruleAdmitsVersion (
  db: AnyDatabase,
  dialect: ViewsetDialect,
  { table, catalog }: { readonly table: string; readonly catalog: ReadonlyMap<string, ColumnInfo> },
  version: Row,
  scope: ScopeCondition
): Promise<boolean> {
  const cells = [...catalog.values()].map((column) =>
    sql`${cell(dialect, column, version[column.name])} as ${sql.ref(column.name)}`)
  const from = sql<Row>`(select ${sql.join(cells)})`.as(table)
  try {
    const found = await db.selectFrom(from).select(sql.lit(1).as('one')).where(scope.where).executeTakeFirst()
    return found !== undefined
  } catch {
    return false
  }
}
