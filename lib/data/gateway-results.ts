/** What TableGateway's reads and upserts take and answer, apart from the class itself. */
import type { CursorPosition } from '../query/cursor.js'
import type { ScopeCondition } from '../query/scope.js'
import type { Row } from '../sql.js'

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
