import type { CatalogForeignKey, TableCatalog } from '../dialect/shared/catalog.js'
import { isRowKey } from '../dialect/shared/catalog.js'
import type { DialectName } from './column-types.js'
import { mapColumn } from './column-types.js'
import { isSecretColumn } from './secrets.js'
import type { TableIdentifier } from './naming.js'
import { tableIdentifiers } from './naming.js'

/** One relation field of a served table, as its relatedConfig entry says it. */
export interface PlannedRelation {
  readonly kind: 'many-to-one' | 'one-to-many' | 'many-to-many'
  /** The field name. */
  readonly name: string
  /** The related table. */
  readonly table: string
  /** Many-to-one: this table's column; one-to-many: the other table's column. */
  readonly foreignKey?: string
  /** The referenced key, when it is not `id`. */
  readonly references?: string
  readonly through?: { readonly table: string; readonly sourceKey: string; readonly targetKey: string }
}

/** A table or view that gets a viewset. */
export interface ServedTable {
  readonly catalog: TableCatalog
  readonly primaryKey: string
  readonly relations: readonly PlannedRelation[]
}

/** What the command writes: every table in db.ts and schemas.ts, and viewsets for the served ones. */
export interface GeneratePlan {
  readonly dialect: DialectName
  /** Every chosen table and view, by name. */
  readonly tables: readonly TableCatalog[]
  readonly served: readonly ServedTable[]
  /** Pure link tables: no viewset of their own, the `through` of a many-to-many. */
  readonly links: readonly string[]
  /** Tables and views without a viewset, and why. */
  readonly skipped: ReadonlyArray<{ readonly table: string; readonly reason: string }>
  /** The identifier each table's generated names start with (`books` → `Books`, `BooksTable`). */
  readonly identifiers: ReadonlyMap<string, TableIdentifier>
  /** `--include-secrets`: secret-looking columns stay in the schemas. */
  readonly includeSecrets: boolean
  /** Tables and views over {@link largeTableRows} rows: no substring search and no exact count on them. */
  readonly large: ReadonlySet<string>
}

/** What planGeneration needs beyond the catalog. */
export interface PlanSettings {
  /** `--include-secrets`: serve secret-looking columns, and tables keyed by one. */
  readonly includeSecrets?: boolean
  /** The rows of each table, counted up to {@link largeTableRows} + 1. */
  readonly rows?: ReadonlyMap<string, number>
}

/**
 * Above this many rows a table is large: a substring match (`contains`, `search`) or an exact count scans it
 * whole, since no B-tree index serves them, so generate leaves them out there.
 */
export const largeTableRows = 10_000

function single (key: CatalogForeignKey): { column: string; references: string } | undefined {
  const [column] = key.columns
  const [references] = key.references
  return key.columns.length === 1 && column !== undefined && references !== undefined
    ? { column, references }
    : undefined
}

/** A table whose only columns are two single-column foreign keys that together are its key. */
function linkEnds (table: TableCatalog): [CatalogForeignKey, CatalogForeignKey] | undefined {
  const [first, second] = table.foreignKeys
  if (table.view || table.foreignKeys.length !== 2 || first === undefined || second === undefined) return undefined
  const a = single(first)
  const b = single(second)
  if (a === undefined || b === undefined || a.column === b.column) return undefined
  if (
    table.columns.length !== 2 ||
    !table.columns.every((column) => column.name === a.column || column.name === b.column)
  ) { return undefined }
  const pair = [a.column, b.column].sort().join(',')
  const keyed = [table.primaryKey, ...table.unique].some((columns) => [...columns].sort().join(',') === pair)
  return keyed ? [first, second] : undefined
}

/** The single-column key of a table that JSON can carry: its primary key, else a NOT NULL unique column. */
function keyOf (table: TableCatalog, servable: (column: string) => boolean): string | undefined {
  const [primary] = table.primaryKey
  if (table.primaryKey.length === 1 && primary !== undefined && servable(primary)) return primary
  if (table.primaryKey.length > 1) return undefined
  return table.unique
    .map((columns) => (columns.length === 1 ? columns[0] : undefined))
    .find((column): column is string => column !== undefined && isRowKey(table, column) && servable(column))
}

