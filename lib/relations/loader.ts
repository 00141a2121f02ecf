import type { TObject } from '@sinclair/typebox'
import type { CatalogColumn, TableCatalog } from '../dialect/shared/catalog.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { AnyDatabase } from '../sql.js'
import { invalidOption, ViewsetErrors } from '../errors.js'
import { BatchedQuery } from './batched-query.js'
import type { Builder, Keyed } from './batched-query.js'
import { BatchedRelationLoader } from './batched-loader.js'
import type { BatchedRelation, RelationLoader } from './batched-loader.js'
import type { RelatedConfig } from './config.js'
import type { DeclaredRelation } from './declaration.js'
import { attachedConfig, declaredRelations } from './declaration.js'
import type { RelationLink } from './relation-link.js'
import { freeAlias, limitedQuery, orderedQuery } from './relation-queries.js'
import { linksReadFirst, readsInOrder } from './relation-limit.js'
import { RelationRuleSlot, RuledQuery } from './relation-rule.js'
import type { ScopeCondition } from '../query/scope.js'
import { parseOrdering } from '../query/ordering.js'
import type { OrderKey } from '../query/ordering.js'

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

/** Reads each table's columns once per registration, and only for the tables the declaration names. */
class Catalog {
  readonly #db: AnyDatabase
  readonly dialect: ViewsetDialect
  readonly #tables = new Map<string, Promise<TableCatalog | undefined>>()

  constructor (db: AnyDatabase, dialect: ViewsetDialect) {
    this.#db = db
    this.dialect = dialect
  }

  /** The columns of `table`, with their nullability: what `orderBy` needs to sort NULLs alike everywhere. */
  async described (table: string): Promise<ReadonlyMap<string, CatalogColumn>> {
    const list = (await this.table(table))?.columns ?? []
    if (list.length === 0) throw new ViewsetErrors.UnknownTable(table)
    return new Map(list.map((column) => [column.name, column]))
  }

  /** The primary key's columns of `table` (none for a view). */
  async primaryKey (table: string): Promise<readonly string[]> {
    return (await this.table(table))?.primaryKey ?? []
  }

