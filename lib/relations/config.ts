import type { FastifyRequest } from 'fastify'
import type { Expression, ExpressionBuilder, SqlBool } from 'kysely'

/**
 * What a relation's row rule knows of the request that reads the related rows (the outer request's context).
 *
 * @example
 * ```ts
 * const rule = { scope: (eb, { token }: RelationRuleContext) => eb('owner', '=', token?.sub ?? null) }
 * ```
 */
export interface RelationRuleContext {
  readonly request: FastifyRequest
  /** The claims of the request's verified bearer token, or `null`. */
  readonly token: { readonly sub?: string; readonly [claim: string]: unknown } | null
  /** `'GET'` for a to-one (selectRelated) load, `'LIST'` for everything else. */
  readonly method: 'GET' | 'LIST'
}

/**
 * A row rule for a relation's table: anything with a `scope` method, such as the viewset that serves the table
 * (its `scope` for `'GET'` and `'LIST'`), or a plain object for a table no viewset serves. `undefined` means
 * no restriction, as for a viewset's `scope`.
 *
 * @example
 * ```ts
 * { project: { table: 'projects', foreignKey: 'project_id', rulesFrom: projectsViewset } }
 * { tags: { table: 'tags', through, rulesFrom: { scope: (eb, { token }) => eb('owner', '=', token?.sub ?? null) } } }
 * ```
 */
export interface RelationRule<DB = Record<string, unknown>> {
  scope (
    eb: ExpressionBuilder<DB, keyof DB & string>,
    context: RelationRuleContext
  ): Expression<SqlBool> | undefined
}

/**
 * Where a relation's rows take their row rule from: by default, the one viewset of the app that serves the
 * table over the same Kysely instance; `rulesFrom` names another one (the viewset, or its full prefix such as
 * `'/projects'`), or declares the rule of a table no viewset serves.
 *
 * @example
 * ```ts
 * { project: { table: 'projects', foreignKey: 'project_id', rulesFrom: '/admin/projects' } }
 * ```
 */
export type RulesFrom<DB = Record<string, unknown>> = RelationRule<DB> | string

/**
 * A many-to-one relation: the foreign key is a column of this table.
 *
 * @example
 * ```ts
 * { author: { table: 'authors', foreignKey: 'author_id' } }   // books.author_id → authors.id
 * ```
 */
export interface SelectRelated<DB> {
  table: keyof DB & string
  /** The column of this table that holds the target's key. */
  foreignKey: string
  /** The target's key (default `'id'`). */
  references?: string
  /** Relations of the related rows, loaded with one query per relation per level. */
  relatedConfig?: RelatedConfig<DB>
  /** Where the related rows' row rule comes from (default: the one viewset serving `table`), see {@link RulesFrom}. */
  rulesFrom?: RulesFrom<DB>
  /**
   * POST, PUT and PATCH bodies may set the relation by reference, `"author": {"id": 3}` (or `null`), which writes
   * `foreignKey` (default false: the field is read-only). The viewset serving `table` must exist.
   */
  writable?: boolean
}

/**
 * A one-to-many relation (the foreign key is on the other table) or a many-to-many one through a join table.
 *
 * @example
 * ```ts
 * // authors.id ← books.author_id
 * { books: { table: 'books', foreignKey: 'author_id' } }
 * { tags: { table: 'tags', through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' } } }
 * ```
 */
export interface PrefetchRelated<DB> {
  table: keyof DB & string
  /** One-to-many: the column of the other table that holds this row's key. */
  foreignKey?: string
  /** Many-to-many: the join table and its two key columns. */
  through?: { table: keyof DB & string; sourceKey: string; targetKey: string }
  /** One-to-many: this row's key (default `'id'`). Many-to-many: the target's key (default `'id'`). */
  references?: string
  /** Order of the children, such as `'-created_at'` or `['name', 'id']` (default: primary key). */
  orderBy?: string | readonly string[]
  /**
   * Children kept per parent: the first `limit` in `orderBy` (default 100; `false` keeps them all). A parent
   * with exactly `limit` children may have more: read them from the child resource, filtered by the parent.
   */
  limit?: number | false
  /** Relations of the related rows, loaded with one query per relation per level. */
  relatedConfig?: RelatedConfig<DB>
  /** Where the related rows' row rule comes from (default: the one viewset serving `table`), see {@link RulesFrom}. */
  rulesFrom?: RulesFrom<DB>
  /**
   * POST, PUT and PATCH bodies may write the relation (default false: the field is read-only): a one-to-many by its
   * children (`[{"title": "new"}, {"id": 7, "title": "renamed"}]`: without a key created, with one updated, each
   * through the viewset serving `table` as its own route would), a many-to-many by setting its link rows
   * (`[{"id": 3}, {"id": 5}]`). All in the parent's transaction; children not sent are left as they are.
   */
  writable?: boolean
}

/**
 * How to eager-load the relation fields of a schema, keyed by field name.
 *
 * @example
 * ```ts
 * const relatedConfig: RelatedConfig<DB> = {
 *   selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } },
 *   prefetchRelated: { reviews: { table: 'reviews', foreignKey: 'book_id' } },
 * }
 * ```
 */
export interface RelatedConfig<DB = Record<string, unknown>> {
  selectRelated?: Record<string, SelectRelated<DB>>
  prefetchRelated?: Record<string, PrefetchRelated<DB>>
}
