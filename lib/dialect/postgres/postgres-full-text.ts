import { sql } from 'kysely'
import type { RawBuilder } from 'kysely'
import type { CatalogDatabase } from '../shared/catalog.js'
import type { DialectFullText, FullTextIndex } from '../shared/full-text-index.js'

// `?q=` on PostgreSQL: a GIN index on exactly the expression the statements write,
// to_tsvector('<language>', coalesce(f1, '') || ' ' || coalesce(f2, '') …), queried with websearch_to_tsquery.

/** The document of a row: its fields joined, a NULL one as empty text; the language written as the index has it. */
function vector ({ table, fields, language }: FullTextIndex): RawBuilder<unknown> {
  const joined = sql.join(fields.map((field) => sql`coalesce(${sql.ref(`${table}.${field}`)}, '')`), sql` || ' ' || `)
  return sql`to_tsvector(${sql.lit(language)}, ${joined})`
}

/** The query of `text`: every quoted word required (websearch_to_tsquery reads `or` and `-` only outside quotes). */
function query ({ language }: FullTextIndex, text: string): RawBuilder<unknown> {
  return sql`websearch_to_tsquery(${sql.lit(language)}, ${text})`
}

/** An identifier in the migration's SQL. */
function id (name: string): string {
  return name.split('.').map((part) => `"${part.replaceAll('"', '""')}"`).join('.')
}

/** Whether PostgreSQL's plan reads the matching rows through an index (sequential scans off, so any index shows). */
async function indexServes (db: CatalogDatabase, index: FullTextIndex): Promise<boolean> {
  return await db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx)
    const { rows } = await sql<Record<string, unknown>>`explain select 1 from ${sql.table(index.table)} where ${
      postgresFullText.matches(index, 'word')}`.execute(trx)
    return rows.some((row) => Object.values(row).some((line) => typeof line === 'string' && /Index/.test(line)))
  })
}

/** PostgreSQL's full-text search (tsvector, GIN). */
export const postgresFullText: DialectFullText = {
  // ts_rank reads the row alone: other rows never move it.
  rankIsolated: true,
  // to_tsvector reads the row's columns: a stored version matches as the row did.
  matchIsolated: true,
  text: (words) => words.map((word) => `"${word}"`).join(' '),
  matches: (index, text) => sql<boolean>`${vector(index)} @@ ${query(index, text)}`,
  // ts_rank is a float4: as float8, the number a cursor carries compares equal to it again.
  relevance: (index, text) => sql<number>`ts_rank(${vector(index)}, ${query(index, text)})::float8`,
  async problem (db, index) {
    try {
      if (await indexServes(db, index)) return undefined
    } catch (error) {
      // An unknown text search configuration, say: the database's words (no value of a user's in them).
      return `PostgreSQL cannot search "${index.table}": ${error instanceof Error ? error.message : String(error)}`
    }
    return `PostgreSQL has no GIN index on ${expression(index)} of "${index.table}"`
  },
  migration: (index) => `CREATE INDEX ${id(`${index.table.split('.').pop() ?? index.table}_fts`)} ON ${
    id(index.table)} USING GIN (${expression(index)});`,
}

/** The indexed expression as the migration writes it. */
function expression ({ fields, language }: FullTextIndex): string {
  const joined = fields.map((field) => `coalesce(${id(field)}, '')`).join(" || ' ' || ")
  return `to_tsvector('${language}', ${joined})`
}
