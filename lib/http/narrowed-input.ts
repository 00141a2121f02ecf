import type { FastifySchemaValidationError } from 'fastify'
import type { FieldView } from '../query/field-access.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import { viewsetValidatorCompiler } from '../schema/validator.js'

// The input of a request under field rules, checked against schemas without the names its caller may not read
// (http/field-hiding.ts): the narrowed schemas, their validators, and the names they check as the route's own do.

/** A validator as the routes' validator compiler makes it. */
export type Validator = ReturnType<typeof viewsetValidatorCompiler>

/** The schema fields of an entity without `hidden`, and with `readOnly` marked read-only. */
export function narrowed (entity: JsonSchema, view: FieldView): JsonSchema {
  const properties: Record<string, JsonSchema> = {}
  for (const [name, property] of Object.entries(propertiesOf(entity))) {
    if (view.hidden.has(name)) continue
    properties[name] = view.readOnly.has(name) ? { ...property, readOnly: true } : property
  }
  const required: unknown[] = Array.isArray(entity.required) ? entity.required : []
  return { ...entity, properties, required: required.filter((name) => typeof name === 'string' && name in properties) }
}

/** The error Fastify's validation raises, so that the problem handler answers it alike. */
export function validationError (errors: FastifySchemaValidationError[], part: string): Error {
  return Object.assign(new Error(`${part} is not valid`), {
    statusCode: 400, code: 'FST_ERR_VALIDATION', validation: errors, validationContext: part,
  })
}

/**
 * The names whose schema in `narrow` is the route's own (`route`), spelled alike: the names the route's validation
 * checks as the narrowed one does. The two query strings share everything around their properties.
 */
export function alikeNames (
  narrow: Record<string, JsonSchema>, route: Record<string, JsonSchema>
): ReadonlySet<string> {
  const alike = new Set<string>()
  for (const [name, property] of Object.entries(narrow)) {
    const own = route[name]
    if (own !== undefined && (own === property || JSON.stringify(own) === JSON.stringify(property))) alike.add(name)
  }
  return alike
}

/** Whether every name of an input is one the route's validation checks alike: this check may then be skipped. */
export function checkedAlike (input: unknown, alike: ReadonlySet<string> | undefined): boolean {
  if (alike === undefined || !isRecord(input)) return false
  for (const name in input) if (!alike.has(name)) return false
  return true
}

/** A validator as the routes' validator compiler makes it (and caches it, by schema text). */
export function compile (schema: JsonSchema, httpPart: 'querystring' | 'body'): Validator {
  return viewsetValidatorCompiler({ schema, httpPart, method: 'GET', url: '' })
}
