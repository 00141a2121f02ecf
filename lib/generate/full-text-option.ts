import type { DialectFullText } from '../dialect/shared/full-text-index.js'
import { mapColumn } from './column-types.js'
import type { GeneratePlan } from './plan.js'
import { isSecretColumn } from './secrets.js'

// `generate --full-text table:field1,field2`: the viewset's `fullText` option in viewsets.ts, and the migration that
// creates the index `?q=` reads (lib/dialect/<db>/<db>-full-text.ts writes it, the same text startup prints when it
// is missing). Names are checked against the catalog (they reach the SQL quoted, and the code as literals).

/** One `--full-text` argument, read: a table and its fields, in order. */
export interface FullTextArgument {
  readonly table: string
  readonly fields: readonly string[]
}

/** A served table's full-text search, checked: what viewsets.ts writes as its `fullText` option. */
export interface PlannedFullText {
  readonly table: string
  /** The viewset's key (SQLite's FTS5 rowid). */
  readonly key: string
  readonly fields: readonly string[]
  /** PostgreSQL's text search configuration (`simple` when not given: the library's default). */
  readonly language: string
}

/** A PostgreSQL text search configuration's plain name, as the `fullText` option takes it. */
const languagePattern = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/**
 * Reads `table:field1,field2` (the last `:` ends the table's name, so a name may hold one; fields may not hold a
 * comma).
 *
 * @example
 * ```ts
 * parseFullTextArgument('articles:title,body') // { table: 'articles', fields: ['title', 'body'] }
 * ```
 */
export function parseFullTextArgument (entry: string): FullTextArgument {
  const at = entry.lastIndexOf(':')
  const table = at < 0 ? '' : entry.slice(0, at)
  const fields = at < 0 ? [] : entry.slice(at + 1).split(',')
  if (table === '' || fields.some((field) => field === '')) {
    throw new Error(`--full-text expects table:field1,field2, got ${JSON.stringify(entry)}`)
  }
  return { table, fields }
}

/** Why `argument` cannot be served by a full-text index on `plan`'s database, or the planned search. */
function planOne (plan: GeneratePlan, argument: FullTextArgument, language: string): PlannedFullText {
  const name = JSON.stringify(argument.table)
  const served = plan.served.find((entry) => entry.catalog.name === argument.table)
  if (served === undefined) {
    const known = plan.tables.some((table) => table.name === argument.table)
    const why = known ? 'which gets no viewset' : 'which is no table of the database'
    throw new Error(`--full-text names ${name}, ${why}`)
  }
  if (served.catalog.view) throw new Error(`--full-text names the view ${name}: a full-text index is on a table`)
  const searchable = served.catalog.columns.filter((column) => {
    const mapping = mapColumn(plan.dialect, column)
    return mapping.kind === 'string' && !mapping.array && (plan.includeSecrets || !isSecretColumn(column.name))
  }).map((column) => column.name)
  for (const [index, field] of argument.fields.entries()) {
    if (!searchable.includes(field)) {
      throw new Error(`--full-text: ${JSON.stringify(field)} is not a text column of ${name} served by its schema ` +
        `(text columns: ${searchable.map((column) => JSON.stringify(column)).join(', ') || 'none'})`)
    }
    if (argument.fields.indexOf(field) !== index) {
      throw new Error(`--full-text: ${JSON.stringify(field)} is listed twice`)
    }
  }
  if (served.catalog.columns.some((column) => column.name === 'relevance')) {
    throw new Error(`--full-text: ${name} has a column "relevance", the name order_by gives to q's relevance`)
  }
  const key = served.catalog.columns.find((column) => column.name === served.primaryKey)
  if (plan.dialect === 'sqlite' && (key === undefined || mapColumn(plan.dialect, key).kind !== 'integer')) {
    throw new Error(`--full-text: the key of ${name} is no INTEGER column, which SQLite's FTS5 table needs (its rowid)`)
  }
  return { table: argument.table, key: served.primaryKey, fields: argument.fields, language }
}

/**
 * Checks each `--full-text` argument against the plan: a served table (not a view), each field a text column its
 * schema serves, once; on SQLite an INTEGER key (FTS5's rowid). Throws naming the argument otherwise.
 *
 * @example
 * ```ts
 * planFullTextSearch(plan, [{ table: 'articles', fields: ['title'] }], 'english') // Map { 'articles' => {...} }
 * ```
 */
export function planFullTextSearch (
  plan: GeneratePlan,
  arguments_: readonly FullTextArgument[],
  language = 'simple'
): ReadonlyMap<string, PlannedFullText> {
  if (!languagePattern.test(language)) {
    throw new Error('--full-text-language must be the name of a PostgreSQL text search configuration, such as english')
  }
  const planned = new Map<string, PlannedFullText>()
  for (const argument of arguments_) {
    if (planned.has(argument.table)) throw new Error(`--full-text names ${JSON.stringify(argument.table)} twice`)
    planned.set(argument.table, planOne(plan, argument, language))
  }
  return planned
}

/**
 * The migration of the planned indexes, one statement a line (SQLite's triggers included), in the dialect's SQL:
 * a PostgreSQL GIN index on the expression the library's statement writes, SQLite's external-content FTS5 table and
 * its three triggers, a MySQL/MariaDB FULLTEXT index.
 *
 * @example
 * ```ts
 * fullTextMigration(postgresFullText, planned) // 'CREATE INDEX "articles_fts" ON "articles" USING GIN (...);\n'
 * ```
 */
export function fullTextMigration (fullText: DialectFullText, planned: ReadonlyMap<string, PlannedFullText>): string {
  const statements = [...planned.values()].map((entry) =>
    fullText.migration({ ...entry, ftsTable: `${entry.table}_fts` }))
  return [
    '-- The full-text indexes ?q= reads (generate --full-text). Apply once, before the server starts:',
    '-- its startup checks that each index is there.',
    ...statements,
    '',
  ].join('\n')
}
