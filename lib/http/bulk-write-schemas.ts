import type { JsonSchema } from '../schema/derive.js'
import { deriveBody, deriveKeyedPatch } from '../schema/derive.js'
import { documentedHeaders, mergePatchType } from '../schema/openapi.js'
import { exampleOf } from '../schema/components.js'
import type { RouteContext } from './route-context.js'
import { addHeader, baseOf, elementsBody, ref } from './route-schemas.js'
import type { RouteSchema } from './route-schemas.js'

// The schemas of the bulk writes' routes (issue 38 item 1): what they validate, and what OpenAPI says of them.

/** `{"affected": N}`: what a write by filter answers by default. */
export const affectedSchema: JsonSchema = {
  type: 'object',
  properties: { affected: { type: 'integer', minimum: 0, description: 'How many rows were changed' } },
  required: ['affected'],
  additionalProperties: false,
}

/** The `If-Match` of a collection route: only `*`. */
const ifMatchStar: JsonSchema = {
  type: 'string',
  enum: ['*'],
  description: 'Only `*`: an entity tag names one row. With requireIfMatch the write needs it (else a 428), as the ' +
    'acknowledgement that no row\'s version is compared.',
}

/** The `Prefer` header of the writes by filter. */
function preferOf (context: RouteContext): JsonSchema {
  const { maxBulk, maxAffected = maxBulk } = context.schemas
  return {
    type: 'string',
    description: 'RFC 7240 preferences. `max-affected=N`: when more than N rows would change, a 400 naming ' +
      `max-affected and nothing written (at most ${maxAffected}, maxAffected, whatever N). ` +
      `\`return=representation\` answers the rows (more than ${maxBulk}, maxBulk, is a 400, nothing written); ` +
      '`return=minimal` answers 204 with no body.',
    examples: ['max-affected=100', 'return=representation'],
  }
}

/** The rows a bulk write answers, as stored (or, deleted, as they were). */
function rowsOf (context: RouteContext): JsonSchema {
  return { type: 'array', items: ref(context.schemas.components.row.$id) }
}

/**
 * PATCH_MANY (`PATCH {prefix}?<filters>`) and DELETE_MANY (`DELETE {prefix}?<filters>`): LIST's filters (at least
 * one), `Prefer`, `If-Match: *`, and 200 `{"affected": N}` or the rows.
 */
export function manySchema (method: 'PATCH_MANY' | 'DELETE_MANY', context: RouteContext): RouteSchema {
  const { schemas } = context
  const schema = baseOf(method, context)
  if (schemas.list.filters !== undefined) schema.querystring = schemas.list.filters
  if (method === 'PATCH_MANY') {
    const derived = deriveBody(schemas.entity, true)
    const example = exampleOf(derived)
    const body = example === undefined ? derived : { ...derived, examples: [example] }
    schema.body = { content: { 'application/json': { schema: body }, [mergePatchType]: { schema: body } } }
  }
  const verb = method === 'PATCH_MANY' ? 'updated' : 'deleted'
  schema.description = 'The rows the filters select (at least one filter: a filter field, `search` or a group) ' +
    `within the caller's rules are ${verb} in one transaction, all or none; afterWrite runs once per row.`
  schema.response[200] = {
    description: `How many rows were ${verb}, or with \`Prefer: return=representation\` the rows` +
      (method === 'PATCH_MANY' ? ' as stored' : ' as they were'),
    content: { 'application/json': { schema: { anyOf: [affectedSchema, rowsOf(context)] } } },
    headers: { 'Preference-Applied': documentedHeaders.preferenceApplied },
  }
  addHeader(schema, 'prefer', preferOf(context))
  addHeader(schema, 'if-match', ifMatchStar)
  return schema
}

/** BULK_PATCH (`PATCH {prefix}/bulk`): an array of partial rows with their keys, 200 and the rows in element order. */
export function bulkPatchSchema (context: RouteContext): RouteSchema {
  const { schemas } = context
  const schema = baseOf('BULK_PATCH', context)
  // Inline: a `$ref` inside an array is not resolved by the viewset's validator compiler (as BULK's).
  schema.body = elementsBody(deriveKeyedPatch(schemas.entity, schemas.key.columns), schemas.maxBulk,
    `At most ${schemas.maxBulk} elements (maxBulk; more is a 400), each a PATCH body with the ` +
      `${schemas.key.columns.join(', ')} of its row. Written all or none, in one transaction; an error names its ` +
      'element by ' +
      'JSON pointer (`/3/name`), and a row that does not exist (or not for the caller) is a 404 naming `/3`.')
  schema.response[200] = { description: 'The rows as stored, in element order', ...rowsOf(context) }
  schema.description = 'With `Prefer: return=minimal` the answer is a 204 with no body.'
  addHeader(schema, 'if-match', ifMatchStar)
  return schema
}
