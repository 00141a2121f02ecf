/**
 * A JSON path to a top-level member (`$."name"`), written into SQL as a literal: names come from the catalog, and a
 * quote or backslash in one is escaped.
 *
 * @example
 * ```ts
 * memberPath('owner') // '$."owner"'
 * ```
 */
export function memberPath (name: string): string {
  return `$."${name.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
}
