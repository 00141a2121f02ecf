import { sql } from 'kysely'
import type { RawBuilder } from 'kysely'
import type { CatalogDatabase } from '../shared/catalog.js'
import type { DialectFullText, FullTextIndex } from '../shared/full-text-index.js'

// `?q=` on MySQL and MariaDB: a FULLTEXT index over exactly the fields, queried with MATCH … AGAINST in boolean mode,
// each word required (`+word`; words are letters and digits, so no operator reaches the parser).

/** `MATCH (f1, f2) AGAINST (? IN BOOLEAN MODE)`: the relevance, 0 for a row that lacks a word. */
function match ({ table, fields }: FullTextIndex, text: string): RawBuilder<number> {
  const columns = sql.join(fields.map((field) => sql.ref(`${table}.${field}`)))
  return sql<number>`match (${columns}) against (${text} in boolean mode)`
}

/** An identifier in the migration's SQL. */
function id (name: string): string {
  return `\`${name.replaceAll('`', '``')}\``
}

/** The columns of each FULLTEXT index of the table, by index. */
async function fullTextIndexes (db: CatalogDatabase, table: string): Promise<string[][]> {
  const { rows } = await sql<{ idx: string, col: string }>`
    select index_name as idx, column_name as col from information_schema.statistics
    where table_schema = database() and table_name = ${table} and index_type = 'FULLTEXT'
    order by index_name, seq_in_index`.execute(db)
  const indexes = new Map<string, string[]>()
  for (const row of rows) indexes.set(row.idx, [...(indexes.get(row.idx) ?? []), row.col])
  return [...indexes.values()]
}

/** MySQL's and MariaDB's full-text search (FULLTEXT, boolean mode). */
export const mysqlFullText: DialectFullText = {
  // MATCH weighs each word by how many rows of the whole index hold it.
  rankIsolated: false,
  // MATCH reads the FULLTEXT index of the rows as they are now, not a stored version.
  matchIsolated: false,
  text: (words) => words.map((word) => `+${word}`).join(' '),
  matches: (index, text) => sql<boolean>`${match(index, text)}`,
  relevance: (index, text) => match(index, text),
  async problem (db, index) {
    const wanted = [...index.fields].sort().join(',')
    const indexes = await fullTextIndexes(db, index.table)
    if (indexes.some((columns) => [...columns].sort().join(',') === wanted)) return undefined
    return `MySQL has no FULLTEXT index over exactly (${index.fields.join(', ')}) of "${index.table}"`
  },
  // An index name is at most 64 characters: a long table's is cut (it only has to be unique on its table).
  migration: ({ table, fields }) =>
    `CREATE FULLTEXT INDEX ${id([...`${table}_fts`].slice(0, 64).join(''))} ON ${id(table)} (${
      fields.map(id).join(', ')});`,
}
