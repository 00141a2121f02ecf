import { sql } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { DialectFullText, FullTextIndex } from '../dialect/shared/full-text-index.js'
import { invalidOption } from '../errors.js'
import type { JsonSchema } from '../schema/derive.js'
import { noNulPattern } from '../schema/list-patterns.js'
import { isList, isRecord } from '../schema/object-schema.js'
import type { Condition } from './condition.js'
import { queryParameterError } from './condition.js'
import type { ScalarField } from './field-types.js'
import { nameList } from './field-types.js'
import type { OrderKey, Ordering, SortableField } from './ordering.js'
import { parseOrdering } from './ordering.js'
import { boundedTerm } from './search.js'

// `?q=`, planned from the `fullText` option: every word of q must be in the row, found through the database's own
// full-text index (lib/dialect/<db>/<db>-full-text.ts), and `relevance` an order while q is present (its default).

/**
 * The `fullText` option: the string fields one full-text index covers, PostgreSQL's text search configuration
 * (default `'simple'`: no stemming and no stopwords, as SQLite and MariaDB read words; ignored elsewhere) and
 * SQLite's FTS5 table (default `<table>_fts`; ignored elsewhere). The index is the app's: see the README's
 * "Full-text search" for each database's migration.
 *
 * @example
 * ```ts
 * const fullText = { fields: ['title', 'body'], language: 'english' }
 * createViewset({ db, table: 'articles', schema: Article, fullText })
 * ```
 */
export interface FullTextOptions<F extends string = string> {
  readonly fields: readonly F[]
  readonly language?: string
  readonly table?: string
}

/** The name `order_by` gives the relevance of a row to q. */
export const relevanceKey = 'relevance'

/** Words q may hold: more is a 400, so one request asks the index for a bounded number of terms. */
export const maxWords = 16

/** Words shorter than this are left out of q on every database: MariaDB's InnoDB index holds none (its default). */
export const minWordLength = 3

/** `?q=`, planned: its parameter, the `relevance` key `order_by` may name, and each request's condition and order. */
export interface FullTextPlan {
  readonly properties: Record<string, JsonSchema>
  /** The keys `order_by` may name besides `orderingFields`: `relevance`, or none when full-text search is off. */
  readonly orderKeys: ReadonlyMap<string, SortableField>
  /** The index `?q=` reads, checked against the catalog at startup (mount/full-text-check.ts). */
  readonly index: FullTextIndex | undefined
  /** The condition of a request, or `undefined` without q. */
  condition(query: Record<string, unknown>): Condition | undefined
  /**
   * The ordering of a request: relevance first by default while q is present, its value read for q; a 400 when
   * `order_by` names relevance without q. `ruled`: a LIST row rule limits this request's rows; where the dialect's
   * relevance reads the whole table (`rankIsolated` false), it then keeps the ordering asked for (by default the
   * default ordering) and naming relevance is a 400.
   */
  ordering(query: Record<string, unknown>, ordering: Ordering, ruled?: boolean): Ordering
  /** The `order_by` parameter's schemas with what it says of relevance under row rules (unchanged where none). */
  documentOrderBy(properties: Record<string, JsonSchema>): Record<string, JsonSchema>
}

/** Stands for a relevance key's value until a request's q gives it one (never reaches SQL: see `ordering`). */
const unset = sql<number>`null`

const off: FullTextPlan = {
  properties: {},
  orderKeys: new Map(),
  index: undefined,
  condition: () => undefined,
  ordering: (_query, ordering) => ordering,
  documentOrderBy: (properties) => properties,
}

/** Why a request under a row rule may not order by relevance where the rank reads the whole table. */
const sharedRank = `may not name ${relevanceKey} while a row rule limits the rows: this database weighs each word ` +
  'by every row of the table, rows outside the rule included'

/** What OpenAPI says of relevance under a row rule, where the rank reads the whole table. */
const sharedRankNote = ` Under a row rule (\`scope\`) \`${relevanceKey}\` is not allowed and q keeps the default ` +
  'order: this database weighs each word by every row of the table, rows outside the rule included.'

/** The words of q as every database tokenizes them: runs of letters, marks and digits; short ones left out. */
export function wordsOf (text: string): string[] {
  return (text.match(/[\p{L}\p{M}\p{N}]+/gu) ?? []).filter((word) => [...word].length >= minWordLength)
}

/** The search text of a request (the dialect's spelling of q's words), or `undefined` without q. */
function searchText (query: Record<string, unknown>, fullText: DialectFullText, maxLength: number) {
  const q = query.q
  if (typeof q !== 'string' || q === '') return undefined
  const words = wordsOf(boundedTerm('q', q, maxLength))
  if (words.length === 0) {
    throw queryParameterError('q', `must hold a word of at least ${minWordLength} letters or digits`)
  }
  if (words.length > maxWords) throw queryParameterError('q', `must NOT have more than ${maxWords} words`)
  return fullText.text(words)
}

