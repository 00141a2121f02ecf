import { sql } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { AnyDatabase } from '../sql.js'
import { BatchedQuery } from './batched-query.js'
import type { Builder, Keyed } from './batched-query.js'
import { applyOrdering, orderClause } from '../query/ordering.js'
import type { OrderKey } from '../query/ordering.js'
import { perParentStatement } from './relation-limit.js'
import type { PerParentRelation } from './relation-limit.js'

/** The alias of a child's rank within its parent, when a relation keeps only the first `limit` children. */
const rankAlias = 'viewset_rank'

/** `alias`, prefixed with `_` until no column of `taken` has its name. */
export function freeAlias (alias: string, taken: readonly string[]): string {
  let free = alias
  while (taken.includes(free)) free = `_${free}`
  return free
}

/**
 * The statement of a to-many relation that keeps the first `limit` children of each parent. Where the database reads
 * each key's children by itself, ordered and limited (relation-limit.ts), that is the one statement, whatever the
 * number of children. Elsewhere (MariaDB) the window function of {@link firstChildren} costs (on SQLite, twice the
 * plain query: a co-routine and two sorts), so each batch first runs the plain ordered query capped at `limit` rows
 * per key plus one: when it gets no more than that, it has every child of the batch, and grouping keeps the first
 * `limit`. Only a batch with more runs the window statement, which reads and numbers every child of the batch.
 */
export function limitedQuery (
  db: AnyDatabase,
  dialect: ViewsetDialect,
  relation: PerParentRelation & {
    readonly columns: readonly string[]
    readonly partition: string
    /** An index finds each parent's children in order (Catalog.readsInOrder in loader.ts). */
    readonly indexed: boolean
  },
  extra = 0
): BatchedQuery {
  const perParent = perParentStatement(db, dialect, relation)
  if (perParent !== undefined) {
    // Reads at most `limit` children of each parent through an index in their order (relation-limit.ts); without
    // one, every child of a parent is read and sorted to keep `limit`, whatever the LIMIT.
    const cost = relation.indexed ? 'cheap' : 'heavy'
    return new BatchedQuery(db, dialect, (_keyed, _count, keys) => perParent(keys), undefined, extra, cost)
  }
  const { order, limit, columns, partition } = relation
  const filtered = (keyed: Keyed): Builder => relation.from(keyed).select(relation.selection)
  // The cap is a literal of each batch size: the statement's only parameters are the keys.
  return new BatchedQuery(
    db,
    dialect,
    (keyed, count) => applyOrdering(filtered(keyed), order, dialect, 't.').limit(sql.lit(count * limit + 1)),
    {
      rowsPerKey: limit,
      build: (keyed) => firstChildren(db, dialect, filtered(keyed), columns, partition, order, limit),
    },
    extra,
    // A parent may have any number of children, which the cap reads before it keeps `limit` of each: known by running.
    'learned'
  )
}

/** A relation without a limit: all the children of each parent, in order. */
export function orderedQuery (
  db: AnyDatabase,
  dialect: ViewsetDialect,
  filtered: (keyed: Keyed) => Builder,
  order: readonly OrderKey[],
  extra = 0
): BatchedQuery {
  return new BatchedQuery(
    db, dialect, (keyed) => applyOrdering(filtered(keyed), order, dialect, 't.'), undefined, extra, 'learned'
  )
}

/**
 * Keeps the first `limit` children of each parent, still in one statement: the children, numbered within
 * their parent in the relation's order by a window function (SQLite 3.25, PostgreSQL, MariaDB 10.2, MySQL 8),
 * read back up to `limit`. `query` selects `columns` and is filtered by the parent keys but not ordered;
 * ordering by the rank keeps each parent's children in order, which is all grouping needs.
 */
function firstChildren (
  db: AnyDatabase,
  dialect: ViewsetDialect,
  query: Builder,
  columns: readonly string[],
  partition: string,
  order: readonly OrderKey[],
  limit: number
): Builder {
  const rank = freeAlias(rankAlias, columns)
  const by = orderClause(order, dialect, 't.')
  const ranked = query.select([
    sql<number>`row_number() over (partition by ${sql.ref(partition)} order by ${by})`.as(rank),
  ])
  // `limit` is a checked integer, written as a literal: the statement's only parameters are the keys.
  return db
    .selectFrom(ranked.as('viewset_ranked')) // the subquery's columns are known only at run time
    .select(columns)
    .where(rank, '<=', sql.lit(limit))
    .orderBy(rank, 'asc')
}
