import { sql } from 'kysely'
import type { CatalogColumn, CatalogDatabase, CatalogReader, CatalogRelation } from '../shared/catalog.js'
import { checkInList } from '../shared/catalog.js'

interface ColumnRow {
  name: string
  type: string
  declared: string
  kind: string
  notnull: boolean
  default: string | null
  identity: string
  generated: string
  typmod: number
  labels: string[] | null
}

/** A relation name as SQL text, each part quoted, for `to_regclass`: `schema.table` stays two parts. */
function regclassName (table: string): string {
  return table.split('.').map((part) => `"${part.replaceAll('"', '""')}"`).join('.')
}

interface ConstraintRow {
  kind: string
  columns: string[]
  target: string | null
  references: string[] | null
  definition: string
}

/** The `col IN (...)` lists of single-column CHECK constraints, by column. */
function checkLists (constraints: readonly ConstraintRow[]): Map<string, string[]> {
  const lists = new Map<string, string[]>()
  for (const check of constraints) {
    const [column] = check.columns
    if (check.kind !== 'c' || check.columns.length !== 1 || column === undefined) continue
    const values = checkInList(check.definition.replace(/^check\s*/i, ''), column)
    if (values !== undefined) lists.set(column, values)
  }
  return lists
}

/** One column as the catalog describes it. */
function catalogColumn (column: ColumnRow, lists: ReadonlyMap<string, string[]>): CatalogColumn {
  const lengthType = column.type === 'varchar' || column.type === 'bpchar'
  return {
    name: column.name,
    type: column.kind === 'e' ? 'enum' : column.type,
    declared: column.declared,
    nullable: !column.notnull,
    default: column.default ?? undefined,
    generated: column.generated !== '',
    autoIncrement: column.identity !== '' || /^nextval\(/.test(column.default ?? ''),
    maxLength: lengthType && column.typmod > 4 ? column.typmod - 4 : undefined,
    enumValues: column.labels ?? lists.get(column.name),
    json: false,
  }
}

/** An index of the table: its columns, and the predicate of a partial one (`null` for a full index). */
interface IndexRow { primary: boolean, unique: boolean, plain: boolean, predicate: string | null, columns: string[] }

/** Whether a foreign key to the table deletes or sets rows (CASCADE, SET NULL, SET DEFAULT), or no index serves it. */
async function deleteCascades (db: CatalogDatabase, oid: string): Promise<boolean> {
  const { rows: [deletes] } = await sql<{ cascades: boolean }>`
    select exists (
      select 1 from pg_catalog.pg_constraint k
      where k.confrelid = ${oid}::int8::oid and k.contype = 'f' and (k.confdeltype in ('c', 'n', 'd') or not exists (
        select 1 from pg_catalog.pg_index i
        where i.indrelid = k.conrelid and i.indpred is null and i.indexprs is null and k.conkey <@ array(
          select u.attnum from unnest(i.indkey::int2[]) with ordinality u(attnum, n)
          where u.n <= cardinality(k.conkey))))
    ) as cascades`.execute(db)
  return deletes?.cascades ?? true
}

/** PostgreSQL's catalog: `pg_catalog`, one relation at a time, resolved through search_path like the queries are. */
export const postgresCatalog: CatalogReader = {
  async table (db, name) {
    const { rows: [relation] } = await sql<{ oid: string, kind: string }>`
      select c.oid::int8::text as oid, c.relkind as kind from pg_catalog.pg_class c
      where c.oid = to_regclass(${regclassName(name)}) and c.relkind in ('r', 'p', 'v', 'm', 'f')`.execute(db)
    if (relation === undefined) return undefined
    const oid = relation.oid
    const { rows: columns } = await sql<ColumnRow>`
      select a.attname as name, t.typname as type, lower(format_type(a.atttypid, a.atttypmod)) as declared,
        t.typtype as kind,
        a.attnotnull as notnull, pg_get_expr(d.adbin, d.adrelid) as default, a.attidentity as identity,
        a.attgenerated as generated, a.atttypmod as typmod,
        case when t.typtype = 'e' then array(
          select e.enumlabel::text from pg_catalog.pg_enum e where e.enumtypid = t.oid order by e.enumsortorder
        ) end as labels
      from pg_catalog.pg_attribute a
      join pg_catalog.pg_type t on t.oid = a.atttypid
      left join pg_catalog.pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where a.attrelid = ${oid}::int8::oid and a.attnum > 0 and not a.attisdropped
      order by a.attnum`.execute(db)
    const { rows: indexRows } = await sql<IndexRow>`
      select i.indisprimary as primary, i.indisunique as unique,
        (i.indpred is null and i.indexprs is null and am.amname = 'btree') as plain,
        case when i.indexprs is null and am.amname = 'btree' then pg_get_expr(i.indpred, i.indrelid) end as predicate,
        array(select a.attname::text from unnest(i.indkey::int2[]) with ordinality k(attnum, n)
              join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
              where k.n <= i.indnkeyatts order by k.n) as columns
      from pg_catalog.pg_index i join pg_catalog.pg_class c on c.oid = i.indexrelid
      join pg_catalog.pg_am am on am.oid = c.relam
      where i.indrelid = ${oid}::int8::oid order by c.relname`.execute(db)
    const { rows: constraints } = await sql<ConstraintRow>`
      select k.contype as kind,
        array(select a.attname::text from unnest(k.conkey) with ordinality u(attnum, n)
              join pg_catalog.pg_attribute a on a.attrelid = k.conrelid and a.attnum = u.attnum
              order by u.n) as columns,
        k.confrelid::regclass::text as target,
        array(select a.attname::text from unnest(k.confkey) with ordinality u(attnum, n)
              join pg_catalog.pg_attribute a on a.attrelid = k.confrelid and a.attnum = u.attnum
              order by u.n) as references,
        pg_get_constraintdef(k.oid) as definition
      from pg_catalog.pg_constraint k
      where k.conrelid = ${oid}::int8::oid and k.contype in ('f', 'c') order by k.conname`.execute(db)
    const lists = checkLists(constraints)
    const plain = indexRows.filter((index) => index.plain)
    return {
      name,
      view: relation.kind === 'v' || relation.kind === 'm',
      columns: columns.map((column) => catalogColumn(column, lists)),
      primaryKey: indexRows.find((index) => index.primary)?.columns ?? [],
      unique: plain.filter((index) => index.unique && !index.primary).map((index) => index.columns),
      partialUnique: indexRows.flatMap(({ unique, columns, predicate }) =>
        unique && predicate !== null ? [{ columns, predicate }] : []),
      indexes: plain.map((index) => index.columns),
      foreignKeys: constraints.filter((key) => key.kind === 'f').map((key) => ({
        columns: key.columns,
        table: key.target ?? '',
        references: key.references ?? [],
      })),
      deleteCascades: await deleteCascades(db, oid),
    }
  },

  async relations (db) {
    const { rows } = await sql<{ name: string, kind: string }>`
      select c.relname as name, c.relkind as kind from pg_catalog.pg_class c
      where c.relnamespace = (select n.oid from pg_catalog.pg_namespace n where n.nspname = current_schema())
        and c.relkind in ('r', 'p', 'v', 'm', 'f') and not c.relispartition
      order by c.relname`.execute(db)
    return rows.map((row): CatalogRelation => ({ name: row.name, view: row.kind === 'v' || row.kind === 'm' }))
  },
}
