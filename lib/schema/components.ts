import type { ViewsetMethod } from '../options.js'
import type { JsonSchema } from './derive.js'
import { deriveBody, isReadOnly, propertiesOf } from './derive.js'
import { isRecord } from './object-schema.js'

/**
 * The OpenAPI components of one viewset, each with its `$id` (its component name). Answers and bodies
 * have schemas of their own, so that a generated client sees what is always there: `Items` (a whole row)
 * requires the key, every read-only column and the relations (they are loaded by default), which the one
 * entity schema of requests leaves optional.
 */
export interface ViewsetComponents {
  /** A whole row, as POST, PUT and PATCH answer it, and GET and LIST without `?fields=`. */
  readonly row: JsonSchema & { readonly $id: string }
  /** A row of a `?fields=` answer: the same fields, none of them required. */
  readonly partial: JsonSchema & { readonly $id: string }
  /** The bodies of POST, PUT and PATCH, when those methods are served. */
  readonly bodies: Partial<Record<'POST' | 'PUT' | 'PATCH', JsonSchema & { readonly $id: string }>>
  /** The components the served methods reference, to add to the scope: none that nothing references. */
  readonly schemas: ReadonlyArray<JsonSchema & { readonly $id: string }>
}

const suffixes = { POST: 'Create', PUT: 'Replace', PATCH: 'Patch' } as const

/** `Items` → `ItemsCreate`: the name of a method's body component. */
export function bodyComponentId (name: string, method: 'POST' | 'PUT' | 'PATCH'): string {
  return `${name}${suffixes[method]}`
}

/** `1` kept inside an integer or number schema's bounds. */
function numberIn (schema: JsonSchema): number {
  const minimum =
    typeof schema.minimum === 'number'
      ? schema.minimum
      : typeof schema.exclusiveMinimum === 'number'
        ? schema.exclusiveMinimum + 1
        : undefined
  const maximum =
    typeof schema.maximum === 'number'
      ? schema.maximum
      : typeof schema.exclusiveMaximum === 'number'
        ? schema.exclusiveMaximum - 1
        : undefined
  let value = 1
  if (minimum !== undefined && value < minimum) value = Math.ceil(minimum)
  if (maximum !== undefined && value > maximum) value = Math.floor(maximum)
  return value
}

/** Whether `text` matches a JSON Schema `pattern` (ECMA-262, unanchored); false for a pattern JavaScript can't read. */
function patternMatches (pattern: string, text: string): boolean {
  try {
    return new RegExp(pattern, 'u').test(text)
  } catch {
    return false
  }
}

const formatExamples: Record<string, string> = {
  'date-time': '2024-01-01T00:00:00Z',
  date: '2024-01-01',
  time: '12:00:00Z',
  email: 'user@example.com',
  uuid: '00000000-0000-4000-8000-000000000000',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
  hostname: 'example.com',
}

/**
 * A value a schema accepts, for the document's examples: the schema's own `examples`, `example`,
 * `default`, `const` or first `enum` value when it has one, else one made from its type and bounds.
 * `undefined` when none can be made (a string `pattern` with no example).
 */
export function exampleOf (schema: unknown, depth = 0): unknown {
  if (!isRecord(schema) || depth > 8) return undefined
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if ('example' in schema) return schema.example
  if ('default' in schema) return schema.default
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  const branches = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined
  if (branches !== undefined) {
    // A value of the first branch that is not null: a nullable field's example shows its type.
    const values = branches.map((branch) => exampleOf(branch, depth + 1))
    return values.find((value) => value !== undefined && value !== null) ?? values.find((value) => value !== undefined)
  }
  switch (schema.type) {
    case 'string': {
      if (typeof schema.format === 'string') return formatExamples[schema.format]
      const length = typeof schema.minLength === 'number' ? schema.minLength : 0
      const padded = 'string'.padEnd(length, 'x')
      const text = typeof schema.maxLength === 'number' ? padded.slice(0, schema.maxLength) : padded
      // A pattern can't be inverted: the made-up text is kept only when it happens to match.
      return typeof schema.pattern !== 'string' || patternMatches(schema.pattern, text) ? text : undefined
    }
    case 'integer':
    case 'number':
      return numberIn(schema)
    case 'boolean':
      return true
    case 'null':
      return null
    case 'array':
      return []
    case 'object':
      return objectExample(schema, depth)
    default:
      return undefined
  }
}

