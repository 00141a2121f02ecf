import { sql } from 'kysely'
import type { CatalogColumn, CatalogForeignKey, CatalogReader, CatalogRelation } from '../shared/catalog.js'
import { checkInList } from '../shared/catalog.js'

interface ColumnRow {
  name: string
  type: string
  declared: string
  nullable: string
  dflt: string | null
  extra: string
  generation: string | null
  length: number | string | null
}

/** `enum('a','it''s')` → `['a', "it's"]`. */
function enumLabels (declared: string): string[] | undefined {
  if (!/^enum\(/i.test(declared)) return undefined
  return [...declared.matchAll(/'((?:[^']|'')*)'/g)].map((match) => (match[1] ?? '').replaceAll("''", "'"))
}

interface IndexRow { idx: string, is_unique: number | string, col: string | null, kind: string }
interface KeyRow { fk: string, col: string, target: string, reference: string }
interface Index { unique: boolean, columns: string[], expression: boolean }

/**
 * The table's indexes by name, from `information_schema.statistics` (a NULL column is an expression; a FULLTEXT or
 * SPATIAL index orders nothing and is kept out like one).
 */
function indexesOf (statistics: readonly IndexRow[]): Map<string, Index> {
  const indexes = new Map<string, Index>()
  for (const row of statistics) {
    const index = indexes.get(row.idx) ?? { unique: Number(row.is_unique) === 1, columns: [], expression: false }
    if (row.col === null || row.kind === 'FULLTEXT' || row.kind === 'SPATIAL') index.expression = true
    else index.columns.push(row.col)
    indexes.set(row.idx, index)
  }
  return indexes
}

/** The foreign keys, one per constraint, from `information_schema.key_column_usage`. */
function foreignKeysOf (keys: readonly KeyRow[]): CatalogForeignKey[] {
  const byConstraint = new Map<string, KeyRow[]>()
  for (const key of keys) byConstraint.set(key.fk, [...(byConstraint.get(key.fk) ?? []), key])
  return [...byConstraint.values()].map((rows) => ({
    columns: rows.map((row) => row.col),
    table: rows[0]?.target ?? '',
    references: rows.map((row) => row.reference),
  }))
}

/** What CHECK constraints say of columns: `json_valid(col)` (MariaDB's JSON) and `col IN (...)` lists. */
function checkedColumns (
  checks: ReadonlyArray<{ clause: string }>,
  columns: readonly ColumnRow[]
): { json: Set<string>, lists: Map<string, string[]> } {
  const json = new Set<string>()
  const lists = new Map<string, string[]>()
  for (const { clause } of checks) {
    const validated = /^json_valid\(`([^`]+)`\)$/i.exec(clause.trim())?.[1]
    if (validated !== undefined) json.add(validated)
    for (const column of columns) {
      const values = checkInList(clause, column.name)
      if (values !== undefined) lists.set(column.name, values)
    }
  }
  return { json, lists }
}

/** One column as the catalog describes it. */
function catalogColumn (
  column: ColumnRow,
  json: ReadonlySet<string>,
  lists: ReadonlyMap<string, string[]>
): CatalogColumn {
  const declared = column.declared.toLowerCase()
  // MariaDB prints a missing default as the text NULL, and a string default quoted.
  const missing = column.dflt === null || (column.dflt === 'NULL' && column.nullable === 'YES')
  return {
    name: column.name,
    type: column.type,
    declared,
    nullable: column.nullable === 'YES',
    default: missing ? undefined : column.dflt ?? undefined,
    generated: column.generation !== null && column.generation !== '',
    autoIncrement: /auto_increment/i.test(column.extra),
    maxLength:
      (column.type === 'varchar' || column.type === 'char') && column.length !== null
        ? Number(column.length)
        : undefined,
    enumValues: enumLabels(declared) ?? lists.get(column.name),
    json: column.type === 'json' || json.has(column.name),
  }
}

/** MySQL's and MariaDB's catalog: `information_schema` of the current database. */
export const mysqlCatalog: CatalogReader = {
  async table (db, name) {
    const { rows: [relation] } = await sql<{ kind: string }>`
      select table_type as kind from information_schema.tables
      where table_schema = database() and table_name = ${name}`.execute(db)
    if (relation === undefined) return undefined
    const { rows: columns } = await sql<ColumnRow>`
      select column_name as name, lower(data_type) as type, column_type as declared, is_nullable as nullable,
        column_default as dflt, extra, generation_expression as generation, character_maximum_length as length
      from information_schema.columns where table_schema = database() and table_name = ${name}
      order by ordinal_position`.execute(db)
    const { rows: statistics } = await sql<IndexRow>`
      select index_name as idx, non_unique = 0 as is_unique, column_name as col, index_type as kind
      from information_schema.statistics
      where table_schema = database() and table_name = ${name} order by index_name, seq_in_index`.execute(db)
    const { rows: keys } = await sql<KeyRow>`
      select constraint_name as fk, column_name as col, referenced_table_name as target,
        referenced_column_name as reference
      from information_schema.key_column_usage
      where table_schema = database() and table_name = ${name} and referenced_table_name is not null
        and referenced_table_schema = database()
      order by constraint_name, ordinal_position`.execute(db)
    // MariaDB and MySQL ≥ 8.0.16 list CHECK constraints; MariaDB's JSON is a LONGTEXT checked by json_valid().
    const { rows: checks } = await sql<{ clause: string }>`
      select c.check_clause as clause from information_schema.table_constraints t
      join information_schema.check_constraints c
        on c.constraint_schema = t.constraint_schema and c.constraint_name = t.constraint_name
      where t.table_schema = database() and t.table_name = ${name} and t.constraint_type = 'CHECK'
      order by t.constraint_name`.execute(db).catch(() => ({ rows: [] }))

    // InnoDB indexes every foreign key: only what one does on delete makes a DELETE reach other rows.
    const { rows: [deletes] } = await sql<{ cascading: number | string }>`
      select count(*) as cascading from information_schema.referential_constraints
      where constraint_schema = database() and referenced_table_name = ${name}
        and delete_rule not in ('RESTRICT', 'NO ACTION')`.execute(db)
    const indexes = indexesOf(statistics)
    const plain = [...indexes.entries()].filter(([, index]) => !index.expression)
    const { json, lists } = checkedColumns(checks, columns)
    return {
      name,
      view: relation.kind === 'VIEW',
      columns: columns.map((column) => catalogColumn(column, json, lists)),
      primaryKey: indexes.get('PRIMARY')?.columns ?? [],
      unique: plain.filter(([index, entry]) => entry.unique && index !== 'PRIMARY').map(([, entry]) => entry.columns),
      indexes: plain.map(([, entry]) => entry.columns),
      foreignKeys: foreignKeysOf(keys),
      deleteCascades: Number(deletes?.cascading ?? 1) > 0,
    }
  },

  async relations (db) {
    const { rows } = await sql<{ name: string, kind: string }>`
      select table_name as name, table_type as kind from information_schema.tables
      where table_schema = database() and table_type in ('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED')
      order by table_name`.execute(db)
    return rows.map((row): CatalogRelation => ({ name: row.name, view: row.kind === 'VIEW' }))
  },
}
