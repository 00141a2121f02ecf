import type { AnyDatabase, Row } from '../sql.js'
import { currentCancellation, withCancellation } from '../execution/cancellation.js'
import { blankHidden } from '../query/field-access.js'
import type { RelationRuleSlot, RuledQuery, RuleRequest } from './relation-rule.js'
import type { RelationKind } from './declaration.js'
import type { RelationLink } from './relation-link.js'

/** Loads the relation fields of a page of rows, with a fixed number of statements. */
export interface RelationLoader {
  /** The schema fields that are relations (never columns, never written). */
  readonly fields: ReadonlySet<string>
  /** The columns the parent rows must carry for the loader (foreign and referenced keys). */
  readonly parentColumns: readonly string[]
  /** The parent column each relation field is looked up by. */
  readonly keys: ReadonlyMap<string, string>
  /** How each relation field joins its parent, for filters, search and ordering through it (query/related-paths.ts). */
  readonly links: ReadonlyMap<string, RelationLink>
  /** The row rules of the tables these relations read, at every level: resolved when the application is ready. */
  readonly ruleSlots: readonly RelationRuleSlot[]
  /**
   * Adds the relation fields to each row, in place; only those in `only` when given. With `request`, the related
   * rows are only those the rules of their tables admit for it (a hidden to-one is `null`, hidden children absent).
   */
  load(db: AnyDatabase, rows: Row[], only?: ReadonlySet<string>, request?: RuleRequest): Promise<void>
}

/** One relation, planned: how to find its rows for a page and where to put them. */
export interface BatchedRelation {
  readonly field: string
  readonly kind: RelationKind
  readonly link: RelationLink
  /** The column of the parent rows whose values are looked up. */
  readonly parentKey: string
  /** The column of the related rows that matches `parentKey`. */
  readonly childKey: string
  readonly query: RuledQuery
  /** Children kept per parent (to-many relations with a limit). */
  readonly limit: number | undefined
  readonly nested: RelationLoader | undefined
  /** The dialect's Map key of a key value, so that both ends meet whatever types the driver answers them in. */
  readonly keyOf: (value: unknown) => unknown
}

/** The distinct, non-null values of `column` in `rows`, as the driver returned them. */
function distinctKeys (rows: readonly Row[], column: string, keyOf: (value: unknown) => unknown): unknown[] {
  const keys: unknown[] = []
  const seen = new Set<unknown>()
  for (const row of rows) {
    const value = row[column]
    if (value === null || value === undefined) continue
    const key = keyOf(value)
    if (!seen.has(key)) {
      seen.add(key)
      keys.push(value)
    }
  }
  return keys
}

async function loadRelation (
  relation: BatchedRelation,
  db: AnyDatabase,
  rows: Row[],
  request: RuleRequest | undefined
): Promise<void> {
  const { parentKey, keyOf } = relation
  const keys = distinctKeys(rows, parentKey, keyOf)
  const context = currentCancellation()
  const children = keys.length === 0 ? [] : await relation.query.run(db, keys, request)
  const { nested } = relation
  if (nested !== undefined && children.length > 0) {
    await withCancellation(context, () => nested.load(db, children, undefined, request))
  }
  // The related table's field rule: its hidden fields leave the rows once attached (a key may be one of them).
  const view = children.length === 0 ? undefined : relation.query.target?.fieldView(request)
  const hidden = view === undefined ? undefined : (await view).hidden
  attach(relation, rows, children)
  if (hidden !== undefined) blankHidden(children, hidden)
}

/** Puts each parent's related rows (or row) in its relation field. */
function attach (relation: BatchedRelation, rows: Row[], children: readonly Row[]): void {
  const { field, parentKey, childKey, keyOf } = relation
  if (relation.kind === 'many-to-one') {
    const byKey = new Map<unknown, Row>()
    for (const child of children) byKey.set(keyOf(child[childKey]), child)
    for (const row of rows) {
      const value = row[parentKey]
      // A NULL foreign key, or one whose row is gone, is null: the parent row stays.
      row[field] = value === null || value === undefined ? null : (byKey.get(keyOf(value)) ?? null)
    }
    return
  }
  // The rows come ordered, and grouping keeps that order within each parent; the first `limit` are kept
  // (the cheap statement of a limited relation reads them all when there are few, see limitedQuery).
  const { limit } = relation
  const groups = new Map<unknown, Row[]>()
  for (const child of children) {
    const key = keyOf(child[childKey])
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [child])
    else if (limit === undefined || group.length < limit) group.push(child)
  }
  for (const row of rows) {
    const value = row[parentKey]
    row[field] = (value === null || value === undefined ? undefined : groups.get(keyOf(value))) ?? []
  }
}

export class BatchedRelationLoader implements RelationLoader {
  readonly fields: ReadonlySet<string>
  readonly parentColumns: readonly string[]
  readonly keys: ReadonlyMap<string, string>
  readonly links: ReadonlyMap<string, RelationLink>
  readonly ruleSlots: readonly RelationRuleSlot[]
  readonly #relations: readonly BatchedRelation[]

  constructor (relations: readonly BatchedRelation[]) {
    this.#relations = relations
    this.fields = new Set(relations.map((relation) => relation.field))
    this.parentColumns = Object.freeze([...new Set(relations.map((relation) => relation.parentKey))])
    this.keys = new Map(relations.map((relation) => [relation.field, relation.parentKey]))
    this.links = new Map(relations.map((relation) => [relation.field, relation.link]))
    // The loads' rules, and those of the paths through each relation (filters, search, ordering), once each.
    this.ruleSlots = Object.freeze([...new Set(relations.flatMap(({ query, link, nested }) => [
      ...query.slots, link.rules.target, ...(link.rules.through === undefined ? [] : [link.rules.through]),
      ...(nested?.ruleSlots ?? []),
    ]))])
  }

  async load (db: AnyDatabase, rows: Row[], only?: ReadonlySet<string>, request?: RuleRequest): Promise<void> {
    if (rows.length === 0) return
    // One relation after the other: a request holds one connection at a time, and the log reads in order.
    // Each starts in the request's cancellation context (execution/cancellation.ts).
    const context = currentCancellation()
    for (const relation of this.#relations) {
      if (only === undefined || only.has(relation.field)) {
        await withCancellation(context, () => loadRelation(relation, db, rows, request))
      }
    }
  }
}
