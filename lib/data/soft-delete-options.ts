import { invalidOption as fail } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'
import type { RowContext } from '../write-hooks.js'

// The `softDelete` option (issue 39, item 2): DELETE marks a row deleted in a column instead of removing it, every
// read and write of the viewset (and other viewsets' relations) treats a marked row as absent, RESTORE unmarks it
// and PURGE removes it for good. Checked here without a database; the column's type at mounting
// (mount/soft-delete-check.ts).

/**
 * Who may see deleted rows with `?deleted=include|only` on LIST and GET: called with the request, its token and
 * the method; `true` lets it see them, anything else is a 403.
 *
 * @example
 * ```ts
 * const showDeleted: ShowDeletedFunction = ({ token }) => token?.role === 'admin'
 * ```
 */
export type ShowDeletedFunction = (context: RowContext<'LIST' | 'GET'>) => boolean | Promise<boolean>

/**
 * The `softDelete` option's object form; `softDelete: 'deleted_at'` is `{ column: 'deleted_at' }`.
 *
 * @example
 * ```ts
 * createViewset({ db, table: 'posts', schema: Post,
 *   softDelete: { column: 'deleted_at', showDeleted: ({ token }) => token?.role === 'admin' } })
 * ```
 */
export interface SoftDeleteOptions<C extends string = string> {
  /**
   * The column that marks a row deleted: a nullable timestamp (NULL while the row lives, the time of its deletion
   * after), or a NOT NULL boolean (false while it lives). It need not be a schema field; if it is, it is read-only.
   */
  readonly column: C
  /** Who may ask for deleted rows with `?deleted=include|only` (default: nobody, a 403). */
  readonly showDeleted?: ShowDeletedFunction
}

/** The `softDelete` option checked: its column, and who may see deleted rows. */
export interface ResolvedSoftDelete {
  readonly column: string
  readonly showDeleted: ShowDeletedFunction | undefined
}

/** The checked options' `softDelete`: `undefined` when rows are deleted for good. */
export interface SoftDeleteResolution {
  readonly softDelete: ResolvedSoftDelete | undefined
}

const keys = ['column', 'showDeleted']

/** What a column name must look like: it reaches SQL as an identifier, checked against the catalog at mounting. */
const columnName = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Checks `softDelete` (a column name, or {@link SoftDeleteOptions}); `undefined` when it is not given. The column may
 * not be the primary key or the version column (both written by the server for other reasons).
 *
 * @example
 * ```ts
 * checkSoftDelete('deleted_at', { primaryKey: 'id', versionField: undefined }) // { column: 'deleted_at', … }
 * ```
 */
export function checkSoftDelete (
  value: unknown,
  { primaryKey, versionField }: { readonly primaryKey: string; readonly versionField: string | undefined }
): ResolvedSoftDelete | undefined {
  if (value === undefined) return undefined
  const given: Record<string, unknown> = typeof value === 'string' ? { column: value } : isRecord(value) ? value : {}
  if (typeof value !== 'string' && !isRecord(value)) {
    fail('softDelete', "expected a column name, or { column, showDeleted } such as { column: 'deleted_at' }")
  }
  for (const key of Object.keys(given)) {
    if (!keys.includes(key)) fail(`softDelete.${key}`, `unknown key; the keys are ${keys.join(', ')}`)
  }
  const { column, showDeleted } = given
  if (typeof column !== 'string' || !columnName.test(column)) {
    fail('softDelete.column', 'expected a column name (letters, digits and _)')
  }
  if (column === primaryKey || column === versionField) {
    fail('softDelete.column', `"${column}" is the ${column === primaryKey ? 'primary key' : 'versionField'}: ` +
      'name a column of its own, such as deleted_at')
  }
  if (showDeleted !== undefined && typeof showDeleted !== 'function') {
    fail('softDelete.showDeleted', 'expected a function ({ request, token, method }) => boolean')
  }
  return Object.freeze({ column, showDeleted: isShowDeleted(showDeleted) ? showDeleted : undefined })
}

function isShowDeleted (value: unknown): value is ShowDeletedFunction {
  return typeof value === 'function'
}
