import fastJson from 'fast-json-stringify'
import { LruCache } from '../execution/lru-cache.js'
import type { JsonSchema } from './derive.js'
import { isRecord } from './object-schema.js'

/** Writes a value as JSON, the way its schema says. */
export type Serializer = (value: unknown) => string

// The same function, typed on plain JSON Schema: its own types spell out each keyword, and ours are built by
// derive.ts from a TypeBox object schema; the serializer it returns writes any value.
type PlainCompile = (schema: JsonSchema, options: { schema: Record<string, JsonSchema> }) => Serializer
const compile = fastJson as unknown as PlainCompile // plain JSON Schema in, any value out

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

// Compiled route serializers by schema text: every route answers its errors with the same problem document,
// and a viewset writes its row by the same schema on several routes; each is compiled once, not per route
// (at startup, compiling was most of `app.ready()`). Bounded, as apps may be built again and again in one process.
const shared = new LruCache<string, Shared>(1024)

// The JSON text of each external, written once per schema object (the problem document and a viewset's
// row are reached by every route of the viewset; their text makes part of each key).
const texts = new WeakMap<JsonSchema, string>()

function textOf (schema: JsonSchema): string {
  let text = texts.get(schema)
  if (text === undefined) {
    text = JSON.stringify(schema)
    texts.set(schema, text)
  }
  return text
}

/** The ids of the `externals` that `source` (a schema's JSON) reaches through `$ref`, directly or through one another.
 * */
function reached (source: string, externals: Record<string, JsonSchema>): string[] {
  const found: string[] = []
  let sources = [source]
  while (sources.length > 0) {
    const next: string[] = []
    for (const [id, external] of Object.entries(externals)) {
      if (found.includes(id) || !sources.some((text) => text.includes(`"${id}#`) || text.includes(`"${id}"`))) continue
      found.push(id)
      next.push(textOf(external))
    }
    sources = next
  }
  return found
}

/** A shared serializer: compiled once, when first asked for. */
interface Shared {
  readonly compile: () => Serializer
  readonly serialize: Serializer
}

function lazily (schema: JsonSchema, externals: Record<string, JsonSchema>): Shared {
  let compiled: Serializer | undefined
  const compile = (): Serializer => (compiled ??= compileSerializer(schema, externals))
  // Every answer passes here: once compiled, one call.
  return { compile, serialize: (value) => (compiled ?? compile())(value) }
}

// Keywords whose values are data, not schemas: a `$ref` key inside them is a value, never renamed.
const dataKeywords = new Set(['const', 'default', 'enum', 'examples', 'example'])

/** A copy of `value` with the `$ref`s and `$id`s of {@link renamed} schemas renamed. */
function renamedValue (value: unknown, names: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(value)) return value.map((item) => renamedValue(item, names))
  return isRecord(value) ? renamed(value, names) : value
}

/**
 * `schema` with each `$ref` to an id of `names` (`Items#`, `Items#/properties/tags`) and its own `$id` renamed: what
 * the serializer writes does not depend on the names, so viewsets with the same columns share one compiled serializer.
 * Renamed by structure, never in the text, so that a `const` or a string equal to an id is left as it is.
 */
function renamed (schema: JsonSchema, names: ReadonlyMap<string, string>): JsonSchema {
  const copy: JsonSchema = {}
  for (const [key, value] of Object.entries(schema)) {
    if ((key === '$ref' || key === '$id') && typeof value === 'string') {
      const hash = value.indexOf('#')
      const name = names.get(hash === -1 ? value : value.slice(0, hash))
      copy[key] = name === undefined ? value : `${name}${hash === -1 ? '' : value.slice(hash)}`
    } else copy[key] = dataKeywords.has(key) ? value : renamedValue(value, names)
  }
  return copy
}

/**
 * The shared serializer of `written` (a route's answer as JSON, `source` its text) with the `externals` it reaches,
 * named canonically (the first reached `$id` is `S0`, ...): its key is the text of what is compiled.
 */
function sharedEntry (written: JsonSchema, source: string, externals: Record<string, JsonSchema>): Shared {
  const used = reached(source, externals)
  const names = new Map(used.map((id, index) => [id, `S${index}`]))
  const schema = renamed(written, names)
  const canonical = used.map((id, index): [string, JsonSchema] => [`S${index}`, renamed(externals[id] ?? {}, names)])
  const key = JSON.stringify([schema, canonical])
  let entry = shared.get(key)
  if (entry === undefined) {
    entry = lazily(schema, Object.fromEntries(canonical))
    shared.set(key, entry)
  }
  return entry
}

// The entries already found for an externals record (route-schemas.ts keeps one per viewset), by the answer's text:
// every status of every route asks, and most ask for the same few answers (the problem document, the row).
const byExternals = new WeakMap<Record<string, JsonSchema>, Map<string, Shared>>()

/**
 * {@link compileSerializer} for the schemas of routes, shared by every route and viewset that writes by the
 * same schema (the same JSON, with the same `externals` it reaches, whatever their `$id`s). Not for schemas built per
 * request (`?fields=`), which have a cache of their own. Compiled on first use: compiling every status of every route
 * was most of startup (benchmarks/analysis.md#serializer-compile), and most of them (a 412, a 503) are seldom
 * written. `'now'` compiles it at once, so that a schema fast-json-stringify cannot write (a `$ref` it cannot
 * resolve) fails at startup.
 *
 * @example
 * ```ts
 * sharedSerializer({ $ref: 'Problem#' }, { Problem: problem, Items: entity }) // compiled once, with Problem only
 * ```
 */
export function sharedSerializer (
  schema: JsonSchema,
  externals: Record<string, JsonSchema> = {},
  when: 'now' | 'on first use' = 'on first use'
): Serializer {
  // A response's own annotations (its description, its documented headers) change nothing in the bytes
  // written: POST's 201 and GET's 200 write a row with one serializer.
  const { description: _description, headers: _headers, ...written } = schema
  const source = JSON.stringify(written)
  let found = byExternals.get(externals)
  if (found === undefined) byExternals.set(externals, (found = new Map()))
  let entry = found.get(source)
  if (entry === undefined) {
    entry = sharedEntry(written, source, externals)
    found.set(source, entry)
  }
  return when === 'now' ? entry.compile() : entry.serialize
}
