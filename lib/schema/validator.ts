import { Ajv } from 'ajv'
import type { Options, ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify'
import { LruCache } from '../execution/lru-cache.js'
import { holdsIdentifiers, onFirstUse } from './lazy-validator.js'
import { documentingPatterns } from './list-patterns.js'
import { isRecord } from './object-schema.js'

// CommonJS: under ESM its default import is module.exports, which sets `default` to the same plugin
const addFormats = addFormatsModule.default

const common: Options = {
  allErrors: true, // list every failing field, not only the first
  removeAdditional: false, // unknown fields are a 400 that names them, never silently dropped
  useDefaults: true,
  strict: false, // OpenAPI keywords such as `example` are allowed in schemas
}

function build (options: Options): Ajv {
  const ajv = new Ajv({ ...common, ...options })
  addFormats(ajv)
  return ajv
}

let bodies: Ajv | undefined
let strings: Ajv | undefined
let compiles = 0

/**
 * How many validators this process has compiled (each call of {@link compileFor}): what tests read to tell when a
 * route's validators were compiled, at startup or on its first request.
 *
 * @example
 * ```ts
 * const before = compiledValidators(); await app.ready(); assert.equal(compiledValidators(), before)
 * ```
 */
export function compiledValidators (): number {
  return compiles
}

/** The one spelling of an integer in a URL: decimal, no sign but `-`, no leading zero, no blank. */
export const canonicalIntegerPattern = '^-?(0|[1-9][0-9]*)$'
const canonicalInteger = new RegExp(canonicalIntegerPattern)

/** Whether a schema admits integers (an integer, or a union with one). */
export function admitsInteger (schema: unknown): boolean {
  if (!isRecord(schema)) return false
  const { type, anyOf } = schema
  if (type === 'integer' || (Array.isArray(type) && type.includes('integer'))) return true
  return Array.isArray(anyOf) && anyOf.some(admitsInteger)
}

/** The 400 of a non-canonical integer, as Ajv reports a failing value. */
export function nonCanonicalError (instancePath: string): FastifySchemaValidationError & { message: string } {
  return {
    instancePath,
    schemaPath: '#/type',
    keyword: 'type',
    message: 'must be an integer in decimal (such as 12 or -3: no sign +, leading zero, exponent, hex or blank)',
    params: {},
  }
}

/** Whether a URL value may be read as an integer: Ajv's coercion alone would take `0x1`, `1e0`, `+1` or a blank. */
export function isCanonicalInteger (value: string): boolean {
  return canonicalInteger.test(value)
}

/** A validator of strings, with Fastify's validation errors. */
export type StringValidator = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null }

/**
 * Whether an Ajv error gives way to the handler's own check: LIST's `offset` past its documented `maximum`
 * (maxOffset) is refused by parsePagination, whose 400 says to page further with a cursor.
 */
function deferred (error: FastifySchemaValidationError): boolean {
  if (error.keyword === 'pattern') return documentingPatterns.has(String(error.params.pattern))
  return error.keyword === 'maximum' && error.instancePath === '/offset'
}

/** `validate`, where the errors that give way to the handler's checks ({@link deferred}) do not fail the request. */
function deferring (validate: StringValidator): StringValidator {
  const checked: StringValidator = (data) => {
    if (validate(data)) {
      checked.errors = null
      return true
    }
    const errors = (validate.errors ?? []).filter((error) => !deferred(error))
    checked.errors = errors.length === 0 ? null : errors
    return errors.length === 0
  }
  return checked
}

/** A path or query validator that first refuses integers not written canonically, then coerces as Ajv does. */
function canonicalIntegers (schema: Record<string, unknown>, compiled: StringValidator): StringValidator {
  const properties = schema.properties
  const validate = deferring(compiled)
  const keys = isRecord(properties)
    ? Object.entries(properties)
      .filter(([, property]) => admitsInteger(property))
      .map(([key]) => key)
    : []
  if (keys.length === 0) return validate
  const checked: StringValidator = (data) => {
    for (const key of keys) {
      const value: unknown = isRecord(data) ? data[key] : undefined
      if (typeof value === 'string' && !isCanonicalInteger(value)) {
        checked.errors = [nonCanonicalError(`/${key}`)]
        return false
      }
    }
    const valid = validate(data)
    checked.errors = validate.errors ?? null
    return valid
  }
  return checked
}

