import type { ViewsetDialect } from '../dialect/dialect.js'
import { indexStartsWith } from '../dialect/shared/catalog.js'
import type { CatalogDatabase, TableCatalog } from '../dialect/shared/catalog.js'
import { invalidOption } from '../errors.js'
import type { OrderKey } from '../query/ordering.js'
import type { PrefetchRelated, RelatedConfig } from '../relations/config.js'
import { readsInOrder } from '../relations/relation-limit.js'
import { scalarFields } from '../query/field-types.js'
import { isJsonPath } from '../query/json-paths.js'
import { propertiesOf } from '../schema/derive.js'
import type { JsonSchema } from '../schema/derive.js'

// The index report (issue 36 item 8): which fields a viewset lets clients filter, sort, page or search on, and
// which relations it loads, would make a statement read the whole table for want of an index. Built at mounting
// from the catalog (only an index's leading column serves a filter or an ordering), kept with the viewset in the
// app's registry, and read with `viewsetIndexReport(app)` (viewset-index-report.ts); `strictIndexes: true` makes
// it a startup failure.

/**
 * What a reported field is used for: a filter, an ordering (`cursor` under cursor pagination), `search`, a
 * relation's load, or a group key of AGGREGATE (`groupByFields`).
 *
 * @example
 * ```ts
 * const uses: IndexUse[] = ['filter', 'ordering', 'cursor', 'search', 'relation', 'group']
 * ```
 */
export type IndexUse = 'filter' | 'ordering' | 'cursor' | 'search' | 'relation' | 'group'

/**
 * A field whose statement would scan a table for want of an index (or that no index can serve: a substring
 * match, a relation path).
 *
 * @example
 * ```ts
 * const entry: IndexReportEntry = {
 *   viewset: '/books', table: 'books', field: 'isbn', use: 'filter', reason: 'no index of "books" starts with "isbn"',
 * }
 * ```
 */
export interface IndexReportEntry {
  /** The viewset, by its full prefix (`/books`). */
  readonly viewset: string
  /** The table the statement would scan: the viewset's own, or a relation's table. */
  readonly table: string
  /** The field as the options name it (`title`, `author.name`), or the relation's field (`tags`). */
  readonly field: string
  readonly use: IndexUse
  /** Why no index serves it, in one sentence. */
  readonly reason: string
}

/** The options the report reads. */
export interface IndexReportInput {
  readonly viewset: string
  readonly table: TableCatalog
  readonly primaryKey: string
  readonly pagination: 'offset' | 'cursor'
  readonly filterFields: unknown
  readonly orderingFields: unknown
  readonly defaultOrder: unknown
  readonly searchFields: unknown
  /** AGGREGATE's group keys: grouped in an index's order, or every admitted row sorted (hashed) into groups. */
  readonly groupByFields?: unknown
  /** The schema fields that may hold NULL. */
  readonly nullable: ReadonlySet<string>
  readonly relatedConfig: RelatedConfig<unknown> | undefined
}

/** Reads a relation's table from the catalog (the relation loader already checked that it exists). */
type TableReader = (name: string) => Promise<TableCatalog | undefined>

/** Whether some index of `table` (its primary key included) starts with `column`. */
function leadsAnIndex (table: TableCatalog, column: string): boolean {
  return indexStartsWith(table, [column])
}

/**
 * Why a JSON path scans: its value is read from each row's document. An expression index could serve it (SQLite
 * `json_extract(col, '$.key')`, PostgreSQL `(col #>> '{key}')`, MySQL a generated column), but the report does not
 * read index expressions on any dialect: the path is listed, and its statements are heavy (execution/cost-class.ts).
 */
function jsonPathScan (table: TableCatalog, field: string, dialect: Pick<ViewsetDialect, 'name'>): string {
  return `a JSON path is read from each row's document of "${table.name}"; expression indexes are not detected ` +
    `(${dialect.name}), so its statements are classed heavy`
}

/** The strings of an option that lists fields, or none. */
function names (value: unknown): string[] {
  return Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string') : []
}

