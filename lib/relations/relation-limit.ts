import { sql } from 'kysely'
import type { StatementBuilder, ViewsetDialect } from '../dialect/dialect.js'
import type { AnyDatabase } from '../sql.js'
import { indexStartsWith } from '../dialect/shared/catalog.js'
import type { TableCatalog } from '../dialect/shared/catalog.js'
import { applyOrdering } from '../query/ordering.js'
import type { OrderKey } from '../query/ordering.js'
import { keyRowsAlias } from './batched-query.js'
import type { Builder, Keyed, KeyRows } from './batched-query.js'

// A to-many relation with a `limit` reads at most `limit` children of each parent, however many it has: each key of
// the batch drives its own ordered, limited read (a LATERAL join on PostgreSQL; on SQLite, a correlated `IN`
// subquery with LIMIT, which SQLite runs once per key). See benchmarks/analysis.md#relation-limit-per-parent.

/** The alias of the children read by the LATERAL join, and the prefix of the sort keys it carries out. */
const lateralAlias = 'viewset_children'
const sortPrefix = 'viewset_sort_'

/** The join rows a many-to-many relation reads before their targets (PostgreSQL, {@link linksFirstStatement}). */
const linksAlias = 'viewset_links'

/** The alias of the join table and of the target table outside the correlated subquery (SQLite). */
const outerThrough = 'viewset_j'
const outerTarget = 'viewset_t'

/** A to-many relation whose first `limit` children of each parent are read per parent. */
export interface PerParentRelation {
  readonly table: string
  /** The rows of the relation (target `t`, join table `j`) for the keys `keyed` binds, with their rules. */
  readonly from: (keyed: Keyed) => Builder
  /** The columns each child row carries out, as the statements name them (`t.name`, `j.book_id as alias`). */
  readonly selection: readonly string[]
  readonly order: readonly OrderKey[]
  readonly limit: number
  /** Many-to-many: the join table and its keys, and the target's referenced key. */
  readonly through?: {
    readonly table: string
    readonly source: string
    readonly target: string
    readonly references: string
  } | undefined
  /**
   * Many-to-many: the join rows of the keys `keyed` binds, with the join table's rule, when each parent's first
   * `limit` children are its first `limit` join rows: ordered by the target's key, which an index of the join table
   * orders after the source key, each join row's target there (a foreign key, a column never NULL), and no rule on
   * the targets for this request. `undefined` otherwise.
   */
  readonly links?: ((keyed: Keyed) => Builder) | undefined
  /** One-to-many: the target's primary key, which a correlated subquery returns (SQLite). */
  readonly rowKey: readonly string[]
  /** The type the keys are read as, where the database needs one (the key column's type, PostgreSQL). */
  readonly keyType: string | undefined
}

/** `keyed` for a statement correlated to the key rows: the rows of `table` whose `column` is the current key. */
function correlated (db: AnyDatabase): Keyed {
  return (table, alias, column) =>
    db.selectFrom(`${table} as ${alias}`).where(`${alias}.${column}`, '=', sql.ref(`${keyRowsAlias}.value`))
}

/** `name` of `t.name`, `alias` of `j.x as alias`: the column a selection carries out. */
function outputName (selected: string): string {
  const as = / as (\S+)$/.exec(selected)
  return as?.[1] ?? selected.slice(selected.indexOf('.') + 1)
}

/**
 * PostgreSQL (and MySQL 8.0.14+): `from keys cross join lateral (select … where t.fk = keys.value order by … limit n)`,
 * the children's sort keys carried out so that the whole answer is ordered the relation's way.
 */
