import type { ViewsetDialect, WriteTarget } from '../dialect/dialect.js'
import { andThen } from '../execution/eventually.js'
import type { Eventually } from '../execution/eventually.js'
import type { ScopeCondition } from '../query/scope.js'
import type { SoftDeleteColumn, SoftDeletePlan } from '../query/soft-delete-term.js'
import type { AnyDatabase, Row } from '../sql.js'
import { updateKeys } from './bulk-update.js'
import type { AfterRow } from './gateway-results.js'
import type { Precondition } from './precondition.js'
import type { TableGateway } from './table-gateway.js'

// The writes of soft delete (issue 39, item 2): marking a row deleted and unmarking it are UPDATEs of its column
// through the table gateway's update by key, so they run in the write's transaction with its row lock, If-Match,
// version increment, write check and `after` (what afterWrite and a history record hook into), like PATCH.
// The hard delete (PURGE) is the gateway's own `delete`.

/**
 * What marks a row deleted: the time of deletion (RFC 3339 in UTC, which each dialect stores in its column's form),
 * or 1 for a boolean column.
 */
export function deletedValues ({ column, kind }: SoftDeleteColumn): Row {
  return { [column]: kind === 'boolean' ? 1 : new Date().toISOString() }
}

/** What marks a row live again: NULL, or 0 for a boolean column. */
export function restoredValues ({ column, kind }: SoftDeleteColumn): Row {
  return { [column]: kind === 'boolean' ? 0 : null }
}

/**
 * Marks one row deleted (DELETE on a soft-deleting viewset): false when there is no such row in `scope` (which holds
 * "the row lives", so a row deleted already is a 404). `after` gets the row before and as stored, marked.
 *
 * @example
 * ```ts
 * const deleted = await softDeleteRow(resource, db, id, plan, scope, precondition, after)
 * ```
 */
export function softDeleteRow (
  resource: TableGateway,
  db: AnyDatabase,
  id: unknown,
  column: SoftDeleteColumn,
  scope: ScopeCondition | undefined,
  precondition?: Precondition,
  after?: AfterRow
): Eventually<boolean> {
  const written = resource.update(db, id, deletedValues(column), scope, precondition, undefined, undefined, after)
  return andThen(written, (row) => row !== undefined)
}

/**
 * Marks one row live again (RESTORE): the row as stored, or `undefined` when there is none in `scope`; with `check`,
 * the row restored must be in it (PATCH's rule), else a 403 and nothing changes. A row that lives already is written
 * the same (the answer is the same 200).
 *
 * @example
 * ```ts
 * const row = await restoreRow(resource, db, id, plan, scope, precondition, check, after)
 * ```
 */
export function restoreRow (
  resource: TableGateway,
  db: AnyDatabase,
  id: unknown,
  column: SoftDeleteColumn,
  rules: { readonly scope: ScopeCondition | undefined; readonly check: ScopeCondition | undefined },
  precondition?: Precondition,
  after?: AfterRow
): Eventually<Row | undefined> {
  return resource.update(db, id, restoredValues(column), rules.scope, precondition, rules.check, undefined, after)
}

/**
 * Marks the rows with these keys deleted (DELETE_MANY on a soft-deleting viewset), in the caller's transaction, which
 * read and locked them; the version column, when there is one, is incremented as a bulk update does.
 */
export async function softDeleteKeys (
  trx: AnyDatabase,
  dialect: ViewsetDialect,
  target: WriteTarget,
  keys: readonly unknown[],
  marked: { readonly column: SoftDeleteColumn; readonly versionField: string | undefined }
): Promise<void> {
  const { column, versionField } = marked
  await updateKeys(trx, dialect, target, keys, { values: deletedValues(column), versionField })
}

/**
 * Deletes one row as the viewset's DELETE does (the `deleteById` helper): with soft delete, marks it deleted — a live
 * one only, so "the row lives" joins a `scope` that lacks it (an unscoped helper's) — else removes it. False when
 * there is no such row in the scope.
 *
 * @example
 * ```ts
 * const deleted = await deleteRow(resource, db, id, context.softDelete, scope, precondition)
 * ```
 */
export function deleteRow (
  resource: TableGateway,
  db: AnyDatabase,
  id: unknown,
  softDelete: SoftDeletePlan | undefined,
  scope: ScopeCondition | undefined,
  precondition?: Precondition,
  after?: AfterRow
): Eventually<boolean> {
  if (softDelete === undefined) return resource.delete(db, id, scope, precondition, after)
  // The row marked deleted is gone for the API: `after` is told `after: null`, as for a row removed.
  const marked = after && (async (trx: AnyDatabase, before: Row | null) => { await after(trx, before, null) })
  return softDeleteRow(resource, db, id, softDelete, scope ?? softDelete.live, precondition, marked)
}