/** The filter fields that would scan: substring matches, relation paths, and unindexed columns. */
function filterEntries (input: IndexReportInput, dialect: ViewsetDialect): Array<Omit<IndexReportEntry, 'viewset'>> {
  const { filterFields, table } = input
  if (typeof filterFields !== 'object' || filterFields === null) return []
  const entries: Array<Omit<IndexReportEntry, 'viewset'>> = []
  for (const [field, operators] of Object.entries(filterFields)) {
    const listed = names(operators)
    const reason = isJsonPath(field)
      ? jsonPathScan(table, field, dialect)
      : field.includes('.')
        ? 'a relation path is tested on each row by a subquery'
        : listed.includes('contains')
          ? '`contains` is a substring match, which no B-tree index serves: every row\'s text is read'
          // `ne` matches nearly every row: a page in key order finds its rows at once.
          : listed.some((operator) => operator !== 'ne') && !leadsAnIndex(table, field)
            ? `no index of "${table.name}" starts with "${field}" (${dialect.name})`
            : undefined
    if (reason !== undefined) entries.push({ table: table.name, field, use: 'filter', reason })
  }
  return entries
}

/** Why ordering by `field` sorts every row, or `undefined` when an index gives the order. */
export function orderingScan (
  table: TableCatalog,
  field: string,
  nullable: boolean,
  dialect: Pick<ViewsetDialect, 'name' | 'capabilities'>
): string | undefined {
  if (isJsonPath(field)) return jsonPathScan(table, field, dialect)
  if (field.includes('.')) return 'a relation path sorts on a related value read by a subquery per row'
  // Where NULLs sort first, ordering.ts puts an `is null` key in front, which no plain index serves.
  if (nullable && !dialect.capabilities.nullsSortLargest) {
    return `"${field}" is nullable: ${dialect.name} sorts NULLs first, so the ordering adds an \`is null\` key ` +
      'that no plain index serves'
  }
  if (!leadsAnIndex(table, field)) return `no index of "${table.name}" starts with "${field}" (${dialect.name})`
  return undefined
}

/** The ordering fields (`orderingFields` and `defaultOrder`) whose order no index gives. */
function orderingEntries (input: IndexReportInput, dialect: ViewsetDialect): Array<Omit<IndexReportEntry, 'viewset'>> {
  const { table, primaryKey, nullable } = input
  const defaults = typeof input.defaultOrder === 'string' ? input.defaultOrder.split(',') : []
  const fields = new Set([...names(input.orderingFields), ...defaults.map((key) => key.trim().replace(/^-/, ''))])
  const use = input.pagination === 'cursor' ? 'cursor' : 'ordering'
  return [...fields].flatMap((field) => {
    if (field === '' || field === primaryKey) return []
    const reason = orderingScan(table, field, nullable.has(field), dialect)
    return reason === undefined ? [] : [{ table: table.name, field, use, reason }]
  })
}

/** The keys a to-many relation reads its children by: the child's foreign key, or the join table's two keys. */
async function toManyEntries (
  field: string,
  relation: PrefetchRelated<unknown>,
  read: TableReader,
  dialect: ViewsetDialect
): Promise<Array<Omit<IndexReportEntry, 'viewset'>>> {
  const target = await read(String(relation.table))
  const entries: Array<Omit<IndexReportEntry, 'viewset'>> = []
  const missing = (table: TableCatalog, column: string, role: string): void => {
    if (leadsAnIndex(table, column)) return
    entries.push({
      table: table.name,
      field,
      use: 'relation',
      reason: `no index of "${table.name}" starts with ` +
      `"${column}" (${role}): each load scans it`
    })
  }
  if (relation.through !== undefined) {
    const through = await read(String(relation.through.table))
    if (through !== undefined) missing(through, relation.through.sourceKey, 'the join table\'s key of the parent')
    if (target !== undefined) missing(target, relation.references ?? 'id', 'the key the join table references')
  } else if (target !== undefined && relation.foreignKey !== undefined) {
    missing(target, relation.foreignKey, 'the children\'s key of their parent')
    const order = childOrder(target, relation)
    const sorted = !readsInOrder(dialect, target, relation.foreignKey, order)
    if (entries.length === 0 && relation.limit !== false && sorted) {
      const columns = [relation.foreignKey, ...order.map((key) => key.field)].join(', ')
      entries.push({
        table: target.name,
        field,
        use: 'relation',
        reason: 'each parent\'s children are all read and ' +
        `sorted to keep the first ${relation.limit ?? 100}: no index of "${target.name}" starts with (${columns}) ` +
        `in one direction (${dialect.name})`
      })
    }
  }
  return entries
}

