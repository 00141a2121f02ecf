import type { ColumnInfo, StoredVersion } from '../dialect.js'

/**
 * A stored value as a scalar a JSON path reads back as the column holds it: a boolean as 1 or 0 (SQLite and MySQL
 * store them so), an object or array (a JSON column) as its text, a missing value as null.
 */
function scalarOf (value: unknown): unknown {
  if (value === undefined) return null
  if (typeof value === 'boolean') return value ? 1 : 0
  if (typeof value === 'object' && value !== null) return JSON.stringify(value)
  return value
}

/**
 * The versions as one JSON parameter, `[{"k": key, "v": [value, …]}]`, each version's values in the order of
 * `columns`: positions (`$.v[3]`), not names, so that no column name is ever written into a JSON path.
 *
 * @example
 * ```ts
 * positionalVersions([{ name: 'id' }, { name: 'owner' }], [{ key: '{"id":5}', row: { id: 5, owner: 'a' } }])
 * // '[{"k":"{\"id\":5}","v":[5,"a"]}]'
 * ```
 */
export function positionalVersions (
  columns: ReadonlyArray<Pick<ColumnInfo, 'name'>>,
  versions: readonly StoredVersion[]
): string {
  return JSON.stringify(versions.map(({ key, row }) => ({
    k: key,
    v: columns.map(({ name }) => scalarOf(Object.hasOwn(row, name) ? row[name] : undefined)),
  })))
}
