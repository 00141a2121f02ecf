// The options of what a viewset's LIST reads, sorts, filters, searches, counts and pages: a part of ViewsetOptions
// kept apart, as the query layer is. Their values are checked in options.ts and mount/.
import type { Static, TObject } from '@sinclair/typebox'
import type { FilterOperator } from './methods.js'
import type { FullTextOptions } from './query/full-text.js'

/**
 * Field names of a schema.
 *
 * @example
 * ```ts
 * const sortable: Array<FieldOf<typeof Item>> = ['name', 'price'] // a name not in Item fails to compile
 * ```
 */
export type FieldOf<S extends TObject> = keyof Static<S> & string

/**
 * A dotted path through a relation field of the schema, such as `author.name`, `tags.name` or
 * `author.publisher.name`: the relations and the last field are checked against `relatedConfig` at registration.
 */
export type RelationPath<S extends TObject> = `${ObjectFields<S> & string}.${string}`

/**
 * The options of LIST's query string: pages, filters, ordering, search, full-text search and counts. Part of
 * {@link ViewsetOptions}.
 *
 * @example
 * ```ts
 * const list: ListOptions<typeof Item> = { filterFields: { price: ['gte', 'lte'] }, orderingFields: ['price'] }
 * createViewset({ db, table: 'items', schema: Item, ...list })
 * ```
 */
export interface ListOptions<S extends TObject> {
  /** Largest `limit` a client may ask for (default 100). */
  maxLimit?: number
  /** `limit` when the client sends none (default 20). */
  defaultLimit?: number
  /**
   * Largest `offset` a client may ask for (default 10,000): a deep offset makes the database read and
   * drop every row before it. Past it, LIST answers 400 and the `Link` header has no `next`.
   */
  maxOffset?: number
  /**
   * Longest `?search=` or `__contains` term, in characters (code points, after URL decoding; default 100).
   * A substring match reads every row, and its cost grows with the term.
   */
  maxSearchLength?: number
  /** Fields matched by `?search=` (case-insensitive substring, OR-ed); also `selectRelated` paths such as
   * `'author.name'`. */
  searchFields?: ReadonlyArray<FieldOf<S> | RelationPath<S>>
  /** `?q=`: full-text search in these string fields through the database's own index (README "Full-text search"). */
  fullText?: FullTextOptions<FieldOf<S>>
  /** Fields allowed in `?order_by=`; also `selectRelated` paths (`'author.name'`) and counts (`'books.count'`). */
  orderingFields?: ReadonlyArray<FieldOf<S> | RelationPath<S>>
  /** Order when `?order_by` is absent, such as `'-created_at'` or `'name,-id'`. */
  defaultOrder?: string
  /**
   * Filterable fields and their operators. A relation path (`'author.name'`, `'tags.name'`, at most two
   * relations) filters the rows that have at least one related row matching; `'books.count'` the number of a to-many
   * relation's rows the caller's rules admit (numeric operators).
   */
  filterFields?: { readonly [K in FieldOf<S> | RelationPath<S>]?: readonly FilterOperator[] }
  /** Always send `X-Total-Count` (default: only with `?count=true` or `Prefer: count=…`). */
  alwaysCount?: boolean
  /**
   * Which counts LIST gives (default `true`): `true` counts with `?count=true` or `Prefer: count=exact`, and estimates
   * with `Prefer: count=estimated` (see `countEstimateThreshold`); `'estimated'` gives estimates only (`?count=true`
   * then estimates, `Prefer: count=exact` is a 400); `false` gives none (either is a 400 that names this option).
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'events', schema: Event, allowCount: 'estimated' })
   * ```
   */
  allowCount?: boolean | 'estimated'
  /**
   * With `Prefer: count=estimated`, a planner estimate (PostgreSQL, MySQL, MariaDB) at or above this is answered as
   * `X-Total-Count`; below it the rows are counted (default 100,000). SQLite always counts.
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'events', schema: Event, countEstimateThreshold: 10_000 })
   * ```
   */
  countEstimateThreshold?: number
  /**
   * Estimate counts of requests a row rule restricts (default `false`: they are counted, since the planner's
   * statistics span every tenant's rows).
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'events', schema: Event, scope: byTenant, estimateWithRules: true })
   * ```
   */
  estimateWithRules?: boolean
  /**
   * How LIST pages (default `'offset'`): `'offset'` takes `?offset=`; `'cursor'` takes `?cursor=` (from the
   * `Link` header's `next` and `prev`), costs the same on every page, and answers an `offset` with a 400.
   */
  pagination?: 'offset' | 'cursor'
  /**
   * Fail at startup when a filter, ordering, cursor ordering, search field or relation key would scan a table for
   * want of an index (default false: `viewsetIndexReport(app)` lists them). `search`, `contains` and relation paths
   * always scan, so a viewset with this option offers none of them. The message names the table and each field.
   *
   * @example
   * ```ts
   * createViewset({ db, table: 'events', schema: Event, filterFields: { kind: ['eq'] }, strictIndexes: true })
   * ```
   */
  strictIndexes?: boolean
}

/**
 * The fields that may be relations when the relatedConfig is not known to the type (a subclass names only
 * `Viewset<DB, TB, S>`): those whose values are objects or arrays. The loader checks at registration that
 * each one is declared; a scalar field that is not a column still fails to compile.
 */
export type ObjectFields<S extends TObject> = {
  [K in keyof Static<S>]-?: NonNullable<Static<S>[K]> extends object ? K : never
}[keyof Static<S>]
