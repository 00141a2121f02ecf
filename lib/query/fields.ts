import fastJson from 'fast-json-stringify'
import type { JsonSchema } from '../schema/derive.js'
import { queryParameterError } from './condition.js'
import { nameList } from './field-types.js'

/** How many field sets keep a compiled serializer; the least recently built one goes first. */
export const maxFieldSets = 64

/** Serializes a page of rows, or any other payload (such as an error) as plain JSON. */
export type PageSerializer = (payload: unknown) => string

/** One `?fields=` selection: the columns to read and the serializer of exactly those fields. */
export interface FieldSelection {
  /** Identifies the select list, for the statement cache. */
  readonly shape: string
  /** The columns to select. */
  readonly columns: readonly string[]
  readonly serialize: PageSerializer
}

/** `?fields=`, planned from the entity schema. */
export interface FieldsPlan {
  readonly properties: Record<string, JsonSchema>
  /** The selection of a request, or `undefined` for every field; an unknown field is a 400. */
  selection (query: Record<string, unknown>): FieldSelection | undefined
}

/**
 * Plans `?fields=a,b`. The response still goes through a schema serializer (a column outside the schema
 * can never leak): one fast-json-stringify function per field set, without `required`, so that fields left
 * out are simply absent. `selected` are the columns every row needs besides the schema's (relation keys);
 * when the entity has relation fields, all of them are read so that the loaders find their keys.
 */
export function planFields (entity: JsonSchema, columns: readonly string[], selected: readonly string[]): FieldsPlan {
  const properties = (entity.properties ?? {}) as Record<string, JsonSchema>
  const names = Object.keys(properties)
  const hasRelations = names.some((name) => !columns.includes(name))
  const serializers = new Map<string, FieldSelection>()

  function build (fields: readonly string[], shape: string): FieldSelection {
    const picked = Object.fromEntries(fields.map((name) => [name, properties[name] ?? {}]))
    const stringify = fastJson({ type: 'array', items: { type: 'object', properties: picked } } as fastJson.Schema) as (rows: unknown) => string
    return {
      shape,
      columns: hasRelations ? selected : fields.filter((name) => columns.includes(name)),
      // An error thrown after the handler (by a relation loader, say) is sent through the same reply.
      serialize: (payload) => Array.isArray(payload) ? stringify(payload) : JSON.stringify(payload),
    }
  }

  return {
    properties: {
      fields: {
        type: 'string',
        minLength: 1,
        description: `Comma-separated fields to return (default: all). Allowed: ${names.join(', ')}.`,
        examples: [names.slice(0, 2).join(',')],
      },
    },
    selection (query) {
      const text = query.fields
      if (typeof text !== 'string') return undefined
      const asked = new Set(text.split(','))
      for (const name of asked) {
        if (!(name in properties)) throw queryParameterError('fields', `names an unknown field ${JSON.stringify(name)}; allowed: ${nameList(names)}`)
      }
      // Schema order, so that `name,id` and `id,name` share one serializer and one statement.
      const fields = names.filter((name) => asked.has(name))
      const shape = fields.join(',')
      let selection = serializers.get(shape)
      if (selection === undefined) {
        selection = build(fields, shape)
        if (serializers.size >= maxFieldSets) serializers.delete(serializers.keys().next().value as string)
        serializers.set(shape, selection)
      }
      return selection
    },
  }
}