function lateralStatement (
  db: AnyDatabase,
  dialect: Pick<ViewsetDialect, 'capabilities'>,
  relation: PerParentRelation,
  keys: KeyRows
): StatementBuilder {
  const { order, limit, through, links } = relation
  if (through !== undefined && links !== undefined) {
    return linksFirstStatement(db, dialect, relation, through, links, keys)
  }
  const sorts = order.map((key, index) => `t.${key.field} as ${sortPrefix}${index}`)
  // `limit` is a checked integer, written as a literal: the statement's only parameters are the keys and the rules.
  const selected = relation.from(correlated(db)).select([...relation.selection, ...sorts])
  const children = applyOrdering(selected, order, dialect, 't.').limit(sql.lit(limit))
  const outer = order.map((key, index): OrderKey => ({ ...key, field: `${sortPrefix}${index}` }))
  const statement = db
    .selectFrom(keys(relation.keyType))
    .innerJoinLateral(children.as(lateralAlias), (join) => join.onTrue())
    .select(relation.selection.map((selected) => `${lateralAlias}.${outputName(selected)}`))
  return applyOrdering(statement, outer, dialect, `${lateralAlias}.`)
}

/** The target's key is the join row's target column: the relation's order, read from the join table's index. */
function linkOrder (order: readonly OrderKey[], through: NonNullable<PerParentRelation['through']>): OrderKey[] {
  return order.map((key): OrderKey => ({ ...key, field: through.target }))
}

/**
 * PostgreSQL, a many-to-many relation whose links can be read first ({@link PerParentRelation.links}): each key's first
 * `limit` join rows through the LATERAL join, in the join table's index order, then their targets in one join. With
 * the targets inside the LATERAL, PostgreSQL joins them once per key, a scan of a small target table each time
 * (benchmarks/analysis.md#eager-links-first); the materialized CTE keeps the join out of it.
 */
function linksFirstStatement (
  db: AnyDatabase,
  dialect: Pick<ViewsetDialect, 'capabilities'>,
  relation: PerParentRelation,
  through: NonNullable<PerParentRelation['through']>,
  links: (keyed: Keyed) => Builder,
  keys: KeyRows
): StatementBuilder {
  const { order, limit } = relation
  const columns = [through.source, through.target]
  const rows = links(correlated(db)).select(columns.map((column) => `j.${column}`))
  const first = applyOrdering(rows, linkOrder(order, through), dialect, 'j.').limit(sql.lit(limit))
  const linked = db
    .selectFrom(keys(relation.keyType))
    .innerJoinLateral(first.as(lateralAlias), (join) => join.onTrue())
    .select(columns.map((column) => `${lateralAlias}.${column}`))
  // Read as `j`, the join rows carry the columns the selection names of the join table (its source key).
  const statement = db
    .with((cte) => cte(linksAlias).materialized(), () => linked)
    .selectFrom(`${linksAlias} as j`)
    .innerJoin(`${relation.table} as t`, `t.${through.references}`, `j.${through.target}`)
    .select(relation.selection)
  return applyOrdering(statement, order, dialect, 't.')
}

/**
 * SQLite: each key's children are the rows whose primary key is among the first `limit` a correlated subquery
 * returns for that key (`(pk) in (select t.pk … where t.fk = keys.value order by … limit n)`); many-to-many, the
 * join rows whose target is among them (the subquery over the join table alone where the links can be read first).
 */
