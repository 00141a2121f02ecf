import type { TableCatalog } from '../dialect/shared/catalog.js'

// Column names that hold credentials: served, they would be read, filtered (`pwd_hash__contains`) and embedded in
// every related resource. A name matches when it contains one of these words, in any case.
const secretWords = /password|hash|salt|token|secret/i

/** The words a secret-looking column name contains, as the README and the generated comments list them. */
export const secretWordList = 'password, hash, salt, token, secret'

/** Whether a column's name looks like it holds a secret (`pwd_hash`, `resetpass_token`, `user_password`). */
export function isSecretColumn (name: string): boolean {
  return secretWords.test(name)
}

/** The secret-looking columns of a table left out of its schema (none with `--include-secrets`). */
export function secretColumns (table: TableCatalog, includeSecrets: boolean): string[] {
  return includeSecrets ? [] : table.columns.filter((column) => isSecretColumn(column.name)).map(({ name }) => name)
}

/**
 * The secret columns an insert cannot omit (NOT NULL, no default): with them out of the schema, a POST could never
 * succeed, so the table is served without POST and BULK.
 */
export function requiredSecrets (table: TableCatalog, includeSecrets: boolean): string[] {
  const left = new Set(secretColumns(table, includeSecrets))
  return table.columns
    .filter((column) => left.has(column.name) && !column.nullable &&
      column.default === undefined && !column.autoIncrement && !column.generated)
    .map(({ name }) => name)
}