  /** `table` as the catalog describes it, read once per loader. */
  async table (table: string): Promise<TableCatalog | undefined> {
    let described = this.#tables.get(table)
    if (described === undefined) {
      described = this.dialect.catalog.table(this.#db, table)
      this.#tables.set(table, described)
    }
    return await described
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

/** What every kind of relation is planned from: the declaration, checked against the catalog, and its nested loader. */
interface RelationSite {
  readonly db: AnyDatabase
  readonly dialect: ViewsetDialect
  readonly relation: DeclaredRelation
  readonly catalog: Catalog
  readonly parentTable: string
  readonly parentKey: string
  readonly parentColumns: readonly string[]
  readonly described: ReadonlyMap<string, CatalogColumn>
  readonly targetColumns: readonly string[]
  /** The target's scalar fields that are columns (its relation fields left out). */
  readonly fields: readonly string[]
  /** The columns the nested loader needs of each related row. */
  readonly extra: readonly string[]
  readonly nested: RelationLoader | undefined
}

/** `builder` restricted to the rows every condition admits (their values bound after the keys, in this order). */
function restricted (builder: Builder, conditions: readonly ScopeCondition[]): Builder {
  let ruled = builder
  for (const condition of conditions) ruled = ruled.where(condition.where)
  return ruled
}

/** How many values the conditions bind. */
function valuesOf (conditions: readonly ScopeCondition[]): number {
  let count = 0
  for (const condition of conditions) count += condition.parameters.length
  return count
}

/** The rule of the relation's target, read as `t`: its `'GET'` rule for a to-one load, its `'LIST'` rule otherwise. */
function targetSlot (relation: DeclaredRelation): RelationRuleSlot {
  const method = relation.kind === 'many-to-one' ? 'GET' : 'LIST'
  return new RelationRuleSlot(relation.path, relation.table, 't', relation.rulesFrom, method)
}

/**
 * The type a batch's keys are read as, where the database needs one: the key column's type as the catalog declares
 * it, when it is a plain type name (`integer`, `character varying(64)`); `undefined` otherwise.
 */
function keyTypeOf (column: CatalogColumn | undefined): string | undefined {
  const declared = column?.declared
  return declared !== undefined && /^[a-z][a-z0-9_ ]*(?:\(\d+(?:, ?\d+)?\))?$/.test(declared) ? declared : undefined
}

/** Every statement reads the target as `t`: a key table's own columns (json_each has an `id`) stay apart. */
function qualified (columns: readonly string[]): string[] {
  return columns.map((column) => `t.${column}`)
}

/**
 * How the relation of `site` meets its parent, for filters, search and ordering through it, under `rules`: its
 * table's `'LIST'` rule (and its join table's).
 */
function linkOf (
  site: RelationSite,
  parentColumn: string,
  targetColumn: string,
  rules: RelationLink['rules'],
  through?: RelationLink['through']
): RelationLink {
  const { relation } = site
  return {
    rules,
    field: relation.field,
    kind: relation.kind,
    table: relation.table,
    parentColumn,
    targetColumn,
    through,
    target: relation.target,
    columns: site.fields,
    links: site.nested?.links ?? new Map(),
  }
}

function planManyToOne (site: RelationSite): BatchedRelation {
  const { db, dialect, relation, parentTable, parentColumns, targetColumns, fields, extra, nested } = site
  const { path, table } = relation
  // declared for this kind
  const foreignKey = checkColumn(`${path}.foreignKey`, relation.foreignKey ?? '', parentTable, parentColumns)
  const references = checkColumn(`${path}.references`, relation.references ?? 'id', table, targetColumns)
  const columns = unique([...fields, references, ...extra])
  // A path through a to-one relation reads it as a list does (`?project.owner=`): the 'LIST' rule, not the load's GET.
  const pathRule = new RelationRuleSlot(path, table, 't', relation.rulesFrom, 'LIST')
  const query = new RuledQuery([targetSlot(relation)], (conditions) =>
    new BatchedQuery(
      db,
      dialect,
      (keyed) => restricted(keyed(table, 't', references), conditions).select(qualified(columns)),
      undefined,
      valuesOf(conditions)
    )
  )
  return {
    field: relation.field,
    kind: relation.kind,
    link: linkOf(site, foreignKey, references, { target: pathRule, through: undefined }),
    parentKey: foreignKey,
    childKey: references,
    query,
    limit: undefined,
    nested,
    keyOf: dialect.values.keyOf,
  }
}

async function planOneToMany (site: RelationSite): Promise<BatchedRelation> {
  const { db, dialect, relation, parentTable, parentKey, parentColumns, targetColumns, fields, extra, nested } = site
  const { path, table, limit } = relation
  const references = checkColumn(`${path}.references`, relation.references ?? parentKey, parentTable, parentColumns)
  // declared for this kind
  const foreignKey = checkColumn(`${path}.foreignKey`, relation.foreignKey ?? '', table, targetColumns)
  const order = orderOf(relation, targetColumns.includes('id') ? 'id' : undefined, site.described)
  const columns = unique([...fields, foreignKey, ...extra])
  const rowKey = await site.catalog.primaryKey(table)
  const keyType = keyTypeOf(site.described.get(foreignKey))
  const indexed = readsInOrder(dialect, await site.catalog.table(table), foreignKey, order)
  const rule = targetSlot(relation)
  const query = new RuledQuery([rule], (conditions) => {
    const from = (keyed: Keyed): Builder => restricted(keyed(table, 't', foreignKey), conditions)
    const extra = valuesOf(conditions)
    const selection = qualified(columns)
    return limit === undefined
      ? orderedQuery(db, dialect, (keyed) => from(keyed).select(selection), order, extra)
      : limitedQuery(db, dialect, {
        table, from, selection, columns, partition: `t.${foreignKey}`, order, limit, rowKey, keyType, indexed,
      }, extra)
  })
  return {
    field: relation.field,
    kind: relation.kind,
    link: linkOf(site, references, foreignKey, { target: rule, through: undefined }),
    parentKey: references,
    childKey: foreignKey,
    query,
    limit,
    nested,
    keyOf: dialect.values.keyOf,
  }
}

async function planManyToMany (site: RelationSite): Promise<BatchedRelation> {
  const { db, dialect, relation, parentTable, parentKey, parentColumns, targetColumns, fields, extra, nested } = site
  const { path, table, through, limit } = relation
  // declaredRelations sets it for this kind
  if (through === undefined) throw new Error(`${path}: a many-to-many relation without through`)
  const throughColumns = await site.catalog.columns(through.table)
  const source = checkColumn(`${path}.through.sourceKey`, through.sourceKey, through.table, throughColumns)
  const target = checkColumn(`${path}.through.targetKey`, through.targetKey, through.table, throughColumns)
  const references = checkColumn(`${path}.references`, relation.references ?? 'id', table, targetColumns)
  checkColumn(path, parentKey, parentTable, parentColumns)
  const order = orderOf(relation, references, site.described)
  const columns = unique([...fields, ...extra])
  const alias = freeAlias(sourceAlias, columns)
  const selection = [...qualified(columns), `j.${source} as ${alias}`]
  // The aliases keep schema-qualified names (`shop.tags`) and a self-join apart.
  // The targets take their table's rule, and the join table its own when it has one.
  const rules = {
    target: targetSlot(relation),
    through: new RelationRuleSlot(`${path}.through`, through.table, 'j', undefined, 'LIST'),
  }
  const slots = [rules.target, rules.through]
  const keyType = keyTypeOf((await site.catalog.described(through.table)).get(source))
  const link = { table: through.table, source, target, references }
  const throughTable = await site.catalog.table(through.table)
  // The join rows of one parent are found by an index; their targets are then sorted (a parent's links are few).
  const indexed = readsInOrder(dialect, throughTable, source, [])
  const linksFirst = linksReadFirst(dialect, throughTable, { ...link, targetTable: table }, order)
  const query = new RuledQuery(slots, (conditions, targetRuled) => {
    const links = (keyed: Keyed): Builder => restricted(keyed(through.table, 'j', source), conditions)
    const from = (keyed: Keyed): Builder => links(keyed).innerJoin(`${table} as t`, `t.${references}`, `j.${target}`)
    return limit === undefined
      ? orderedQuery(db, dialect, (keyed) => from(keyed).select(selection), order, valuesOf(conditions))
      : limitedQuery(db, dialect, {
        table,
        from,
        selection,
        order,
        limit,
        keyType,
        indexed,
        through: link,
        rowKey: [],
        links: linksFirst && !targetRuled ? links : undefined, // no rule on the targets: every condition is `j`'s
        columns: [...columns, alias],
        partition: `j.${source}`,
      }, valuesOf(conditions))
  })
  return {
    field: relation.field,
    kind: relation.kind,
    link: linkOf(site, parentKey, references, rules, { table: through.table, sourceKey: source, targetKey: target }),
    parentKey,
    childKey: alias,
    query,
    limit,
    nested,
    keyOf: dialect.values.keyOf,
  }
}

async function planRelation (
  db: AnyDatabase,
  relation: DeclaredRelation,
  parentTable: string,
  parentKey: string,
  catalog: Catalog,
  depth: number
): Promise<BatchedRelation> {
  const { path, table, kind } = relation
  const [parentColumns, described] = await Promise.all([catalog.columns(parentTable), catalog.described(table)])
  const targetColumns = [...described.keys()]
  // The key of one related row, for the next level's many-to-many and one-to-many relations.
  const targetKey = kind === 'one-to-many' ? 'id' : (relation.references ?? 'id')
  const nestedPath = `${path}.relatedConfig`
  const { relatedConfig, target } = relation
  const nested = await plan(db, relatedConfig, target, table, targetKey, nestedPath, catalog, depth + 1)
  const nestedFields = nested?.fields ?? new Set<string>()
  const fields = Object.keys(relation.target.properties).filter((field) => !nestedFields.has(field))
  for (const field of fields) {
    if (!targetColumns.includes(field)) throw new ViewsetErrors.UnknownColumn(field, table, targetColumns.join(', '))
  }
  const extra = nested?.parentColumns ?? []
  const { dialect } = catalog
  const site: RelationSite = {
    db,
    dialect,
    relation,
    catalog,
    parentTable,
    parentKey,
    parentColumns,
    described,
    targetColumns,
    fields,
    extra,
    nested,
  }
  switch (kind) {
    case 'many-to-one': return planManyToOne(site)
    case 'one-to-many': return await planOneToMany(site)
    case 'many-to-many': return await planManyToMany(site)
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
  const planned: BatchedRelation[] = []
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
