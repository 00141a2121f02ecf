import type { FastifySchemaCompiler } from 'fastify'
import { ViewsetErrors } from '../errors.js'
import { isRecord } from './object-schema.js'

// Fastify names neither type in its exports: what a validator compiler is given, and what it returns.
type RouteSchema = Parameters<FastifySchemaCompiler<unknown>>[0]
type Validator = ReturnType<FastifySchemaCompiler<unknown>>

/**
 * Whether `schema` holds a `$ref` or an `$id` at any depth: Ajv resolves and registers those only when it compiles,
 * so only compiling finds a wrong one (the meta-schema check that a generated schema's fields pass at startup, through
 * the row's serializer, does not).
 *
 * @example
 * ```ts
 * holdsIdentifiers({ type: 'object', properties: { tag: { $ref: 'Tag#' } } }) // true
 * ```
 */
export function holdsIdentifiers (schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.some(holdsIdentifiers)
  if (!isRecord(schema)) return false
  for (const key of Object.keys(schema)) {
    const value = schema[key]
    if ((key === '$ref' || key === '$id') && typeof value === 'string') return true
    if (typeof value === 'object' && holdsIdentifiers(value)) return true
  }
  return false
}

/** `compile`'s validator of `route`; one that fails it, as a 500 that says nothing, if `route` does not compile. */
function compiledOrFailing (
  compile: FastifySchemaCompiler<unknown>,
  route: RouteSchema
): Validator {
  try {
    return compile(route)
  } catch (error) {
    // A generated schema that does not compile is the library's bug: the request's log holds Ajv's message as the
    // error's cause, the answer only FST_VIEWSET_INTERNAL.
    return () => {
      const internal = new ViewsetErrors.Internal()
      internal.cause = error
      throw internal
    }
  }
}

/**
 * `compile`'s validator of `route`, compiled by the first call instead of now: Fastify compiles every route's
 * validators when the app starts, and for generated routes that was a tenth of a start (the first compile of a
 * process warms Ajv's code generator; benchmarks/analysis.md). The first call validates as the compiled validator
 * does, with its `errors`; each later call is one more function call.
 *
 * @example
 * ```ts
 * const validate = onFirstUse(viewsetValidatorCompiler, { schema, httpPart: 'body', method: 'POST', url: '/items' })
 * ```
 */
export function onFirstUse (
  compile: FastifySchemaCompiler<unknown>,
  route: RouteSchema
): Validator {
  let validate: Validator | undefined
  const lazy: Validator = (data: unknown) => {
    validate ??= compiledOrFailing(compile, route)
    const result = validate(data)
    // Fastify reads the errors of the function it called, right after the call.
    lazy.errors = validate.errors ?? null
    return result
  }
  return lazy
}
