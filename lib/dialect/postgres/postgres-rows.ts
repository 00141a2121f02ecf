import { LruCache } from '../../execution/lru-cache.js'
import type { Row } from '../../sql.js'

// The rows of the pool shortcut's statements (postgres-statements.ts), asked of pg as arrays and made into objects
// here. pg makes an object row by copying a template and storing each column by its name, a store whose name varies:
// in a server with many row shapes (the catalog's, each table's) V8 takes its slow paths there, and pg's rows cost
// about twice what they cost in a process with one (benchmarks/analysis.md, "pg's rows as arrays"). Here each column
// list gets one function that writes its rows as object literals: one shape, made in one step.

/** The columns of a result, as pg describes them. */
export type ResultFields = ReadonlyArray<{ readonly name: string }>

/** What makes a result's array rows into objects, with the column names it was made for. */
interface RowBuilder {
  readonly names: readonly string[]
  readonly build: (arrays: readonly unknown[]) => Row[]
}

/** One builder per SQL text (bounded as the texts that may be prepared are: postgres-statements.ts). */
const builders = new LruCache<string, RowBuilder>(2048)

/** A property of the literal: a name quoted as a JSON string is a JavaScript string literal; `__proto__` is computed,
 * so that it is a column like any other, not the object's prototype. */
function property (name: string, index: number): string {
  const key = JSON.stringify(name)
  return `${name === '__proto__' ? `[${key}]` : key}: values[${index}]`
}

/** The builder of a column list: each array row `values` becomes `{ "id": values[0], "title": values[1] }`. */
function builderOf (names: readonly string[]): RowBuilder {
  // Code made from column names that pg read from the database, each quoted by JSON.stringify: no name can leave its
  // string literal. The one way to an object literal per column list, which no loop over the names gives.
  // eslint-disable-next-line no-new-func
  const rowsOf = new Function('arrays', `const rows = []
    for (const values of arrays) rows.push({ ${names.map(property).join(', ')} })
    return rows`)
  return { names, build: (arrays) => rowsOf(arrays) }
}

/** Whether a builder was made for these columns: a text's columns change only if its tables do. */
function sameNames (names: readonly string[], fields: ResultFields): boolean {
  if (names.length !== fields.length) return false
  for (let index = 0; index < names.length; index++) if (names[index] !== fields[index]?.name) return false
  return true
}

/** A row a client answered as an object. */
function isObjectRow (row: unknown): row is Row {
  return typeof row === 'object' && row !== null
}

/**
 * The rows pg answered as arrays (`rowMode: 'array'`) for the SQL `text`, as objects: each column by its name, in its
 * order, the last of two columns of one name winning, as pg's own object rows have them.
 *
 * @example
 * ```ts
 * objectRows('select id, title from books', [{ name: 'id' }, { name: 'title' }], [[1, 'Dune']])
 * // [{ id: 1, title: 'Dune' }]
 * ```
 */
export function objectRows (text: string, fields: ResultFields | undefined, arrays: readonly unknown[]): Row[] {
  const first = arrays[0]
  if (first === undefined) return []
  // A client that does not take rowMode (not pg's own) answered object rows already.
  if (fields === undefined || !Array.isArray(first)) return arrays.filter(isObjectRow)
  let builder = builders.get(text)
  if (builder === undefined || !sameNames(builder.names, fields)) {
    builder = builderOf(fields.map((field) => field.name))
    builders.set(text, builder)
  }
  return builder.build(arrays)
}
