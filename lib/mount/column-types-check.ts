import type { TObject } from '@sinclair/typebox'
import type { CatalogColumn, TableCatalog } from '../dialect/shared/catalog.js'
import type { ColumnTypes } from '../dialect/shared/column-types.js'

// A schema that cannot hold what its column holds is served wrong without a word: a NULL through a field
// that does not allow null is written as "", 0 or false (and a client's PUT writes that back), a text
// through an integer field as a number it is not. Found at startup, where the fix is one line of schema.

/** One schema field's JSON Schema, as far as this check reads it. */
interface FieldSchema {
  readonly type?: unknown
  readonly anyOf?: unknown
  readonly oneOf?: unknown
  readonly nullable?: unknown
  readonly readOnly?: unknown
  readonly const?: unknown
}

/** The JSON types a field's values may have, or `undefined` when the schema does not say (any value). */
function jsonTypes (schema: FieldSchema): Set<string> | undefined {
  const members = [schema.anyOf, schema.oneOf].find(Array.isArray)
  if (members !== undefined) {
    const types = new Set<string>()
    for (const member of members) {
      // An unreadable member (a `$ref`, `not`) could allow anything: say nothing.
      const inner = typeof member === 'object' && member !== null ? jsonTypes(member) : undefined
      if (inner === undefined) return undefined
      for (const type of inner) types.add(type)
    }
    return types
  }
  if (schema.const === null) return new Set(['null'])
  const { type } = schema
  const types = new Set(typeof type === 'string' ? [type] : Array.isArray(type) ? type.map(String) : [])
  if (types.size === 0) return undefined
  if (schema.nullable === true) types.add('null')
  return types
}

/** A column whose values are text of any content: a number or a boolean field cannot hold them. */
function holdsText (column: CatalogColumn, columnTypes: ColumnTypes): boolean {
  const kind = column.enumValues === undefined ? columnTypes.kindOf(column) : 'enum'
  if (kind === 'uuid' || kind === 'enum') return true
  // The kind of an unknown SQLite type is a string too: only a declared text type says so for sure.
  return kind === 'string' && /char|text|clob/.test(column.type)
}

/** Filled by the database when a write leaves it out: the one case a read-only field may sit on a nullable column. */
function filledByDatabase (column: CatalogColumn): boolean {
  return column.default !== undefined || column.generated || column.autoIncrement
}

/**
 * The first schema field of a base table whose column holds values the field cannot (a NULL where the field
 * does not allow null, a text where it allows only numbers or booleans), as the problem to report; views are
 * not checked (their catalog says every column is nullable). A read-only field (`readOnly`, the primary key,
 * the version field) over a nullable column is allowed when the database fills the column (a default, a
 * generated or auto-increment column). A string field over a number column is allowed (exact BIGINTs).
 *
 * @example
 * columnTypesProblem(schema, fields, described, columnTypes, readOnly) // 'field "note" does not allow null, …'
 */
export function columnTypesProblem (
  schema: TObject,
  fields: readonly string[],
  described: TableCatalog,
  columnTypes: ColumnTypes,
  readOnly: (field: string) => boolean
): string | undefined {
  if (described.view) return undefined
  const columns = new Map(described.columns.map((column) => [column.name, column]))
  const properties: Readonly<Record<string, FieldSchema>> = schema.properties
  for (const field of fields) {
    const column = columns.get(field)
    const property = properties[field]
    if (column === undefined || property === undefined) continue
    const types = jsonTypes(property)
    if (types === undefined) continue
    const served = property.readOnly === true || readOnly(field)
    const keyColumn = described.primaryKey.includes(field)
    if (column.nullable && !keyColumn && !types.has('null') && !(served && filledByDatabase(column))) {
      return `field "${field}" does not allow null, but column "${described.name}.${field}" is nullable: ` +
        'add Type.Null() to the field (a union), or make the column NOT NULL'
    }
    // A text column may hold a JSON document (SQLite's JSON is text): its text is parsed as read (data/json-text.ts).
    const document = types.has('object') || types.has('array')
    if (holdsText(column, columnTypes) && !types.has('string') && !document) {
      return `field "${field}" allows ${[...types].join(' or ')}, but column "${described.name}.${field}" ` +
        `(${column.declared}) holds text: make the field a string, or change the column's type`
    }
  }
  return undefined
}