/** A to-many relation's order as its loader sorts (loader.ts): `orderBy`, then `id` where the children have one. */
function childOrder (target: TableCatalog, relation: PrefetchRelated<unknown>): OrderKey[] {
  const listed = typeof relation.orderBy === 'string' ? relation.orderBy.split(',') : [...relation.orderBy ?? []]
  const keys = listed.map((key) => key.trim()).filter((key) => key !== '').map((key) => {
    const name = key.replace(/^-/, '')
    const column = target.columns.find((entry) => entry.name === name)
    return { field: name, descending: key.startsWith('-'), nullable: column?.nullable ?? true }
  })
  const tie = target.columns.some((column) => column.name === 'id') && !keys.some((key) => key.field === 'id')
  return tie ? [...keys, { field: 'id', descending: false, nullable: false }] : keys
}

/** The relation keys (every level) that no index serves. */
async function relationEntries (
  config: RelatedConfig<unknown> | undefined,
  read: TableReader,
  dialect: ViewsetDialect,
  path = ''
): Promise<Array<Omit<IndexReportEntry, 'viewset'>>> {
  const entries: Array<Omit<IndexReportEntry, 'viewset'>> = []
  for (const [name, relation] of Object.entries(config?.selectRelated ?? {})) {
    const target = await read(String(relation.table))
    const key = relation.references ?? 'id'
    if (target !== undefined && !leadsAnIndex(target, key)) {
      entries.push({
        table: target.name,
        field: path + name,
        use: 'relation',
        reason: `no index of "${target.name}" ` +
        `starts with "${key}" (the key the foreign key references): each load scans it`
      })
    }
    entries.push(...await relationEntries(relation.relatedConfig, read, dialect, `${path}${name}.`))
  }
  for (const [name, relation] of Object.entries(config?.prefetchRelated ?? {})) {
    entries.push(...await toManyEntries(path + name, relation, read, dialect))
    entries.push(...await relationEntries(relation.relatedConfig, read, dialect, `${path}${name}.`))
  }
  return entries
}

/**
 * The entries of child counts (`books.count`: query/child-counts.ts) with their own reason: a subquery per row of the
 * table, whether or not an index of the children's key of their parent serves each count (which the reason says).
 */
async function countReasons (
  entries: Array<Omit<IndexReportEntry, 'viewset'>>,
  input: IndexReportInput,
  read: TableReader
): Promise<Array<Omit<IndexReportEntry, 'viewset'>>> {
  const counted = async (entry: Omit<IndexReportEntry, 'viewset'>): Promise<Omit<IndexReportEntry, 'viewset'>> => {
    const relation = entry.field.endsWith('.count')
      ? input.relatedConfig?.prefetchRelated?.[entry.field.slice(0, -'.count'.length)]
      : undefined
    const target = relation === undefined ? undefined : await read(String(relation.table))
    // A related table with a `count` column: the name is that field's path, reported as one.
    if (relation === undefined || target?.columns.some((column) => column.name === 'count') !== false) return entry
    const keyed = relation.through === undefined
      ? { table: target, column: relation.foreignKey }
      : { table: await read(String(relation.through.table)), column: relation.through.sourceKey }
    const { table, column = '' } = keyed
    const name = table?.name ?? String(relation.table)
    const served = table !== undefined && leadsAnIndex(table, column)
      ? `an index of "${name}" starting with "${column}" serves each count`
      : `no index of "${name}" starts with "${column}": each count scans it`
    return { ...entry, reason: `a count of a to-many relation is computed for every row by a subquery (${served})` }
  }
  return await Promise.all(entries.map(counted))
}

