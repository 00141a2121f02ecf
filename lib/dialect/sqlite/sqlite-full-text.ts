import { sql } from 'kysely'
import type { CatalogDatabase } from '../shared/catalog.js'
import type { DialectFullText, FullTextIndex } from '../shared/full-text-index.js'

// `?q=` on SQLite: an external-content FTS5 table over the fields (content = the table, content_rowid = its integer
// key), kept in sync by triggers the user's migration creates; each word quoted, so user input is never FTS syntax.

interface SchemaRow { type: string, name: string, sql: string | null }

/** A word as an FTS5 string: quoted, a quote doubled (words are letters and digits, so none has one). */
function quoted (word: string): string {
  return `"${word.replaceAll('"', '""')}"`
}

/** An identifier in the migration's SQL. */
function id (name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/** A string in the migration's SQL (FTS5 reads its options' values as SQL strings). */
function text (value: string): string {
  return `'${value.replaceAll("'", "''")}'`
}

/** `sql` without its quotes, spaces and case: what the checks compare. */
function squeezed (text: string | null): string {
  return (text ?? '').toLowerCase().replace(/[\s"'`[\]]/g, '')
}

/** Why the FTS5 table is not the external-content table of these fields, or `undefined`. */
async function tableProblem (db: CatalogDatabase, index: FullTextIndex, found: SchemaRow | undefined) {
  const { ftsTable, table, key, fields } = index
  if (found === undefined) return `SQLite has no FTS5 table "${ftsTable}"`
  const text = squeezed(found.sql)
  // Squeezed as the stored text is, so that a name holding a quote or a space compares as the migration wrote it.
  const content = squeezed(`content=${table}`)
  const rowid = squeezed(`content_rowid=${key}`)
  if (!text.includes('usingfts5(') || !text.includes(content) || !text.includes(rowid)) {
    return `"${ftsTable}" is not an FTS5 table with content='${table}' and content_rowid='${key}'`
  }
  const { rows } = await sql<{ name: string }>`select name from pragma_table_info(${ftsTable})`.execute(db)
  const columns = rows.map((row) => row.name).sort()
  if (columns.join(',') !== [...fields].sort().join(',')) {
    return `"${ftsTable}" indexes ${columns.join(', ')}, not the fullText fields ${fields.join(', ')}`
  }
  const { rows: keyType } = await sql<{ type: string }>`
    select type from pragma_table_info(${table}) where name = ${key}`.execute(db)
  if (!/int/i.test(keyType[0]?.type ?? '')) return `the key "${key}" of "${table}" is no INTEGER column (an FTS5 rowid)`
  return undefined
}

/** SQLite's full-text search (FTS5). */
export const sqliteFullText: DialectFullText = {
  // bm25 weighs each word by how many rows of the whole FTS table hold it.
  rankIsolated: false,
  // The FTS5 table holds the rows as they are now, not a stored version.
  matchIsolated: false,
  text: (words) => words.map(quoted).join(' '),
  matches: ({ table, key, ftsTable }, text) =>
    sql<boolean>`${sql.ref(`${table}.${key}`)} in (select rowid from ${sql.table(ftsTable)} where ${
      sql.table(ftsTable)} match ${text})`,
  // bm25 is smaller for a better match: negated, larger is more relevant, as on the other databases. Each bm25 reads
  // its words' whole doclists: the ranks are read once per statement, into a subquery SQLite materializes and indexes
  // (`limit -1` keeps it from being flattened), not once per row (quadratic: 232 ms against 10 ms for 677 matches of
  // 100,000 rows: benchmarks/analysis.md, "Full-text relevance").
  relevance: ({ table, key, ftsTable }, text) => {
    const fts = sql.table(ftsTable)
    return sql<number>`(select s from (select rowid as r, -bm25(${fts}) as s from ${fts} where ${fts} match ${
      text} limit -1) where r = ${sql.ref(`${table}.${key}`)})`
  },
  async problem (db, index) {
    const { rows } = await sql<SchemaRow>`
      select type, name, sql from sqlite_schema
      where (name = ${index.ftsTable} and type = 'table') or (type = 'trigger' and tbl_name = ${index.table})`
      .execute(db)
    const problem = await tableProblem(db, index, rows.find((row) => row.type === 'table'))
    if (problem !== undefined) return problem
    const fts = squeezed(index.ftsTable)
    for (const event of ['insert', 'update', 'delete']) {
      const kept = rows.some((row) => {
        const text = squeezed(row.sql)
        return row.type === 'trigger' && text.includes(`after${event}on`) && text.includes(`into${fts}(`)
      })
      const writes = `writes "${index.ftsTable}"`
      if (!kept) return `SQLite has no trigger AFTER ${event.toUpperCase()} ON "${index.table}" that ${writes}`
    }
    return undefined
  },
  migration ({ table, key, fields, ftsTable }) {
    const columns = fields.map(id).join(', ')
    const values = (row: string) => fields.map((field) => `${row}.${id(field)}`).join(', ')
    const fts = id(ftsTable)
    const remove = `INSERT INTO ${fts}(${fts}, rowid, ${columns}) VALUES ('delete', old.${id(key)}, ${values('old')});`
    const add = `INSERT INTO ${fts}(rowid, ${columns}) VALUES (new.${id(key)}, ${values('new')});`
    const trigger = (event: string, body: string) =>
      `CREATE TRIGGER ${id(`${ftsTable}_${event.toLowerCase()}`)} AFTER ${event} ON ${id(table)} BEGIN ${body} END;`
    return [
      `CREATE VIRTUAL TABLE ${fts} USING fts5(${columns}, content=${text(table)}, content_rowid=${text(key)});`,
      trigger('INSERT', add),
      trigger('DELETE', remove),
      trigger('UPDATE', `${remove} ${add}`),
      `INSERT INTO ${fts}(${fts}) VALUES ('rebuild');`,
    ].join('\n')
  },
}
