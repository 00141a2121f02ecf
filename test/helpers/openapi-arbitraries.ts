// fast-check arbitraries made from an OpenAPI 3.1 document's own schemas: what a Schemathesis-style
// fuzzer sends. Each arbitrary is close to its schema and is then filtered through the document's
// Ajv validator (Contract.validate), so every "valid" value is one the document allows, whatever the
// generator could not express (`not`, lookaheads, cross-keyword bounds).
import fc from 'fast-check'
import type { Arbitrary } from 'fast-check'
import type { Contract, OpenApiDocument, Schema } from './contract.js'

/** The schema a `$ref` names, walking the JSON pointer. */
export function resolveSchema (document: OpenApiDocument, ref: string): Schema | undefined {
  let node: unknown = document
  for (const segment of ref.replace(/^#\//, '').split('/')) {
    // walking a JSON pointer
    node = (node as Record<string, unknown> | undefined)?.[segment.replaceAll('~1', '/').replaceAll('~0', '~')]
  }
  return node as Schema | undefined // a pointer into the document's schemas
}

const safe = Number.MAX_SAFE_INTEGER
const bound = (value: unknown, fallback: number) => (typeof value === 'number' ? value : fallback)

/**
 * An RFC 3339 date-time between 1970 and 2100, in UTC (`Z`) or with any offset RFC 3339 allows (issue 34 item 4:
 * `+23:59` and `-00:00` too).
 */
export const dateTime: Arbitrary<string> = fc
  .tuple(
    fc.date({ min: new Date('1970-01-02T00:00:00Z'), max: new Date('2099-12-30T00:00:00Z'), noInvalidDate: true }),
    fc.oneof(fc.constant('Z'), fc.constant('-00:00'), fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }))
  )
  .map(([date, offset]) => {
    const iso = date.toISOString()
    if (typeof offset === 'string') return offset === 'Z' ? iso : iso.replace('Z', offset)
    const sign = offset < 0 ? '-' : '+'
    const minutes = Math.abs(offset)
    const local = new Date(date.getTime() + offset * 60_000).toISOString().slice(0, -1)
    return `${local}${sign}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`
  })

/** A lookahead (order_by's "no key twice") is beyond fast-check's stringMatching: generate without it. */
function generatorPattern (pattern: string): RegExp {
  return new RegExp(pattern.replace(/^\^\(\?!.*?\\1(?:\(\?:\\\.nulls\(\?:first\|last\)\)\?)?\(\?:,\|\$\)\)/, '^'), 'u')
}

function stringArbitrary (schema: Schema): Arbitrary<unknown> {
  const minLength = bound(schema.minLength, 0)
  const maxLength = Math.min(bound(schema.maxLength, 40), 40)
  if (schema.format === 'date-time') return dateTime
  if (schema.format === 'date') return dateTime.map((value) => value.slice(0, 10))
  if (schema.format === 'email') return fc.emailAddress()
  if (schema.format === 'uri') return fc.webUrl()
  if (typeof schema.pattern === 'string') return fc.stringMatching(generatorPattern(schema.pattern))
  const size = { minLength, maxLength: Math.max(minLength, maxLength) }
  // Mostly printable ASCII, sometimes any code point (well-formed UTF-16: astral, controls, NUL).
  return fc.oneof(
    { weight: 3, arbitrary: fc.string({ ...size, unit: 'grapheme-ascii' }) },
    { weight: 1, arbitrary: fc.string({ ...size, unit: 'binary' }) }
  )
}

function numberArbitrary (schema: Schema, integer: boolean): Arbitrary<unknown> {
  const min = Math.max(bound(schema.minimum, -safe), -safe)
  const max = Math.min(bound(schema.maximum, safe), safe)
  const small = fc.integer({ min: Math.max(min, -1000), max: Math.min(max, 1000) })
  if (integer) return fc.oneof({ weight: 4, arbitrary: small }, { weight: 1, arbitrary: fc.integer({ min, max }) })
  const wide = fc.double({
    min: bound(schema.minimum, -Number.MAX_VALUE),
    max: bound(schema.maximum, Number.MAX_VALUE),
    noNaN: true,
    noDefaultInfinity: true,
  })
  return fc.oneof({ weight: 3, arbitrary: small }, { weight: 2, arbitrary: wide })
}

