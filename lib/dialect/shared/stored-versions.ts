import type { RawBuilder } from 'kysely'
import type { Row } from '../../sql.js'
import type { CatalogColumn } from './catalog.js'

// The rows of a table as the history stored them (JSON texts), as a derived table with the table's own columns: the
// change feed selects from it, under the table's name, with the LIST statement's filters and the caller's rule, so
// that a rule is evaluated on a stored version (a deleted row's last one) exactly as on a live row.

/** The name of the derived table's extra column: the 1-based index of the version in the array given. */
export const versionColumn = '__viewset_version'

/** What a stored-version table is built from: the table's catalog columns and a JSON array of the versions. */
export type StoredVersions = (
  table: string,
  columns: readonly Pick<CatalogColumn, 'name' | 'type' | 'declared'>[],
  documents: string
) => RawBuilder<Row>

/** A JSON path to a top-level member (`$."name"`): names come from the catalog; a quote in one is escaped. */
export function memberPath (name: string): string {
  return `$."${name.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
}
