/** What TableGateway's reads and upserts take and answer, apart from the class itself. */
import type { CursorPosition } from '../query/cursor.js'
import type { ScopeCondition } from '../query/scope.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { Eventually } from '../execution/eventually.js'

/** A row an upsert wrote, and whether it was created (else updated). */
export interface UpsertedRow {
  readonly row: Row
  readonly created: boolean
}

/** A page read by cursor: its rows in the request's order, and the positions its `next` and `prev` links start from. */
export interface CursorPage {
  readonly rows: Row[]
  /** Absent when no row follows the page. */
  readonly next: CursorPosition | undefined
  /** Absent on the first page. */
  readonly prev: CursorPosition | undefined
}

/** Which columns `find` reads (a `?fields=` selection), and the viewset's `scope` for this request. */
export interface FindOptions {
  readonly selection?: { readonly shape: string; readonly columns: readonly string[] } | undefined
  readonly scope?: ScopeCondition | undefined
}

/**
 * What runs after one row a write changed, in the write's transaction (the viewset's `afterWrite`): `before` is
 * `null` for a created row, `after` `null` for a deleted one.
 */
export type AfterRow = ((trx: AnyDatabase, before: Row | null, after: Row | null) => Promise<void>) & {
  /** The same, at once, when nothing it runs is asynchronous (the history alone, on SQLite): a write may then run
   * in a synchronous transaction (execution/sync-transaction.ts). */
  readonly now?: ((trx: AnyDatabase, before: Row | null, after: Row | null) => Eventually<void>) | undefined
}
