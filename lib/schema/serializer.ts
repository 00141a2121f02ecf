import fastJson from 'fast-json-stringify'
import type { JsonSchema } from './derive.js'

/** Writes a value as JSON, the way its schema says. */
export type Serializer = (value: unknown) => string

// The same function, typed on plain JSON Schema: its own types spell out each keyword, and ours are built by
// derive.ts from a TypeBox object schema; the serializer it returns writes any value.
const compile = fastJson as unknown as (schema: JsonSchema, options: { schema: Record<string, JsonSchema> }) => Serializer // plain JSON Schema in, any value out

/**
 * Compiles a fast-json-stringify serializer from plain JSON Schema, `$ref`s resolved in `externals`
 * (keyed by `$id`). The one place that meets fast-json-stringify's types.
 *
 * @example
 * ```ts
 * compileSerializer({ type: 'array', items: { $ref: 'Items#' } }, { Items: entity })([{ id: 1 }])
 * ```
 */
export function compileSerializer (schema: JsonSchema, externals: Record<string, JsonSchema> = {}): Serializer {
  return compile(schema, { schema: externals })
}
