import { Ajv } from 'ajv'
import type { Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import { isRecord } from './object-schema.js'

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default // CommonJS: under ESM its default export arrives wrapped

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

/**
 * The library's one Ajv setup, by what is validated. Bodies are JSON and keep their types: no coercion,
 * so that an explicit `null` stays `null`. Path and query values (`'strings'`) are strings and are coerced
 * to the schema's types. The instances are shared by every viewset (they only cache compiled validators).
 *
 * @example
 * ```ts
 * const validate = validatorFor('strings').compile({ type: 'object', properties: { value: { type: 'integer' } } })
 * ```
 */
export function validatorFor (part: 'body' | 'strings'): Ajv {
  return part === 'body'
    ? (bodies ??= build({ coerceTypes: false }))
    : (strings ??= build({ coerceTypes: true }))
}

/** The viewset's validator compiler: {@link validatorFor} the body, or the strings of the path and query. */
export const viewsetValidatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  // Fastify hands over the route's schema as given; the viewset's are plain JSON Schema objects.
  if (!isRecord(schema)) throw new TypeError(`expected a JSON Schema object for the ${httpPart ?? 'request'}`)
  return validatorFor(httpPart === 'body' ? 'body' : 'strings').compile(schema)
}

/**
 * {@link viewsetValidatorCompiler}, where a schema that is only a `$ref` to one of `components` (a body
 * component, `{ $ref: 'ItemsCreate#' }`) is compiled as that component: the document shows the component,
 * and the shared Ajv instance never sees the same `$id` twice.
 */
export function componentsValidatorCompiler (components: ReadonlyArray<Record<string, unknown>>): FastifySchemaCompiler<unknown> {
  const byRef = new Map(components.map(({ $id, ...schema }) => [`${String($id)}#`, schema]))
  return (route) => {
    const schema: unknown = route.schema
    const ref = typeof schema === 'object' && schema !== null && '$ref' in schema ? schema.$ref : undefined
    const component = typeof ref === 'string' ? byRef.get(ref) : undefined
    return viewsetValidatorCompiler(component === undefined ? route : { ...route, schema: component })
  }
}
