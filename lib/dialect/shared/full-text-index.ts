import type { Expression, SqlBool } from 'kysely'
import type { CatalogDatabase } from './catalog.js'

// Types only: the part of the dialect seam that serves `?q=` (lib/query/full-text.ts) from each database's own
// full-text index, and checks at startup that the index is there.

/**
 * The full-text index a viewset's `fullText` option names, as every dialect reads it: the table and its key, the
 * fields in order, PostgreSQL's text search configuration and SQLite's FTS5 table.
 */
export interface FullTextIndex {
  readonly table: string
  readonly key: string
  readonly fields: readonly string[]
  /** PostgreSQL's text search configuration (`simple`, `english`, …), written into the SQL as the index has it. */
  readonly language: string
  /** SQLite's external-content FTS5 table (default `<table>_fts`). */
  readonly ftsTable: string
}

/**
 * How one database matches and ranks rows by its own full-text index. The search text is one bound value, so a
 * request's statement has the same SQL whatever its words.
 *
 * @example
 * ```ts
 * const text = dialect.fullText.text(['bread', 'rye'])
 * select = select.where(dialect.fullText.matches(index, text)).orderBy(dialect.fullText.relevance(index, text), 'desc')
 * ```
 */
export interface DialectFullText {
  /**
   * Whether a row's relevance reads that row alone (PostgreSQL's `ts_rank`), not statistics of the whole table
   * (SQLite's `bm25`, MySQL's `MATCH`): only then may a request under a row rule order by it, since other rows'
   * words would otherwise move it.
   */
  readonly rankIsolated: boolean
  /**
   * Whether a match reads the row's own columns alone (PostgreSQL's `to_tsvector` of them), not an index of the
   * table's current rows (SQLite's FTS5 table, MySQL's FULLTEXT): only then can the change feed evaluate `q` on a
   * row's stored versions.
   */
  readonly matchIsolated: boolean
  /** The bound search text that requires every word (each already plain letters and digits). */
  text(words: readonly string[]): string
  /** The rows that hold every word of `text`. */
  matches(index: FullTextIndex, text: string): Expression<SqlBool>
  /** A row's relevance to `text`: larger is more relevant (a number, not NULL, for each matching row). */
  relevance(index: FullTextIndex, text: string): Expression<number>
  /** Why the index the statements need is missing or unlike them, or `undefined` when it serves them. */
  problem(db: CatalogDatabase, index: FullTextIndex): Promise<string | undefined>
  /** The migration that creates the index (and, on SQLite, the triggers that keep it in sync). */
  migration(index: FullTextIndex): string
}
