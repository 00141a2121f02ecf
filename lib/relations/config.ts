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
}

/** How to eager-load the relation fields of a schema, keyed by field name. */
export interface RelatedConfig<DB = Record<string, unknown>> {
  selectRelated?: Record<string, SelectRelated<DB>>
  prefetchRelated?: Record<string, PrefetchRelated<DB>>
}