function correlatedStatement (
  db: AnyDatabase,
  dialect: Pick<ViewsetDialect, 'capabilities'>,
  relation: PerParentRelation,
  keys: KeyRows
): StatementBuilder {
  const { order, limit, through, table, links } = relation
  const returned = through === undefined ? relation.rowKey.map((column) => `t.${column}`) : [`j.${through.target}`]
  // Links that can be read first (see PerParentRelation.links) are the first `limit` join rows in the join table's
  // index order: the subquery reads that index alone, with no join to the targets and no sort per key.
  const first = (through !== undefined && links !== undefined
    ? applyOrdering(links(correlated(db)).select(returned), linkOrder(order, through), dialect, 'j.')
    : applyOrdering(relation.from(correlated(db)).select(returned), order, dialect, 't.')
  ).limit(sql.lit(limit))
  const rename = (selected: string) =>
    selected.startsWith('j.') ? `${outerThrough}.${selected.slice(2)}` : `${outerTarget}.${selected.slice(2)}`
  let statement: Builder
  if (through === undefined) {
    const tuple = sql.join(relation.rowKey.map((column) => sql.ref(`${outerTarget}.${column}`)))
    statement = db
      .selectFrom(keys(undefined))
      .innerJoin(`${table} as ${outerTarget}`, (join) => join.on(sql<boolean>`(${tuple}) in ${first}`))
  } else {
    statement = db
      .selectFrom(keys(undefined))
      .innerJoin(`${through.table} as ${outerThrough}`, (join) =>
        join
          .onRef(`${outerThrough}.${through.source}`, '=', `${keyRowsAlias}.value`)
          .on(sql<boolean>`${sql.ref(`${outerThrough}.${through.target}`)} in ${first}`)
      )
      .innerJoin(
        `${table} as ${outerTarget}`,
        `${outerTarget}.${through.references}`,
        `${outerThrough}.${through.target}`
      )
  }
  return applyOrdering(statement.select(relation.selection.map(rename)), order, dialect, `${outerTarget}.`)
}

/**
 * The statement that reads the first `limit` children of each key of a batch, one ordered, limited read per key,
 * or `undefined` where the database has no such form (MariaDB: no LATERAL, and no LIMIT in an `IN` subquery) or the
 * relation cannot use it (a target without primary key on SQLite, a key type PostgreSQL cannot be told).
 */
export function perParentStatement (
  db: AnyDatabase,
  dialect: Pick<ViewsetDialect, 'capabilities'>,
  relation: PerParentRelation
): ((keys: KeyRows) => StatementBuilder) | undefined {
  switch (dialect.capabilities.limitPerParent) {
    case 'lateral':
      return relation.keyType === undefined ? undefined : (keys) => lateralStatement(db, dialect, relation, keys)
    case 'correlated-in':
      return relation.through === undefined && relation.rowKey.length === 0
        ? undefined
        : (keys) => correlatedStatement(db, dialect, relation, keys)
    default:
      return undefined
  }
}

/**
 * Whether an index of `table` finds the rows of one `key` in `order` (its columns after `key`, one direction, NULLs
 * where the dialect sorts them anyway): then a per-parent LIMIT reads only the children it keeps.
 */
export function readsInOrder (
  dialect: Pick<ViewsetDialect, 'capabilities'>,
  table: TableCatalog | undefined,
  key: string,
  order: readonly OrderKey[]
): boolean {
  const oneDirection = order.every((entry) => entry.descending === order[0]?.descending)
  if (table === undefined || !oneDirection) return false
  if (order.some((entry) => entry.nullable && !dialect.capabilities.nullsSortLargest)) return false
  return indexStartsWith(table, [key, ...order.map((entry) => entry.field)])
}

/**
 * Whether a many-to-many relation may read its links first ({@link PerParentRelation.links}) when no rule applies to
 * its targets: PostgreSQL's LATERAL form or SQLite's correlated subquery, ordered by the target's key alone, which
 * `through`'s join rows carry in a column never NULL, bound to the target by a foreign key the database checks, and
 * ordered after the source key by an index.
 */
export function linksReadFirst (
  dialect: Pick<ViewsetDialect, 'capabilities'>,
  through: TableCatalog | undefined,
  link: NonNullable<PerParentRelation['through']> & { readonly targetTable: string },
  order: readonly OrderKey[]
): boolean {
  const { source, target, references, targetTable } = link
  const { limitPerParent } = dialect.capabilities
  if ((limitPerParent !== 'lateral' && limitPerParent !== 'correlated-in') || through === undefined) return false
  if (order.length !== 1 || order[0]?.field !== references) return false
  const notNull = through.columns.some((column) => column.name === target && !column.nullable)
  const bound = through.foreignKeys.some((key) => key.enforced !== false &&
    key.table === targetTable && key.columns.length === 1 && key.columns[0] === target &&
    key.references[0] === references)
  return notNull && bound && indexStartsWith(through, [source, target])
}
