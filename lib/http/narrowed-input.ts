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
 * What of an input the route's own validation, which follows, checks as the narrowed schema would: the two schemas
 * share everything around their properties, so an input is valid in the narrowed one exactly when its `alike` names
 * are valid in the route's and its other names in their narrowed schemas (`apart`, checked alone).
 */
export interface NarrowedCheck {
  /** The names whose schema in the narrowed schema is the route's own, spelled alike. */
  readonly alike: ReadonlySet<string>
  /** The narrowed schema's other names, and a validator of those names alone (`undefined`: there are none). */
  readonly apartNames: ReadonlySet<string>
  readonly apart: Validator | undefined
}

/**
 * The check of inputs against `narrow`'s properties where `route`'s are the route's: which names are alike, and a
 * validator of the others alone.
 */
export function narrowedCheck (
  narrow: Record<string, JsonSchema>, route: Record<string, JsonSchema>, httpPart: 'querystring' | 'body'
): NarrowedCheck {
  const alike = new Set<string>()
  const apart: Record<string, JsonSchema> = {}
  for (const [name, property] of Object.entries(narrow)) {
    const own = route[name]
    if (own !== undefined && (own === property || JSON.stringify(own) === JSON.stringify(property))) alike.add(name)
    else apart[name] = property
  }
  const apartNames = new Set(Object.keys(apart))
  const validate = apartNames.size === 0 ? undefined : compile({ type: 'object', properties: apart }, httpPart)
  return { alike, apartNames, apart: validate }
}

/**
 * Whether an input needs no validation against the whole narrowed schema: every name is alike, or one of the others
 * whose values are valid alone. A failing value answers `false`, so the whole schema's errors are the ones reported.
 */
export function checkedApart (input: unknown, check: NarrowedCheck | undefined): boolean {
  if (check === undefined || !isRecord(input)) return false
  let picked: Record<string, unknown> | undefined
  for (const name in input) {
    if (check.alike.has(name)) continue
    if (!check.apartNames.has(name)) return false
    // A copy of the names checked here: the query string's validator coerces what it checks.
    picked ??= {}
    picked[name] = input[name]
  }
  return picked === undefined || check.apart?.(picked) === true
}

/** A validator as the routes' validator compiler makes it (and caches it, by schema text). */
export function compile (schema: JsonSchema, httpPart: 'querystring' | 'body'): Validator {
  return viewsetValidatorCompiler({ schema, httpPart, method: 'GET', url: '' })
}
