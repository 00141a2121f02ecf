import type { TObject } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { CatalogColumn } from '../dialect/shared/catalog.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { AnyDatabase, Row } from '../sql.js'
import { invalidOption, ViewsetErrors } from '../errors.js'
import { currentScope, inScope } from '../execution/cancellation.js'
import { BatchedQuery } from './batched-query.js'
import type { Builder, Keyed } from './batched-query.js'
import type { RelatedConfig } from './config.js'
import type { DeclaredRelation, RelationKind } from './declaration.js'
import { applyOrdering, orderClause, parseOrdering } from '../query/ordering.js'
import type { OrderKey } from '../query/ordering.js'
import { attachedConfig, declaredRelations } from './declaration.js'

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
  /** Adds the relation fields to each row, in place; only those in `only` when given. */
  load(db: AnyDatabase, rows: Row[], only?: ReadonlySet<string>): Promise<void>
}

/** The relation config of a viewset: the option, else the one attached to the schema. */
export function relatedConfigOf (
  option: RelatedConfig<unknown> | undefined,
  schema: TObject
): RelatedConfig<unknown> | undefined {
  return option ?? attachedConfig(schema)
}

/** The field names a config declares. */
export function relationFields (config: RelatedConfig<unknown> | undefined): Set<string> {
  return new Set([...Object.keys(config?.selectRelated ?? {}), ...Object.keys(config?.prefetchRelated ?? {})])
}

/** Nesting deeper than this is surely a mistake (such as a schema that attaches a config to itself). */
const maxDepth = 8

/** The alias of the join table's source key in many-to-many rows: the column they are grouped by. */
const sourceAlias = 'viewset_source_key'

/** The alias of a child's rank within its parent, when a relation keeps only the first `limit` children. */
const rankAlias = 'viewset_rank'

/** `alias`, prefixed with `_` until no column of `taken` has its name. */
function freeAlias (alias: string, taken: readonly string[]): string {
  let free = alias
  while (taken.includes(free)) free = `_${free}`
  return free
}

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
}