/**
 * Compiles `schema` with the library's one Ajv setup, by what is validated. Bodies are JSON and keep their
 * types: no coercion, so that an explicit `null` stays `null`. Path and query values (`'strings'`) are strings
 * and are coerced to the schema's types. The two instances are shared by every viewset. Every schema is
 * checked against JSON Schema's meta-schema by the bodies' instance only: each instance compiles a validator of
 * the meta-schema on its first check, a startup cost paid once (benchmarks/analysis.md#ajv-meta-schema).
 *
 * @example
 * ```ts
 * const validate = compileFor('strings', { type: 'object', properties: { value: { type: 'integer' } } })
 * ```
 */
export function compileFor (part: 'body' | 'strings', schema: Record<string, unknown>): ValidateFunction {
  compiles++
  bodies ??= build({ coerceTypes: false })
  if (part === 'body') return bodies.compile(schema)
  bodies.validateSchema(schema, true) // throws, naming what is wrong
  strings ??= build({ coerceTypes: true, validateSchema: false })
  return strings.compile(schema)
}

// Compiled validators by part and schema text. Fastify compiles each route's schemas on its own: the same
// id parameter, empty query and body come back on many routes (HEAD beside GET, PUT beside PATCH, every
// viewset's `:id`), and Ajv's own cache knows a schema only by object identity. Compiling was most of
// `app.ready()`. A validator keeps no state between calls but its `errors`, read right after the call.
const compiled = new LruCache<string, StringValidator>(1024)

/**
 * A validator of path or query strings, as the viewset's routes validate theirs: coerced to the schema's types,
 * integers written canonically. Its `errors` are read right after a call.
 *
 * @example
 * ```ts
 * const validate = stringsValidator({ type: 'object', properties: { tag_id: { type: 'integer' } } })
 * ```
 */
export function stringsValidator (schema: Record<string, unknown>): StringValidator {
  return canonicalIntegers(schema, compileFor('strings', schema))
}

/**
 * The viewset's validator compiler: {@link compileFor} the body, or the strings of the path and query,
 * where integers must also be written canonically.
 */
export const viewsetValidatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  // Fastify hands over the route's schema as given; the viewset's are plain JSON Schema objects.
  if (!isRecord(schema)) throw new TypeError(`expected a JSON Schema object for the ${httpPart ?? 'request'}`)
  const part = httpPart === 'body' ? 'body' : 'strings'
  const key = `${part} ${JSON.stringify(schema)}`
  let validate = compiled.get(key)
  if (validate === undefined) {
    validate = part === 'body' ? compileFor('body', schema) : canonicalIntegers(schema, compileFor('strings', schema))
    compiled.set(key, validate)
  }
  return validate
}

/**
 * {@link viewsetValidatorCompiler}, where a schema that is only a `$ref` to one of `components` (a body
 * component, `{ $ref: 'ItemsCreate#' }`) is compiled as that component: the document shows the component,
 * and the shared Ajv instance never sees the same `$id` twice. `'on first use'` (the generated routes) compiles each
 * validator on the first request that needs it ({@link onFirstUse}), except a schema that holds a `$ref` or an `$id`
 * ({@link holdsIdentifiers}): only compiling checks those, and a wrong one must fail `app.ready()`.
 *
 * @example
 * ```ts
 * fastify.setValidatorCompiler(componentsValidatorCompiler([{ $id: 'ItemsCreate', type: 'object' }]))
 * ```
 */
export function componentsValidatorCompiler (
  components: ReadonlyArray<Record<string, unknown>>,
  when: 'now' | 'on first use' = 'now'
): FastifySchemaCompiler<unknown> {
  const byRef = new Map(components.map(({ $id, ...schema }) => [`${String($id)}#`, schema]))
  return (route) => {
    const schema: unknown = route.schema
    const ref = typeof schema === 'object' && schema !== null && '$ref' in schema ? schema.$ref : undefined
    const component = typeof ref === 'string' ? byRef.get(ref) : undefined
    const resolved = component === undefined ? route : { ...route, schema: component }
    if (when === 'now' || holdsIdentifiers(resolved.schema)) return viewsetValidatorCompiler(resolved)
    return onFirstUse(viewsetValidatorCompiler, resolved)
  }
}
