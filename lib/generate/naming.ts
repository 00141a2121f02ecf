// Every database name reaches generated source through one of these functions: as a string literal, a property
// key, a comment, an identifier derived from it, or a URL segment. A name is data, never code: a table named
// `x */ import("fs") /*` or `items${process.exit(1)}` must come out as text that compiles and runs nothing.

// Line terminators of JavaScript and TypeScript: each ends a `//` comment, and JSON.stringify leaves U+2028 and
// U+2029 raw.
const lineTerminators = /[\n\r\u2028\u2029]/g

function escapeTerminator (char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`
}

/**
 * A string literal in generated source: JSON.stringify's escaping (every control character, CR and LF
 * included), plus U+2028 and U+2029, written in single quotes (the house style and the linter's): `"` stands
 * unescaped and `'` gets a backslash. Never a template literal, so `${` is text.
 */
export function literal (value: string): string {
  const json = JSON.stringify(value).slice(1, -1).replace(lineTerminators, escapeTerminator)
  // JSON's escapes are a backslash and one character, so reading two at a time keeps them whole.
  const quoted = json.replace(/\\.|'/g, (token) => (token === '\\"' ? '"' : token === "'" ? "\\'" : token))
  return `'${quoted}'`
}

/** A name inside a `//` or `/** *\/` comment: its literal (no line terminator left), with `*\/` broken. */
export function commentText (value: string): string {
  return literal(value).replaceAll('*/', '*\\/')
}

/** Any text made safe for a comment line: line terminators escaped, `*\/` broken. */
export function commentLine (text: string): string {
  return text.replace(lineTerminators, escapeTerminator).replaceAll('*/', '*\\/')
}

/**
 * `book_tags` → `BookTags`, `app.order-lines` → `AppOrderLines`: the base of a table's generated names, a valid
 * identifier for any input. Accents are dropped (`données` → `Donnees`), other non-ASCII letters and digits
 * become `U` and their code point (`日本` → `U65e5U672c`), a leading digit gets `T`, and nothing left gives `T`.
 */
export function pascal (name: string): string {
  const ascii = name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\p{ASCII}]/gu, (char) => (/[\p{L}\p{N}]/u.test(char) ? ` U${char.codePointAt(0)?.toString(16)} ` : ' '))
  const words = ascii.split(/[^A-Za-z0-9]+/).filter((word) => word !== '')
  const joined = words.map((word) => `${word[0]?.toUpperCase() ?? ''}${word.slice(1)}`).join('')
  // An identifier cannot start with a digit.
  return /^[0-9]/.test(joined) || joined === '' ? `T${joined}` : joined
}

/** A property key as TypeScript source: bare when it is an identifier, a string literal otherwise. */
export function propertyKey (name: string): string {
  // `__proto__: x` (bare or quoted) in an object literal sets the prototype; a computed key is a property.
  if (name === '__proto__') return `[${literal(name)}]`
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : literal(name)
}

/**
 * The URL segment of a table's routes. A name of letters, digits, `_` and `-` is its own segment; any other
 * character is written as its UTF-8 bytes, each `~` and two hex digits. That is percent-encoding with `~` for
 * `%`, because Fastify's router decodes `%` escapes before it matches a path (an encoded segment would never be
 * found) and reads `:`, `*` and `(` in a route as parameters. The mapping is one-to-one, so two names never
 * share a segment, and the segment needs no escaping in a URL, an OpenAPI path or a header.
 */
export function routeSegment (table: string): string {
  return table.replace(/[^A-Za-z0-9_-]/gu, (char) =>
    [...Buffer.from(char, 'utf8')].map((byte) => `~${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('')
  )
}

/** Identifiers generated files import or use: a table's name must not take one. */
export const reservedIdentifiers: ReadonlySet<string> = new Set([
  'Type', 'Static', 'DB', 'FastifyInstance', 'FastifyServerOptions', 'Kysely', 'RegisterAllOptions', 'ViewsetMethod',
  'BuildOptions', 'ColumnType', 'Generated', 'GeneratedAlways', 'Int8', 'Numeric', 'Timestamp', 'Json', 'JsonValue',
  'Fastify', 'Array', 'Boolean', 'Buffer', 'Date', 'Error', 'Function', 'Infinity', 'JSON', 'Map', 'Math', 'NaN',
  'Number', 'Object', 'Partial', 'Promise', 'Readonly', 'Record', 'RegExp', 'Set', 'String', 'Symbol',
])

/** A table's identifier, and why it is not the plain PascalCase of its name. */
export interface TableIdentifier {
  readonly identifier: string
  /** Set when the identifier got a number: the name it would have had, taken by another table or an import. */
  readonly renamed?: string
}

/**
 * One identifier per table, distinct and the same for the same set of names: in the order given (the catalog's,
 * sorted by name), a name whose PascalCase is taken, by an earlier table or by `reserved`, gets the lowest
 * free number (`order_items` and `orderItems` → `OrderItems` and `OrderItems2`).
 */
export function tableIdentifiers (
  names: readonly string[],
  reserved: ReadonlySet<string> = reservedIdentifiers
): Map<string, TableIdentifier> {
  const taken = new Set(reserved)
  const identifiers = new Map<string, TableIdentifier>()
  for (const name of names) {
    const base = pascal(name)
    let identifier = base
    for (let number = 2; taken.has(identifier); number++) identifier = `${base}${number}`
    taken.add(identifier)
    identifiers.set(name, identifier === base ? { identifier } : { identifier, renamed: base })
  }
  return identifiers
}

/** The comment above a renamed table's declaration, saying why it has a number. */
export function renamedComment (name: string, id: TableIdentifier): string[] {
  return id.renamed === undefined
    ? []
    : [`// ${commentText(name)} is ${id.identifier}: ${id.renamed} is taken by another table or an import.`]
}
