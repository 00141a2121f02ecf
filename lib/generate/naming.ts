/** `book_tags` → `BookTags`, `app.order-lines` → `AppOrderLines`: the base of a table's generated names. */
export function pascal (name: string): string {
  const words = name.split(/[^A-Za-z0-9]+/).filter((word) => word !== '')
  const joined = words.map((word) => `${word[0]?.toUpperCase() ?? ''}${word.slice(1)}`).join('')
  // An identifier cannot start with a digit.
  return /^[0-9]/.test(joined) || joined === '' ? `T${joined}` : joined
}

/** A property key as TypeScript source: bare when it is an identifier, quoted otherwise. */
export function propertyKey (name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name)
}

/** A string literal in generated source (single quotes, the house style). */
export function literal (value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`
}

/** The URL segment of a table's routes: its name, `schema.table` keeping only the table. */
export function routeSegment (table: string): string {
  return table.split('.').pop() ?? table
}
