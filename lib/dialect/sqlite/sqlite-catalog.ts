import { sql } from 'kysely'
import type {
  CatalogColumn,
  CatalogDatabase,
  CatalogForeignKey,
  CatalogReader,
  CatalogRelation,
  TableCatalog,
} from '../shared/catalog.js'

interface XColumn {
  cid: number
  name: string
  type: string
  notnull: number
  dflt_value: string | null
  pk: number
  hidden: number
}
interface IndexRow {
  name: string
  unique: number
  origin: string
  partial: number
}
interface ForeignKeyRow {
  id: number
  seq: number
  table: string
  from: string
  to: string | null
}

// CHECK ("status" IN ('a', 'b')) as written in the CREATE TABLE text: SQLite keeps no parsed form.
const checkIn = /check\s*\(\s*["`[]?(\w+)["`\]]?\s+in\s*\(([^)]*)\)\s*\)/gi

function checkLists (createSql: string): Map<string, string[]> {
  const lists = new Map<string, string[]>()
  for (const match of createSql.matchAll(checkIn)) {
    const values = [...(match[2] ?? '').matchAll(/'((?:[^']|'')*)'/g)].map((value) =>
      (value[1] ?? '').replaceAll("''", "'")
    )
    if (match[1] !== undefined && values.length > 0) lists.set(match[1], values)
  }
  return lists
}

/** The column that is the table's rowid under another name: an INTEGER PRIMARY KEY (ascending) of a rowid table. */
function rowidAlias (create: string, columns: readonly XColumn[], primaryKey: readonly string[]): string | undefined {
  const [key, ...more] = primaryKey
  if (key === undefined || more.length > 0 || /without\s+rowid|primary\s+key\s+desc/i.test(create)) return undefined
  return columns.find((column) => column.name === key)?.type.toUpperCase() === 'INTEGER' ? key : undefined
}

/** SQLite's catalog: `sqlite_schema` and the table-valued pragmas, which take the table as a parameter. */
export const sqliteCatalog: CatalogReader = {
  async table (db, name) {
    const {
      rows: [relation],
    } = await sql<{ type: string; sql: string | null }>`
      select type, sql from sqlite_schema where name = ${name} and type in ('table', 'view')`.execute(db)
    if (relation === undefined) return undefined
    const { rows: columns } = await sql<XColumn>`select * from pragma_table_xinfo(${name}) order by cid`.execute(db)
    const primaryKey = columns
      .filter((column) => column.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((column) => column.name)
    const lists = checkLists(relation.sql ?? '')
    const { unique, indexes: declared, partialUnique } = await indexesOf(db, name)
    // An INTEGER PRIMARY KEY is the rowid: SQLite numbers it when it is omitted.
    const rowid = primaryKey.length === 1 ? primaryKey[0] : undefined
    // Each index entry of a rowid table ends with the row's rowid, so an index on (author_id) reads one author's rows
    // in key order when the key is the rowid, as one on (author_id, id) would (a relation's per-parent LIMIT).
    const alias = rowidAlias(relation.sql ?? '', columns, primaryKey)
    const indexes = declared.map((index) => alias === undefined || index.includes(alias) ? index : [...index, alias])
    if (rowid !== undefined && !indexes.some((index) => index.length === 1 && index[0] === rowid)) indexes.push([rowid])
    return {
      name,
      view: relation.type === 'view',
      columns: columns.map((column) => catalogColumn(column, rowid, lists)),
      primaryKey,
      unique,
      partialUnique,
      indexes,
      foreignKeys: await foreignKeysOf(db, name),
    } satisfies TableCatalog
  },

  async relations (db) {
    // pragma_table_list tells an FTS5 index (a virtual table) and the shadow tables that hold it from the app's own
    // tables: they are the full-text search's storage (README "Full-text search"), no resources.
    const { rows } = await sql<{ name: string; type: string }>`
      select name, type from pragma_table_list
      where schema = 'main' and type in ('table', 'view') and name not like 'sqlite!_%' escape '!'
      order by name`.execute(db)
    return rows.map((row): CatalogRelation => ({ name: row.name, view: row.type === 'view' }))
  },
}

async function primaryKeyOf (db: CatalogDatabase, table: string): Promise<string[]> {
  const { rows } = await sql<{
    name: string
    pk: number
  }>`select name, pk from pragma_table_info(${table}) where pk > 0 order by pk`.execute(db)
  return rows.map((row) => row.name)
}

/** The predicate of a partial index: the text after the last WHERE of its CREATE INDEX. */
async function predicateOf (db: CatalogDatabase, index: string): Promise<string> {
  const { rows } = await sql<{ sql: string | null }>`
    select sql from sqlite_schema where type = 'index' and name = ${index}`.execute(db)
  const text = rows[0]?.sql ?? ''
  const at = text.toLowerCase().lastIndexOf(' where ')
  return at === -1 ? '' : text.slice(at + ' where '.length)
}

/** The table's full, column-only indexes, and which of them are unique constraints (not the primary key). */
async function indexesOf (db: CatalogDatabase, name: string): Promise<{
  unique: string[][], indexes: string[][], partialUnique: Array<{ columns: string[], predicate: string }>
}> {
  const { rows: indexRows } =
    await sql<IndexRow>`select name, "unique", origin, partial from pragma_index_list(${name}) order by name`.execute(
      db
    )
  const unique: string[][] = []
  const indexes: string[][] = []
  const partialUnique: Array<{ columns: string[], predicate: string }> = []
  for (const index of indexRows) {
    const { rows: parts } = await sql<{
      cid: number
      name: string | null
    }>`select cid, name from pragma_index_info(${index.name}) order by seqno`.execute(db)
    // cid -2 is an expression: such an index says nothing about a column.
    if (parts.some((part) => part.cid < 0 || part.name === null)) continue
    const names = parts.map((part) => part.name ?? '')
    if (index.partial !== 0) {
      if (index.unique !== 0) partialUnique.push({ columns: names, predicate: await predicateOf(db, index.name) })
      continue
    }
    indexes.push(names)
    if (index.unique !== 0 && index.origin !== 'pk') unique.push(names)
  }
  return { unique, indexes, partialUnique }
}

/** The table's foreign keys, one per constraint; an implicit reference names the target's primary key. */
async function foreignKeysOf (db: CatalogDatabase, name: string): Promise<CatalogForeignKey[]> {
  const { rows: keyRows } = await sql<ForeignKeyRow>`
    select id, seq, "table", "from", "to" from pragma_foreign_key_list(${name}) order by id, seq`.execute(db)
  const foreignKeys: CatalogForeignKey[] = []
  if (keyRows.length === 0) return foreignKeys
  const { rows: [setting] } = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db)
  const enforced = setting?.foreign_keys === 1
  const byId = new Map<number, ForeignKeyRow[]>()
  for (const row of keyRows) byId.set(row.id, [...(byId.get(row.id) ?? []), row])
  for (const rows of byId.values()) {
    const target = rows[0]?.table ?? ''
    // `to` is null when the key references the target's primary key implicitly.
    const implicit = rows.some((row) => row.to === null)
    const references = implicit ? await primaryKeyOf(db, target) : rows.map((row) => row.to ?? '')
    foreignKeys.push({ columns: rows.map((row) => row.from), table: target, references, enforced })
  }
  return foreignKeys
}

/** One column as the catalog describes it; `rowid` is the INTEGER PRIMARY KEY column, if any. */
function catalogColumn (
  column: XColumn,
  rowid: string | undefined,
  lists: ReadonlyMap<string, string[]>
): CatalogColumn {
  const declared = column.type.toLowerCase()
  const type = declared.replace(/\s*\(.*$/, '').trim()
  const length = /^(?:var)?char(?:acter)?(?: varying)?\s*\((\d+)\)/.exec(declared)?.[1]
  return {
    name: column.name,
    type,
    declared,
    nullable: column.notnull === 0 && !(column.pk > 0 && column.name === rowid && type === 'integer'),
    default: column.dflt_value ?? undefined,
    generated: column.hidden === 2 || column.hidden === 3,
    autoIncrement: column.name === rowid && type === 'integer',
    maxLength: length === undefined ? undefined : Number(length),
    enumValues: lists.get(column.name),
    json: false,
  }
}
