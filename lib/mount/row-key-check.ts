import type { TObject } from '@sinclair/typebox'
import type { TableCatalog } from '../dialect/shared/catalog.js'
import { declaredRelations } from '../relations/declaration.js'
import { ViewsetErrors } from '../errors.js'
import type { ResolvedOptions } from '../options.js'
import { RowKey, isKeyColumns } from '../row-key.js'

// The row key a viewset serves, settled once the catalog is read: the `primaryKey` option, else `id`, else the
// table's own primary key (single or composite) when the schema has all its columns.

/**
 * The viewset's row key: `keyColumns` when the options named them, else the table's primary key, every column of which
 * must be a field of the schema. Throws `FST_VIEWSET_INVALID_OPTION` naming `primaryKey` when there is none.
 *
 * @example
 * ```ts
 * settleKey(resolved, described, ['book_id', 'tag_id', 'note']).columns // ['book_id', 'tag_id']
 * ```
 */
export function settleKey (
  resolved: Pick<ResolvedOptions, 'keyColumns'>,
  table: TableCatalog,
  fields: readonly string[]
): RowKey {
  if (resolved.keyColumns !== undefined) return new RowKey(resolved.keyColumns)
  const own = table.primaryKey
  if (isKeyColumns(own) && own.every((column) => fields.includes(column))) return new RowKey(own)
  const key = own.length === 0 ? 'has no primary key' : `has the primary key (${own.join(', ')})`
  throw new ViewsetErrors.InvalidOption(
    'primaryKey',
    `the schema has no "id" field and "${table.name}" ${key} whose columns are all fields of the schema ` +
      `(fields: ${fields.join(', ')}): name the key with primaryKey`
  )
}

/**
 * The key columns a client never writes: a single-column key always (as it always was), and the parts of a composite
 * key that the database fills (a default, an identity, a generated column). Other parts are sent on POST.
 */
export function serverSetKeyColumns (key: RowKey, table: TableCatalog): ReadonlySet<string> {
  if (!key.composite) return new Set([key.first])
  return new Set(key.columns.filter((name) => {
    const column = table.columns.find((entry) => entry.name === name)
    return column === undefined || column.autoIncrement || column.generated || column.default !== undefined
  }))
}

/** The options with the settled key: `primaryKey` its first column, `keyColumns` all of them. */
export function withSettledKey<R extends ResolvedOptions> (resolved: R, key: RowKey): R {
  return Object.freeze({ ...resolved, primaryKey: key.first, keyColumns: key.columns })
}

/**
 * A composite-keyed viewset's to-many relations name the parent column their children reference (`references`):
 * by default a child references the parent's key, which here is several columns.
 */
export function checkCompositeRelations (key: RowKey, config: unknown, schema: TObject): void {
  if (!key.composite || config === undefined) return
  for (const relation of declaredRelations(config, schema)) {
    if (relation.kind !== 'many-to-one' && relation.references === undefined) {
      throw new ViewsetErrors.InvalidOption(`${relation.path}.references`, 'the viewset\'s key is composite ' +
        `(${key.columns.join(', ')}): name the one column of "${key.columns.join('", "')}" its children reference`)
    }
  }
}