/** Checks `fullText` against the schema: string fields, each once, PostgreSQL's configuration and SQLite's table. */
export function fullTextIndex (
  option: unknown,
  fields: ReadonlyMap<string, ScalarField>,
  table: string,
  key: string
): FullTextIndex {
  const strings = [...fields.values()].filter((field) => field.type === 'string').map((field) => field.name)
  if (!isRecord(option) || !isList(option.fields) || option.fields.length === 0) {
    return invalidOption('fullText', `expected { fields: [...] } with string fields (${nameList(strings)})`)
  }
  const unknown = Object.keys(option).find((name) => !['fields', 'language', 'table'].includes(name))
  if (unknown !== undefined) invalidOption('fullText', `unknown key "${unknown}" (known: fields, language, table)`)
  const names: string[] = []
  for (const name of option.fields) {
    if (typeof name !== 'string' || !strings.includes(name)) {
      invalidOption('fullText', `${JSON.stringify(name)} is not a string column; string fields: ${nameList(strings)}`)
    }
    if (names.includes(name)) invalidOption('fullText', `"${name}" is listed twice`)
    names.push(name)
  }
  const { language = 'simple', table: ftsTable = `${table}_fts` } = option
  // Written into the SQL as the index writes it, so only a configuration's plain name.
  if (typeof language !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(language)) {
    invalidOption('fullText', 'language must be the name of a PostgreSQL text search configuration, such as "english"')
  }
  if (typeof ftsTable !== 'string' || ftsTable === '') invalidOption('fullText', 'table must be a table name')
  if (fields.has(relevanceKey)) {
    invalidOption('fullText', `the schema has a field "${relevanceKey}", the name order_by gives to q's relevance`)
  }
  return { table, key, fields: names, language, ftsTable }
}

/**
 * Checks `fullText` and plans `?q=`. Needs the dialect's full-text seam (every shipped dialect has one). The
 * index itself is checked at mounting, against the catalog.
 */
export function planFullText (
  option: unknown,
  fields: ReadonlyMap<string, ScalarField>,
  dialect: ViewsetDialect,
  resolved: {
    readonly table: string,
    readonly primaryKey: string,
    readonly keyColumns: readonly string[] | undefined,
    readonly maxSearchLength: number,
  }
): FullTextPlan {
  if (option === undefined) return off
  const index = fullTextIndex(option, fields, resolved.table, resolved.primaryKey)
  const { fullText } = dialect
  if (fullText === undefined) return invalidOption('fullText', `the ${dialect.name} dialect has no full-text search`)
  const maxLength = resolved.maxSearchLength
  const relevance: SortableField = {
    name: relevanceKey, type: 'number', schema: { type: 'number' }, nullable: false, expression: unset,
  }
  const orderKeys = new Map([[relevanceKey, relevance]])
  const byRelevance = parseOrdering(`-${relevanceKey}`, orderKeys, resolved.keyColumns ?? resolved.primaryKey)
  if (!('keys' in byRelevance)) return invalidOption('fullText', 'relevance cannot be ordered by')
  return {
    properties: { q: qSchema(index.fields, maxLength, fullText.rankIsolated) },
    orderKeys,
    index,
    condition (query) {
      const text = searchText(query, fullText, maxLength)
      if (text === undefined) return undefined
      return { shape: 'q', parameters: [text], expression: () => fullText.matches(index, text) }
    },
    ordering (query, ordering, ruled = false) {
      const text = searchText(query, fullText, maxLength)
      const named = ordering.keys.some((key) => key.expression === unset)
      if (text === undefined) {
        if (named) throw queryParameterError('order_by', `may name ${relevanceKey} only while q is present`)
        return ordering
      }
      // Other tenants' rows would move the rank, the order and the cursors: the rule must hold there too.
      if (ruled && !fullText.rankIsolated) {
        if (named) throw queryParameterError('order_by', sharedRank)
        return ordering
      }
      const chosen = typeof query.order_by === 'string' ? ordering : byRelevance
      const keys = chosen.keys.map((key): OrderKey => key.expression !== unset
        ? key
        : { ...key, expression: fullText.relevance(index, text), ruled: { shape: 'q', parameters: [text] } })
      return { shape: chosen.shape, keys }
    },
    documentOrderBy: (properties) => fullText.rankIsolated ? properties : noted(properties, sharedRankNote),
  }
}

/** `properties` with `note` appended to the description of `order_by`, if there is one. */
function noted (properties: Record<string, JsonSchema>, note: string): Record<string, JsonSchema> {
  const orderBy = properties.order_by
  if (orderBy === undefined) return properties
  const description = typeof orderBy.description === 'string' ? orderBy.description : ''
  return { ...properties, order_by: { ...orderBy, description: `${description}${note}` } }
}

/** The `q` parameter, as OpenAPI documents it. */
function qSchema (fields: readonly string[], maxLength: number, rankIsolated: boolean): JsonSchema {
  return {
    type: 'string',
    maxLength,
    pattern: noNulPattern,
    description: `Full-text search in ${fields.join(', ')}: every word must match (words are runs of letters and ` +
      `digits; those shorter than ${minWordLength} are left out, at most ${maxWords} words, at most ${maxLength} ` +
      `characters). While q is present the default order is \`-${relevanceKey}\` (most relevant first, ties by key), ` +
      `and \`order_by\` may name \`${relevanceKey}\`.${rankIsolated ? '' : sharedRankNote}`,
    examples: ['bread rye'],
  }
}
