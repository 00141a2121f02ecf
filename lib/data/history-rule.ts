import { sql } from 'kysely'
import type { StoredColumn, ViewsetDialect } from '../dialect/dialect.js'
import type { ScopeCondition } from '../query/scope.js'
import type { AnyDatabase, Row } from '../sql.js'

// A hard-deleted row's rule is evaluated on its last stored version (issue 39 item 3): the history holds that version
// as JSON, and the rule is SQL over the table's columns, so the version is read back as a one-row table under the
// table's name (DialectSyntax.storedRows: each column as the table types it) and the rule is asked of it in one SELECT.

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
  { table, catalog }: { readonly table: string; readonly catalog: readonly StoredColumn[] },
  version: Row,
  scope: ScopeCondition
): Promise<boolean> {
  const from = dialect.syntax.storedRows(table, catalog, JSON.stringify([version]))
  try {
    const found = await db.selectFrom(from).select(sql.lit(1).as('one')).where(scope.where).executeTakeFirst()
    return found !== undefined
  } catch {
    return false
  }
}