/** One relation, planned: how to find its rows for a page and where to put them. */
interface PlannedRelation {
  readonly field: string
  readonly kind: RelationKind
  readonly link: RelationLink
  /** The column of the parent rows whose values are looked up. */
  readonly parentKey: string
  /** The column of the related rows that matches `parentKey`. */
  readonly childKey: string
  readonly query: BatchedQuery
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

async function loadRelation (relation: PlannedRelation, db: AnyDatabase, rows: Row[]): Promise<void> {
  const { field, parentKey, childKey, keyOf } = relation
  const keys = distinctKeys(rows, parentKey, keyOf)
  const scope = currentScope()
  const children = keys.length === 0 ? [] : await relation.query.run(db, keys)
  const { nested } = relation
  if (nested !== undefined && children.length > 0) await inScope(scope, () => nested.load(db, children))
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

class BatchedRelationLoader implements RelationLoader {
  readonly fields: ReadonlySet<string>
  readonly parentColumns: readonly string[]
  readonly keys: ReadonlyMap<string, string>
  readonly links: ReadonlyMap<string, RelationLink>
  readonly #relations: readonly PlannedRelation[]

  constructor (relations: readonly PlannedRelation[]) {
    this.#relations = relations
    this.fields = new Set(relations.map((relation) => relation.field))
    this.parentColumns = Object.freeze([...new Set(relations.map((relation) => relation.parentKey))])
    this.keys = new Map(relations.map((relation) => [relation.field, relation.parentKey]))
    this.links = new Map(relations.map((relation) => [relation.field, relation.link]))
  }

  async load (db: AnyDatabase, rows: Row[], only?: ReadonlySet<string>): Promise<void> {
    if (rows.length === 0) return
    // One relation after the other: a request holds one connection at a time, and the log reads in order.
    // Each starts in the request's scope (request-scope.ts).
    const scope = currentScope()
    for (const relation of this.#relations) {
      if (only === undefined || only.has(relation.field)) await inScope(scope, () => loadRelation(relation, db, rows))
    }
  }
}

/** Reads each table's columns once per registration, and only for the tables the declaration names. */
class Catalog {
  readonly #db: AnyDatabase
  readonly dialect: ViewsetDialect
  readonly #tables = new Map<string, Promise<readonly CatalogColumn[]>>()

  constructor (db: AnyDatabase, dialect: ViewsetDialect) {
    this.#db = db
    this.dialect = dialect
  }

  /** The columns of `table`, with their nullability: what `orderBy` needs to sort NULLs alike everywhere. */
  async described (table: string): Promise<ReadonlyMap<string, CatalogColumn>> {
    let columns = this.#tables.get(table)
    if (columns === undefined) {
      columns = this.dialect.catalog.table(this.#db, table).then((described) => described?.columns ?? [])
      this.#tables.set(table, columns)
    }
    const list = await columns
    if (list.length === 0) throw new ViewsetErrors.UnknownTable(table)
    return new Map(list.map((column) => [column.name, column]))
  }

  async columns (table: string): Promise<readonly string[]> {
    return [...(await this.described(table)).keys()]
  }
}

/** The error of a name that is not a column of `table`, naming the option that holds it. */
function notAColumn (path: string, column: string, table: string, columns: readonly string[]): never {
  invalidOption(path, `"${column}" is not a column of table "${table}" (columns: ${columns.join(', ')})`)
}

/** Throws unless `column` is a column of `table`, naming the option that holds it. */
function checkColumn (path: string, column: string, table: string, columns: readonly string[]): string {
  return columns.includes(column) ? column : notAColumn(path, column, table, columns)
}

function unique (names: readonly string[]): string[] {
  return [...new Set(names)]
}

/** The children's order: as declared, then the target's key so that equal keys keep a stable order. */
function orderOf (
  relation: DeclaredRelation,
  key: string | undefined,
  columns: ReadonlyMap<string, CatalogColumn>
): readonly OrderKey[] {
  const parsed = parseOrdering(relation.orderBy ?? [], columns, key)
  if ('keys' in parsed) return parsed.keys
  const path = `${relation.path}.orderBy`
  if (parsed.reason === 'twice') invalidOption(path, `"${parsed.field}" is listed twice`)
  return notAColumn(path, parsed.field, relation.table, [...columns.keys()])
}

/**
 * The statement of a to-many relation that keeps the first `limit` children of each parent. The window function
 * of {@link firstChildren} costs (on SQLite, twice the plain query: a co-routine and two sorts), so each batch first
 * runs the plain ordered query capped at `limit` rows per key plus one: when it gets no more than that, it has
 * every child of the batch, and grouping keeps the first `limit`. Only a batch with more runs the window statement.
 */
function limitedQuery (
  db: AnyDatabase,
  dialect: ViewsetDialect,
  filtered: (keyed: Keyed) => Builder,
  columns: readonly string[],
  partition: string,
  order: readonly OrderKey[],
  limit: number
): BatchedQuery {
  // The cap is a literal of each batch size: the statement's only parameters are the keys.
  return new BatchedQuery(
    db,
    dialect,
    (keyed, count) => applyOrdering(filtered(keyed), order, dialect, 't.').limit(sql.lit(count * limit + 1)),
    {
      rowsPerKey: limit,
      build: (keyed) => firstChildren(db, dialect, filtered(keyed), columns, partition, order, limit),
    }
  )
}

/** A relation without a limit: all the children of each parent, in order. */
function orderedQuery (
  db: AnyDatabase,
  dialect: ViewsetDialect,
  filtered: (keyed: Keyed) => Builder,
  order: readonly OrderKey[]
): BatchedQuery {
  return new BatchedQuery(db, dialect, (keyed) => applyOrdering(filtered(keyed), order, dialect, 't.'))
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

async function planRelation (
  db: AnyDatabase,
  relation: DeclaredRelation,
  parentTable: string,
  parentKey: string,
  catalog: Catalog,
  depth: number
): Promise<PlannedRelation> {
  const { path, table, kind } = relation
  const [parentColumns, described] = await Promise.all([catalog.columns(parentTable), catalog.described(table)])
  const targetColumns = [...described.keys()]
  const { dialect } = catalog
  // The key of one related row, for the next level's many-to-many and one-to-many relations.
  const targetKey = kind === 'one-to-many' ? 'id' : (relation.references ?? 'id')
  const nested = await plan(
    db,
    relation.relatedConfig,
    relation.target,
    table,
    targetKey,
    `${path}.relatedConfig`,
    catalog,
    depth + 1
  )
  const nestedFields = nested?.fields ?? new Set<string>()
  const fields = Object.keys(relation.target.properties).filter((field) => !nestedFields.has(field))
  for (const field of fields) {
    if (!targetColumns.includes(field)) throw new ViewsetErrors.UnknownColumn(field, table, targetColumns.join(', '))
  }
  const extra = nested?.parentColumns ?? []
  // Every statement reads the target as `t`: a key table's own columns (json_each has an `id`) stay apart.
  const qualified = (columns: readonly string[]) => columns.map((column) => `t.${column}`)
  const link = (parentColumn: string, targetColumn: string, through?: RelationLink['through']): RelationLink => ({
    field: relation.field,
    kind,
    table,
    parentColumn,
    targetColumn,
    through,
    target: relation.target,
    columns: fields,
    links: nested?.links ?? new Map(),
  })

  switch (kind) {
    case 'many-to-one': {
      // declared for this kind
      const foreignKey = checkColumn(`${path}.foreignKey`, relation.foreignKey ?? '', parentTable, parentColumns)
      const references = checkColumn(`${path}.references`, relation.references ?? 'id', table, targetColumns)
      const columns = unique([...fields, references, ...extra])
      const query = new BatchedQuery(db, dialect, (keyed) => keyed(table, 't', references).select(qualified(columns)))
      return {
        field: relation.field,
        kind,
        link: link(foreignKey, references),
        parentKey: foreignKey,
        childKey: references,
        query,
        limit: undefined,
        nested,
        keyOf: dialect.keyOf,
      }
    }
    case 'one-to-many': {
      const references = checkColumn(`${path}.references`, relation.references ?? parentKey, parentTable, parentColumns)
      // declared for this kind
      const foreignKey = checkColumn(`${path}.foreignKey`, relation.foreignKey ?? '', table, targetColumns)
      const order = orderOf(relation, targetColumns.includes('id') ? 'id' : undefined, described)
      const columns = unique([...fields, foreignKey, ...extra])
      const { limit } = relation
      const filtered = (keyed: Keyed): Builder => keyed(table, 't', foreignKey).select(qualified(columns))
      const query =
        limit === undefined
          ? orderedQuery(db, dialect, filtered, order)
          : limitedQuery(db, dialect, filtered, columns, `t.${foreignKey}`, order, limit)
      return {
        field: relation.field,
        kind,
        link: link(references, foreignKey),
        parentKey: references,
        childKey: foreignKey,
        query,
        limit,
        nested,
        keyOf: dialect.keyOf,
      }
    }
    case 'many-to-many': {
      const { through } = relation
      // declaredRelations sets it for this kind
      if (through === undefined) throw new Error(`${path}: a many-to-many relation without through`)
      const throughColumns = await catalog.columns(through.table)
      const source = checkColumn(`${path}.through.sourceKey`, through.sourceKey, through.table, throughColumns)
      const target = checkColumn(`${path}.through.targetKey`, through.targetKey, through.table, throughColumns)
      const references = checkColumn(`${path}.references`, relation.references ?? 'id', table, targetColumns)
      checkColumn(path, parentKey, parentTable, parentColumns)
      const order = orderOf(relation, references, described)
      const columns = unique([...fields, ...extra])
      const alias = freeAlias(sourceAlias, columns)
      const selection = [...qualified(columns), `j.${source} as ${alias}`]
      const { limit } = relation
      // The aliases keep schema-qualified names (`shop.tags`) and a self-join apart.
      const joined = (keyed: Keyed): Builder =>
        keyed(through.table, 'j', source).innerJoin(`${table} as t`, `t.${references}`, `j.${target}`).select(selection)
      const query =
        limit === undefined
          ? orderedQuery(db, dialect, joined, order)
          : limitedQuery(db, dialect, joined, [...columns, alias], `j.${source}`, order, limit)
      return {
        field: relation.field,
        kind,
        link: link(parentKey, references, { table: through.table, sourceKey: source, targetKey: target }),
        parentKey,
        childKey: alias,
        query,
        limit,
        nested,
        keyOf: dialect.keyOf,
      }
    }
  }
}

async function plan (
  db: AnyDatabase,
  config: RelatedConfig<unknown> | undefined,
  schema: TObject,
  table: string,
  primaryKey: string,
  path: string,
  catalog: Catalog,
  depth: number
): Promise<RelationLoader | undefined> {
  if (config === undefined) return undefined
  if (depth > maxDepth) {
    invalidOption(
      path,
      `relations nest more than ${maxDepth} levels deep; is a schema's relatedConfig pointing back at itself?`
    )
  }
  const declared = declaredRelations(config, schema, path)
  if (declared.length === 0) return undefined
  const planned: PlannedRelation[] = []
  for (const relation of declared) planned.push(await planRelation(db, relation, table, primaryKey, catalog, depth))
  return new BatchedRelationLoader(planned)
}

/**
 * Checks a relation config against the catalog and the schema, and plans its loaders: one batched
 * statement per relation per level, compiled here, never per request. Returns `undefined` when there
 * is nothing to load. `primaryKey` is the parent's key that one-to-many and many-to-many relations
 * reference by default.
 *
 * @example
 * ```ts
 * const selectRelated = { author: { table: 'authors', foreignKey: 'author_id' } }
 * const loader = await createRelationLoader(db, dialect, { selectRelated }, Book, 'books')
 * await loader?.load(db, books)   // one `select ... from authors where id in (...)` for the whole page
 * ```
 */
export async function createRelationLoader (
  db: AnyDatabase,
  dialect: ViewsetDialect,
  config: RelatedConfig<unknown> | undefined,
  schema: TObject,
  table: string,
  primaryKey = 'id'
): Promise<RelationLoader | undefined> {
  return await plan(db, config, schema, table, primaryKey, 'relatedConfig', new Catalog(db, dialect), 0)
}