/** An object of the examples of its fields: the required ones, and the optional ones an example can be made for. */
function objectExample (schema: JsonSchema, depth: number): JsonSchema | undefined {
  const required = new Set(Array.isArray(schema.required) ? schema.required : [])
  const example: JsonSchema = {}
  for (const [name, property] of Object.entries(propertiesOf(schema))) {
    if (isReadOnly(property)) continue
    const value = exampleOf(property, depth + 1)
    if (value === undefined && required.has(name)) return undefined
    if (value !== undefined) example[name] = value
  }
  return example
}

/** Whether a schema is a nested object or an array of them: a relation of a related row, loaded only when asked. */
function isNested (schema: JsonSchema): boolean {
  if (schema.type === 'object') return true
  if (schema.type === 'array' && isRecord(schema.items)) return isNested(schema.items)
  return Array.isArray(schema.anyOf) && schema.anyOf.some((member) => isRecord(member) && isNested(member))
}

/**
 * A relation field as a whole row sends it: each related row is read with every column of its schema, so its
 * scalar fields (its key among them) are required; its own nested relations stay optional.
 */
function wholeRelated (schema: JsonSchema): JsonSchema {
  if (schema.type === 'object') {
    const properties = propertiesOf(schema)
    const scalars = Object.keys(properties).filter((field) => !isNested(properties[field] ?? {}))
    return scalars.length === 0 ? schema : { ...schema, required: scalars }
  }
  if (schema.type === 'array' && isRecord(schema.items)) return { ...schema, items: wholeRelated(schema.items) }
  if (Array.isArray(schema.anyOf)) {
    return { ...schema, anyOf: schema.anyOf.map((member) => (isRecord(member) ? wholeRelated(member) : member)) }
  }
  return schema
}

/** The relation fields of a viewset, and those a whole row is sent with (`defaultRelations`; `undefined`: all). */
export interface ComponentRelations {
  readonly relations: ReadonlySet<string>
  readonly loaded: ReadonlySet<string> | undefined
  /** The viewset has field rules (`fieldAccess`): which fields are served depends on the caller. */
  readonly ruled?: boolean
}

/** The documented components of a viewset named `name` serving `methods` (see {@link ViewsetComponents}). */
export function viewsetComponents (
  entity: JsonSchema,
  name: string,
  key: readonly string[],
  methods: readonly ViewsetMethod[],
  { relations, loaded, ruled = false }: ComponentRelations
): ViewsetComponents {
  const properties = propertiesOf(entity)
  // A whole row is read with every column of the schema and serialized from it: each field is sent (a NULL as
  // null), so each is required, and so are the relations loaded by default.
  // Under field rules, only the key is sure to be served: any other field may be hidden from the caller.
  const required = Object.keys(properties).filter(
    (field) => !ruled && (!relations.has(field) || loaded === undefined || loaded.has(field))
  )
  for (const column of key) if (!required.includes(column) && Object.hasOwn(properties, column)) required.push(column)
  const { required: _required, $id: _id, ...rest } = entity
  const rowProperties = Object.fromEntries(
    Object.entries(properties).map(([field, property]) => [
      field,
      relations.has(field) && !ruled ? wholeRelated(property) : property,
    ])
  )
  const depends = 'The fields served depend on the caller (field rules): only the key is always present.'
  const row = { ...rest, properties: rowProperties, $id: name, required, ...(ruled ? { description: depends } : {}) }
  const partial = {
    ...rest,
    $id: `${name}Partial`,
    description: `Some fields of ${name}: those a \`?fields=\` selection names.`,
  }
  const bodies: Partial<Record<'POST' | 'PUT' | 'PATCH', JsonSchema & { $id: string }>> = {}
  for (const method of ['POST', 'PUT', 'PATCH'] as const) {
    if (!methods.includes(method)) continue
    const body = deriveBody(entity, method === 'PATCH')
    const example = objectExample(body, 0)
    bodies[method] = {
      ...body,
      $id: bodyComponentId(name, method),
      ...(example === undefined ? {} : { examples: [example] }),
    }
  }
  const reads = methods.includes('LIST') || methods.includes('GET')
  const answers = reads || methods.some((method) => method === 'POST' || method === 'PUT' || method === 'PATCH')
  const schemas = [...(answers ? [row] : []), ...(reads ? [partial] : []), ...Object.values(bodies)]
  return { row, partial, bodies, schemas }
}
