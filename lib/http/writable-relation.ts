import type { FieldRules } from '../query/field-access.js'
import type { RelationKind } from '../relations/declaration.js'
import type { RelationRuleSlot } from '../relations/relation-rule.js'
import type { AsWritten } from './children-as-written.js'
import type { DefaultHandlers } from './default-handlers.js'
import type { LinkViewset } from './nested-links.js'
import type { RouteContext } from './route-context.js'

// What a nested write reaches (http/nested-writes.ts): a writable relation, as mounting declares it and a request
// writes it, and the viewset serving its related table.

/** A mounted viewset as nested writes reach it: its default handlers and what its routes are declared from. */
export interface NestedTarget {
  readonly defaults: DefaultHandlers
  readonly context: RouteContext
  readonly rules: FieldRules | undefined
}

/** A relation declared `writable: true`, as a request writes it. */
export interface WritableRelation {
  readonly field: string
  readonly kind: RelationKind
  readonly table: string
  /** many-to-one: the parent's column; one-to-many: the child's column. */
  readonly foreignKey: string
  /** The key of the related rows (of a child, the child viewset's primary key, known once the app is ready). */
  targetKey: string
  /** one-to-many: the parent's column the children's foreign key holds; many-to-many: the parent's key. */
  readonly parentKey: string
  readonly through: { readonly table: string, readonly sourceKey: string, readonly targetKey: string } | undefined
  /** The row rule of the related table, as the relation's loads apply it (`'GET'` to-one, `'LIST'` else). */
  readonly rule: RelationRuleSlot
  /** The viewset serving the related table, found when the application is ready. */
  target: NestedTarget | undefined
  /** A many-to-many's link table's viewset, when one serves it: the links are written as its rows (nested-links.ts). */
  link?: LinkViewset | undefined
  /** How a new parent's children may be answered as written (children-as-written.ts), once the app is ready. */
  asWritten?: AsWritten | undefined
}