/** What a request may carry: read-only properties are left out (OpenAPI: "SHOULD NOT be sent"). */
export interface ArbitraryOptions {
  /** Values for integer properties named like foreign keys (`author_id`), so that some writes find their parent. */
  references?: readonly number[]
}

/** An arbitrary close to `schema`; filter it with {@link validOf} to keep only what the document allows. */
export function arbitraryOf (
  document: OpenApiDocument,
  schema: Schema | undefined,
  options: ArbitraryOptions = {},
  depth = 0
): Arbitrary<unknown> {
  if (schema === undefined || depth > 8) return fc.constant(null)
  const next = (inner: unknown) => arbitraryOf(document, inner as Schema, options, depth + 1) // a sub-schema
  if (typeof schema.$ref === 'string') return next(resolveSchema(document, schema.$ref))
  if ('const' in schema) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]))
  const branches = schema.anyOf ?? schema.oneOf
  if (Array.isArray(branches)) return fc.oneof(...branches.map(next))
  if (Array.isArray(schema.allOf)) {
    return fc.tuple(...schema.allOf.map(next)).map((parts) => Object.assign({}, ...parts))
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type]
  if (types.length > 1) {
    return fc.oneof(...types.map((type) => arbitraryOf(document, { ...schema, type }, options, depth)))
  }
  switch (types[0]) {
    case 'object': {
      const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>).filter(
        ([, property]) => property.readOnly !== true
      )
      const record = Object.fromEntries(
        properties.map(([name, property]) => {
          const own = next(property)
          const references = options.references ?? []
          const refers = /_id$/.test(name) && references.length > 0
          return [name, refers ? fc.oneof(fc.constantFrom(...references), own) : own]
        })
      )
      const required = ((schema.required ?? []) as string[]).filter((name) => name in record)
      return fc.record(record, { requiredKeys: required })
    }
    case 'array':
      return fc.array(next(schema.items), {
        minLength: bound(schema.minItems, 0),
        maxLength: Math.min(bound(schema.maxItems, 3), 3),
      })
    case 'integer':
      return numberArbitrary(schema, true)
    case 'number':
      return numberArbitrary(schema, false)
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'string':
      return stringArbitrary(schema)
    default:
      return fc.oneof(fc.constant(null), fc.string(), fc.integer())
  }
}

/** `arbitrary`, keeping only the values the schema at `pointer` of the contract's document accepts. */
export function validOf<T> (contract: Contract, pointer: string, arbitrary: Arbitrary<T>): Arbitrary<T> {
  return arbitrary.filter((value) => contract.validate(pointer, value).length === 0)
}

/** A value of the wrong JSON type for `schema` (a string where a number goes, an object where a string goes…). */
export function wrongTypeOf (document: OpenApiDocument, schema: Schema | undefined): Arbitrary<unknown> {
  const resolved = typeof schema?.$ref === 'string' ? resolveSchema(document, schema.$ref) : schema
  const types = new Set(
    [resolved?.type, ...((resolved?.anyOf ?? resolved?.oneOf ?? []) as Schema[]).map((branch) => branch.type)].flat()
  )
  const candidates: Array<[string, Arbitrary<unknown>]> = [
    ['string', fc.string({ minLength: 1, maxLength: 5 }).map((s) => `x${s}`)],
    ['number', fc.constantFrom(-1.5, 1e300, 0.25)],
    ['integer', fc.constantFrom(-1.5, 0.25)],
    ['boolean', fc.boolean()],
    ['object', fc.constant({ nested: 1 })],
    ['array', fc.constant([1, 'two'])],
    ['null', fc.constant(null)],
  ]
  const wrong = candidates.filter(([type]) => !types.has(type) && !(type === 'integer' && types.has('number')))
  return fc.oneof(...wrong.map(([, arbitrary]) => arbitrary))
}
