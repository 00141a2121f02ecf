import { ViewsetErrors } from '../errors.js'
import { fullTextIndex } from '../query/full-text.js'
import { scalarFields } from '../query/field-types.js'
import { propertiesOf } from '../schema/derive.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { ResolvedOptions, ViewsetOptions } from '../options.js'
import type { AnyDatabase } from '../sql.js'
import type { TObject } from '@sinclair/typebox'

// Mounting `fullText`: the index `?q=` reads is the app's (a migration), so startup reads the catalog and fails, naming
// what is missing and how to create it, rather than let the first search fail or read every row.

/** What the check reads of a viewset's declaration. */
interface FullTextSource {
  readonly db: AnyDatabase
  readonly schema: TObject
  readonly columns: readonly string[]
  readonly resolved: Pick<ResolvedOptions, 'table' | 'primaryKey' | 'keyColumns'>
  readonly options: Pick<ViewsetOptions<unknown, never, never>, 'fullText'>
}

/**
 * Checks that the database holds the full-text index the `fullText` option needs (PostgreSQL: a GIN index the
 * statement's expression uses; SQLite: the FTS5 table and its triggers; MySQL: a FULLTEXT index over the fields), and
 * answers `table`. Throws `FST_VIEWSET_INVALID_OPTION` naming `fullText`, with the migration, when it is missing.
 *
 * @example
 * ```ts
 * const table = await checkFullText(declaration, await checkTable(declaration, methods))
 * ```
 */
export async function checkFullText<T extends { readonly dialect: ViewsetDialect }> (
  source: FullTextSource,
  table: T
): Promise<T> {
  const { options, resolved } = source
  if (options.fullText === undefined) return table
  // The index's rows are joined to the table's by one key column (SQLite's FTS rowid, full-text-index.ts).
  if ((resolved.keyColumns?.length ?? 1) > 1) {
    throw new ViewsetErrors.InvalidOption('fullText', 'needs a single-column primaryKey, not a composite key')
  }
  const fields = scalarFields(propertiesOf(source.schema), source.columns)
  const index = fullTextIndex(options.fullText, fields, resolved.table, resolved.primaryKey)
  const { fullText } = table.dialect
  if (fullText === undefined) return table // planFullText says so, once the LIST plan is made
  const problem = await fullText.problem(source.db, index)
  if (problem !== undefined) {
    throw new ViewsetErrors.InvalidOption('fullText', `${problem}. Create it with:\n${fullText.migration(index)}`)
  }
  return table
}
