import type { QueryResult } from 'kysely'
import type { Row } from '../sql.js'
import { isList, isRecord } from '../schema/object-schema.js'

// A JSON column whose driver answers text: SQLite keeps JSON as text (a column declared `json` or `text`), and a
// text column anywhere may hold a JSON document. Where the schema says the field is an object or an array (and
// never a string), the text is the document: it is parsed as the rows are read, once, before anything serializes,
// tags or filters them. Writes need nothing: each dialect binds an object as JSON text.

/** Parses, in place, the JSON text of a statement's rows; the same result, for chaining. */
export type RowDecoder = (result: QueryResult<Row>) => QueryResult<Row>

/** The JSON types a field's schema admits (`type`, a type array, or the members of `anyOf`/`oneOf`). */
function typesOf (schema: unknown): Set<unknown> {
  if (!isRecord(schema)) return new Set()
  const union = schema.anyOf ?? schema.oneOf
  if (isList(union)) return new Set(union.flatMap((member) => [...typesOf(member)]))
  return new Set(isList(schema.type) ? schema.type : [schema.type])
}

/**
 * The decoder of a viewset's rows: the columns whose schema field holds an object or an array and no string, or
 * `undefined` when there is none (the rows then pass as read, at no cost).
 *
 * @example
 * ```ts
 * const schema = Type.Object({ meta: Type.Object({ color: Type.String() }) })
 * const decode = jsonTextDecoder({ schema, columns: ['meta'] })
 * decode?.({ rows: [{ meta: '{"color":"red"}' }] }) // { rows: [{ meta: { color: 'red' } }] }
 * ```
 */
export function jsonTextDecoder ({ schema, columns }: {
  readonly schema: { readonly properties: Readonly<Record<string, unknown>> }
  readonly columns: readonly string[]
}): RowDecoder | undefined {
  const { properties } = schema
  const documents = columns.filter((column) => {
    const types = typesOf(properties[column])
    return (types.has('object') || types.has('array')) && !types.has('string') && !types.has(undefined)
  })
  if (documents.length === 0) return undefined
  return (result) => {
    for (const row of result.rows) {
      for (const column of documents) {
        const value = row[column]
        if (typeof value !== 'string') continue
        try {
          row[column] = JSON.parse(value)
        } catch {
          // Not JSON: left as read, for the serializer to refuse like any value its schema does not allow.
        }
      }
    }
    return result
  }
}