/**
 * The index report of one viewset, from the catalog: every filter, ordering (`cursor` under cursor pagination),
 * search field and relation key whose statement would scan a table for want of an index. `search` and `contains`
 * are always listed (no B-tree index serves a substring match), and so are relation paths (a subquery per row).
 *
 * @example
 * ```ts
 * const entries = await indexReport(db, dialect, { viewset: '/books', table, primaryKey: 'id', ... })
 * ```
 */
export async function indexReport (
  db: CatalogDatabase,
  dialect: ViewsetDialect,
  input: IndexReportInput
): Promise<IndexReportEntry[]> {
  const tables = new Map<string, Promise<TableCatalog | undefined>>()
  const read: TableReader = async (name) => {
    const known = tables.get(name) ?? dialect.catalog.table(db, name)
    tables.set(name, known)
    return await known
  }
  const searches = names(input.searchFields).map((field) => ({
    table: input.table.name,
    field,
    use: 'search' as const,
    reason: '`search` is a case-insensitive substring match, which no B-tree index serves: every row\'s text is read',
  }))
  const groups = names(input.groupByFields).flatMap((field) => {
    const reason = field.includes('.')
      ? 'a relation path is read by a subquery per row before the rows are grouped'
      : leadsAnIndex(input.table, field)
        ? undefined
        : `no index of "${input.table.name}" starts with "${field}": every admitted row is sorted into groups`
    return reason === undefined ? [] : [{ table: input.table.name, field, use: 'group' as const, reason }]
  })
  const entries = [
    ...await countReasons([...filterEntries(input, dialect), ...orderingEntries(input, dialect)], input, read),
    ...searches,
    ...groups,
    ...await relationEntries(input.relatedConfig, read, dialect),
  ]
  return entries.map((entry) => Object.freeze({ viewset: input.viewset, ...entry }))
}

/** Fails the startup of a viewset with `strictIndexes: true` whose report is not empty, naming each field. */
export function checkStrictIndexes (table: string, entries: readonly IndexReportEntry[]): void {
  if (entries.length === 0) return
  const fields = entries.map((entry) => `${entry.field} (${entry.use}: ${entry.reason})`).join('; ')
  invalidOption('strictIndexes', `"${table}" has fields whose statements would scan for want of an index: ${fields}. ` +
    'Add the indexes, or remove the fields from the options')
}

/** What mounting hands the report: the viewset's checked options and its entity as served. */
export interface ReportedViewset extends Pick<IndexReportInput, 'primaryKey' | 'pagination'>,
  Partial<Pick<
    IndexReportInput, 'filterFields' | 'orderingFields' | 'defaultOrder' | 'searchFields' | 'groupByFields'
  >> {
  readonly relatedConfig: RelatedConfig<unknown> | undefined
  readonly db: CatalogDatabase
  /** The schema fields that are columns. */
  readonly columns: readonly string[]
  readonly entity: JsonSchema
  readonly strictIndexes?: boolean | undefined
}

/**
 * The viewset's index report, and the ordering fields it lists (their pages are heavy statements); with
 * `strictIndexes`, a non-empty report fails the startup.
 */
export async function checkedIndexReport (
  prefix: string,
  dialect: ViewsetDialect,
  table: TableCatalog,
  viewset: ReportedViewset
): Promise<{ report: readonly IndexReportEntry[], unindexedOrder: ReadonlySet<string> }> {
  const fields = scalarFields(propertiesOf(viewset.entity), viewset.columns)
  const nullable = new Set([...fields.values()].filter((field) => field.nullable).map((field) => field.name))
  const { primaryKey, pagination, filterFields, orderingFields, defaultOrder, searchFields, relatedConfig } = viewset
  const entries = await indexReport(viewset.db, dialect, {
    viewset: prefix,
    table,
    primaryKey,
    pagination,
    nullable,
    relatedConfig,
    filterFields,
    orderingFields,
    defaultOrder,
    searchFields,
    groupByFields: viewset.groupByFields,
  })
  if (viewset.strictIndexes === true) checkStrictIndexes(table.name, entries)
  const sorted = entries.filter(({ use, field }) => (use === 'ordering' || use === 'cursor') && !field.includes('.'))
  return { report: Object.freeze(entries), unindexedOrder: new Set(sorted.map((entry) => entry.field)) }
}