/** Why a table gets no viewset: what its key lacks, and the flag or change that would serve it. */
function unkeyedReason (table: TableCatalog, dialect: DialectName, includeSecrets: boolean): string {
  const [primary] = table.primaryKey
  if (table.primaryKey.length > 1) {
    const unique = table.unique.find((columns) => columns.length === 1 && isRowKey(table, columns[0] ?? ''))?.[0]
    const hint = unique === undefined ? '' : `: --key ${table.name}=${unique} serves it by that unique column`
    return `its primary key (${table.primaryKey.join(', ')}) has more than one column, and a viewset needs a ` +
      `single-column key${hint}`
  }
  const column = table.columns.find((entry) => entry.name === primary)
  if (column !== undefined && mapColumn(dialect, column).kind === 'binary') {
    return `its primary key ${column.name} is binary (${column.declared}), which JSON cannot carry, and no NOT NULL ` +
      'unique column can stand for it'
  }
  if (column !== undefined && !includeSecrets && isSecretColumn(column.name)) {
    return `its primary key ${column.name} looks like a secret: --include-secrets serves it`
  }
  return 'no primary key and no NOT NULL unique column'
}

/** The table with each foreign key once: a schema may declare the same one twice (tt-rss on MariaDB). */
function withDistinctForeignKeys (table: TableCatalog): TableCatalog {
  const seen = new Set<string>()
  const foreignKeys = table.foreignKeys.filter((key) => {
    const signature = JSON.stringify([key.columns, key.table, key.references])
    if (seen.has(signature)) return false
    seen.add(signature)
    return true
  })
  return foreignKeys.length === table.foreignKeys.length ? table : { ...table, foreignKeys }
}

type Skipped = Array<{ table: string; reason: string }>
type Candidate = PlannedRelation & { fallback: string }
type AddRelation = (table: string, relation: Candidate) => void

const withReference = (references: string) => (references === 'id' ? {} : { references })

/** Sorts tables into keyed ones (they get a viewset), pure link tables, and skipped ones (with the reason). */
function classifyTables (
  dialect: DialectName,
  tables: readonly TableCatalog[],
  keys: ReadonlyMap<string, string>,
  includeSecrets: boolean,
  skipped: Skipped
): { keyed: Map<string, string>; links: Map<string, [CatalogForeignKey, CatalogForeignKey]> } {
  const keyed = new Map<string, string>()
  const links = new Map<string, [CatalogForeignKey, CatalogForeignKey]>()
  for (const table of tables) {
    if (table.view) {
      const key = keys.get(table.name)
      if (key === undefined) {
        skipped.push({ table: table.name, reason: `a view: name its key with --key ${table.name}=<column>` })
      } else if (!table.columns.some((column) => column.name === key)) {
        skipped.push({ table: table.name, reason: `--key names "${key}", which is not a column of the view` })
      } else keyed.set(table.name, key)
      continue
    }
    const servable = (name: string) => {
      const column = table.columns.find((entry) => entry.name === name)
      return column !== undefined && mapColumn(dialect, column).kind !== 'binary' &&
        (includeSecrets || !isSecretColumn(name))
    }
    const given = keys.get(table.name)
    const key = given !== undefined && isRowKey(table, given) && servable(given) ? given : keyOf(table, servable)
    const ends = linkEnds(table)
    if (ends !== undefined && key === undefined) links.set(table.name, ends)
    else if (key === undefined) {
      skipped.push({ table: table.name, reason: unkeyedReason(table, dialect, includeSecrets) })
    } else keyed.set(table.name, key)
  }
  return { keyed, links }
}

/** A many-to-one on the table of each single-column foreign key, and the one-to-many back on its target. */
function addForeignKeyRelations (
  tables: readonly TableCatalog[],
  relationTarget: (name: string) => boolean,
  hidden: (table: string, column: string) => boolean,
  add: AddRelation
): void {
  for (const table of tables) {
    if (!relationTarget(table.name)) continue
    for (const foreignKey of table.foreignKeys) {
      const key = single(foreignKey)
      // A relation joins through columns the schemas hold: a secret left out of them joins nothing.
      if (
        key === undefined || !relationTarget(foreignKey.table) ||
        hidden(table.name, key.column) || hidden(foreignKey.table, key.references)
      ) {
        continue
      }
      const fallback = `${key.column}_${foreignKey.table}`
      const name = key.column.endsWith('_id') && key.column.length > 3 ? key.column.slice(0, -3) : fallback
      add(table.name, {
        kind: 'many-to-one',
        name,
        table: foreignKey.table,
        foreignKey: key.column,
        ...withReference(key.references),
        fallback,
      })
      add(foreignKey.table, {
        kind: 'one-to-many',
        name: table.name,
        table: table.name,
        foreignKey: key.column,
        ...withReference(key.references),
        fallback: `${key.column}_${table.name}`,
      })
    }
  }
}

