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
  /** The key's first column: the whole key unless it is composite. */
  readonly primaryKey: string
  /** The key's columns in key order: several for a composite key (a link table's two foreign keys). */
  readonly key: readonly string[]
  readonly relations: readonly PlannedRelation[]
}

/** What the command writes: every table in db.ts and schemas.ts, and viewsets for the served ones. */
export interface GeneratePlan {
  readonly dialect: DialectName
  /** Every chosen table and view, by name. */
  readonly tables: readonly TableCatalog[]
  readonly served: readonly ServedTable[]
  /** Pure link tables: the `through` of a many-to-many, served by their composite key (without relations). */
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

/** The key of a table that JSON can carry: its primary key (single or composite), else a NOT NULL unique column. */
function keyOf (table: TableCatalog, servable: (column: string) => boolean): readonly string[] | undefined {
  if (table.primaryKey.length > 0 && table.primaryKey.every(servable)) return table.primaryKey
  const unique = table.unique
    .map((columns) => (columns.length === 1 ? columns[0] : undefined))
    .find((column): column is string => column !== undefined && isRowKey(table, column) && servable(column))
  return unique === undefined ? undefined : [unique]
}

/** Why a table gets no viewset: what its key lacks, and the flag or change that would serve it. */
function unkeyedReason (table: TableCatalog, dialect: DialectName, includeSecrets: boolean): string {
  const [primary] = table.primaryKey
  if (table.primaryKey.length > 1) {
    return `its primary key (${table.primaryKey.join(', ')}) has a column JSON cannot carry (binary) or that looks ` +
      'like a secret (--include-secrets serves it)'
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
): { keyed: Map<string, readonly string[]>; links: Map<string, [CatalogForeignKey, CatalogForeignKey]> } {
  const keyed = new Map<string, readonly string[]>()
  const links = new Map<string, [CatalogForeignKey, CatalogForeignKey]>()
  for (const table of tables) {
    if (table.view) {
      const key = keys.get(table.name)
      if (key === undefined) {
        skipped.push({ table: table.name, reason: `a view: name its key with --key ${table.name}=<column>` })
      } else if (!table.columns.some((column) => column.name === key)) {
        skipped.push({ table: table.name, reason: `--key names "${key}", which is not a column of the view` })
      } else keyed.set(table.name, [key])
      continue
    }
    const servable = (name: string) => {
      const column = table.columns.find((entry) => entry.name === name)
      return column !== undefined && mapColumn(dialect, column).kind !== 'binary' &&
        (includeSecrets || !isSecretColumn(name))
    }
    const given = keys.get(table.name)
    const key = given !== undefined && isRowKey(table, given) && servable(given) ? [given] : keyOf(table, servable)
    const ends = linkEnds(table)
    // A link table is the `through` of a many-to-many, and a resource of its own by its composite key.
    if (ends !== undefined) links.set(table.name, ends)
    if (key !== undefined) keyed.set(table.name, key)
    else if (ends === undefined) {
      skipped.push({ table: table.name, reason: unkeyedReason(table, dialect, includeSecrets) })
    }
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
  keyed: ReadonlyMap<string, readonly string[]>,
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
    const keyIs = (table: string, column: string) => keyed.get(table)?.join(',') === column
    if (!keyIs(first.table, a.references) || !keyIs(second.table, b.references)) {
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
  keyed: ReadonlyMap<string, readonly string[]>,
  relations: ReadonlyMap<string, Candidate[]>
): ServedTable[] {
  const served: ServedTable[] = []
  for (const table of tables) {
    const key = keyed.get(table.name)
    const primaryKey = key?.[0]
    if (key === undefined || primaryKey === undefined) continue
    const planned = relations.get(table.name) ?? []
    const columns = new Set(table.columns.map((column) => column.name))
    const counts = new Map<string, number>()
    for (const relation of planned) counts.set(relation.name, (counts.get(relation.name) ?? 0) + 1)
    const named = planned.map(({ fallback, ...relation }): PlannedRelation => {
      const clash = (counts.get(relation.name) ?? 0) > 1 || columns.has(relation.name)
      return clash ? { ...relation, name: fallback } : relation
    })
    served.push({ catalog: table, primaryKey, key, relations: named })
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
  // A link table joins as a `through`, not by relations of its own: the tables it links keep theirs.
  const relationTarget = (name: string) => keyed.has(name) && byName.get(name)?.view === false && !links.has(name)
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
