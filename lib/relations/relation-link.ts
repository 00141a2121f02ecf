import type { TObject } from '@sinclair/typebox'
import type { RelationKind } from './declaration.js'
import type { RelationRuleSlot } from './relation-rule.js'

/**
 * How one relation's rows meet their parent's, every name checked against the catalog: what a query needs
 * to reach the related rows from the parent table (with `EXISTS` or a subquery) rather than load them.
 */
export interface RelationLink {
  readonly field: string
  readonly kind: RelationKind
  readonly table: string
  /** The column of the parent table the relation starts from. */
  readonly parentColumn: string
  /** many-to-one: the target's key; one-to-many: the target's foreign key; many-to-many: the target's key the join
   * table names. */
  readonly targetColumn: string
  /** many-to-many: the join table, its column matching `parentColumn` and its column matching `targetColumn`. */
  readonly through: { readonly table: string; readonly sourceKey: string; readonly targetKey: string } | undefined
  /** The schema of one related row. */
  readonly target: TObject
  /** The scalar fields of the related rows that are columns (its relation fields left out). */
  readonly columns: readonly string[]
  /** The relations of the related rows. */
  readonly links: ReadonlyMap<string, RelationLink>
  /**
   * The `'LIST'` rules a filter, search or ordering through this relation applies: of its table, and of a
   * many-to-many's join table. A path's subquery sees only the rows they admit, as a load does.
   */
  readonly rules: { readonly target: RelationRuleSlot; readonly through: RelationRuleSlot | undefined }
}