/** A many-to-many on both ends of each usable link table; returns the links used, skips the others. */
function addLinkRelations (
  links: ReadonlyMap<string, [CatalogForeignKey, CatalogForeignKey]>,
  keyed: ReadonlyMap<string, string>,
  relationTarget: (name: string) => boolean,
  add: AddRelation,
  skipped: Skipped
): string[] {
  const usedLinks: string[] = []
  for (const [link, [first, second]] of links) {
    const a = single(first)
    const b = single(second)
    if (a === undefined || b === undefined || !relationTarget(first.table) || !relationTarget(second.table)) {
      skipped.push({ table: link, reason: 'a link table between tables that get no viewset' })
      continue
    }
    // The loader joins through the source's primary key.
    if (keyed.get(first.table) !== a.references || keyed.get(second.table) !== b.references) {
      skipped.push({ table: link, reason: 'a link table that does not reference the keys of its tables' })
      continue
    }
    usedLinks.push(link)
    add(first.table, {
      kind: 'many-to-many',
      name: second.table,
      table: second.table,
      ...withReference(b.references),
      through: { table: link, sourceKey: a.column, targetKey: b.column },
      fallback: `${b.column}_${second.table}`,
    })
    add(second.table, {
      kind: 'many-to-many',
      name: first.table,
      table: first.table,
      ...withReference(a.references),
      through: { table: link, sourceKey: b.column, targetKey: a.column },
      fallback: `${a.column}_${first.table}`,
    })
  }
  return usedLinks
}

/** The keyed tables with their relations, a name that clashes (twice, or with a column) taking its fallback. */
function servedTables (
  tables: readonly TableCatalog[],
  keyed: ReadonlyMap<string, string>,
  relations: ReadonlyMap<string, Candidate[]>
): ServedTable[] {
  const served: ServedTable[] = []
  for (const table of tables) {
    const primaryKey = keyed.get(table.name)
    if (primaryKey === undefined) continue
    const planned = relations.get(table.name) ?? []
    const columns = new Set(table.columns.map((column) => column.name))
    const counts = new Map<string, number>()
    for (const relation of planned) counts.set(relation.name, (counts.get(relation.name) ?? 0) + 1)
    const named = planned.map(({ fallback, ...relation }): PlannedRelation => {
      const clash = (counts.get(relation.name) ?? 0) > 1 || columns.has(relation.name)
      return clash ? { ...relation, name: fallback } : relation
    })
    served.push({ catalog: table, primaryKey, relations: named })
  }
  return served
}

/**
 * Decides which tables get a viewset, which become the `through` of a many-to-many, which are
 * skipped, and names every relation: `author_id` → `author`, `authors.books`, and `<fk column>_<table>`
 * where a name would collide or a foreign key has no `_id` suffix.
 */
export function planGeneration (
  dialect: DialectName,
  catalogTables: readonly TableCatalog[],
  keys: ReadonlyMap<string, string>,
  unreadable: ReadonlyArray<{ readonly table: string; readonly reason: string }> = [],
  { includeSecrets = false, rows = new Map() }: PlanSettings = {}
): GeneratePlan {
  const tables = catalogTables.map(withDistinctForeignKeys)
  const skipped: Skipped = [...unreadable]
  const { keyed, links } = classifyTables(dialect, tables, keys, includeSecrets, skipped)
  const byName = new Map(tables.map((table) => [table.name, table]))
  // Relations join tables that have viewsets; a view joins nothing (it has no foreign keys).
  const relationTarget = (name: string) => keyed.has(name) && byName.get(name)?.view === false
  const relations = new Map<string, Candidate[]>()
  const add: AddRelation = (table, relation) => {
    relations.set(table, [...(relations.get(table) ?? []), relation])
  }
  // Columns the schemas leave out: secrets (unless included) and binary ones, which JSON cannot carry.
  const hidden = (table: string, name: string) => {
    const column = byName.get(table)?.columns.find((entry) => entry.name === name)
    const binary = column !== undefined && mapColumn(dialect, column).kind === 'binary'
    return binary || (!includeSecrets && isSecretColumn(name))
  }
  addForeignKeyRelations(tables, relationTarget, hidden, add)
  const usedLinks = addLinkRelations(links, keyed, relationTarget, add, skipped)
  const served = servedTables(tables, keyed, relations)
  const identifiers = tableIdentifiers(tables.map((table) => table.name))
  const large = new Set(tables.filter((table) => (rows.get(table.name) ?? 0) > largeTableRows).map(({ name }) => name))
  return { dialect, tables, served, links: usedLinks, skipped, identifiers, includeSecrets, large }
}
