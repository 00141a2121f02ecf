// The URL each database `createDatabase` opened was given: what a connection of its own (the change feed's one
// `LISTEN` connection on PostgreSQL) opens by default. A Kysely built by hand has none.

const urls = new WeakMap<object, string>()

/**
 * Records the URL `db` was opened with.
 *
 * @example
 * ```ts
 * rememberUrl(db, 'postgres://app@db/app')
 * ```
 */
export function rememberUrl (db: object, url: string): void {
  urls.set(db, url)
}

/**
 * The URL `db` was opened with by `createDatabase`, or `undefined`.
 *
 * @example
 * ```ts
 * urlOf(createDatabase('postgres://app@db/app')) // 'postgres://app@db/app'
 * ```
 */
export function urlOf (db: object): string | undefined {
  return urls.get(db)
}
