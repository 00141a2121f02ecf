import type { ViewsetMethod } from '../options.js'
import type { JsonSchema } from './derive.js'

/** `$id` of the shared problem-details schema. */
export const problemSchemaId = 'ViewsetProblem'

/** RFC 9457 problem details, as every error of a viewset is sent. */
export const problemSchema: JsonSchema = {
  $id: problemSchemaId,
  type: 'object',
  description: 'RFC 9457 problem details',
  properties: {
    type: { type: 'string', description: 'A URN naming the kind of problem' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string', maxLength: 1000 },
    code: { type: 'string', description: 'Stable error code, such as FST_VIEWSET_NOT_FOUND' },
    errors: {
      type: 'array',
      description: 'The failing fields of a validation problem (at most 50; see errorsOmitted)',
      maxItems: 50,
      items: {
        type: 'object',
        properties: { in: { type: 'string' }, field: { type: 'string' }, message: { type: 'string' } },
        required: ['in', 'field', 'message'],
      },
    },
    errorsOmitted: { type: 'integer', minimum: 1, description: 'How many failing fields were left out of errors; absent when none were' },
  },
  required: ['type', 'title', 'status', 'detail', 'code'],
}

const errorDescriptions: Record<number, string> = {
  400: 'Invalid request: the `errors` list names the failing fields (at most 50)',
  401: 'Missing or invalid bearer token',
  403: 'The token does not allow this operation',
  404: 'No such row',
  409: 'Conflict with a unique or foreign-key constraint',
  413: 'The body is larger than the limit',
  415: 'The body is not JSON',
  500: 'Unexpected error',
  503: 'The database is unavailable (FST_VIEWSET_UNAVAILABLE) or the statement ran past its timeout (FST_VIEWSET_TIMEOUT)',
}

/** Documented error responses, serialized as `application/problem+json`. */
export function problemResponses (statuses: readonly number[]): Record<number, JsonSchema> {
  const responses: Record<number, JsonSchema> = {}
  for (const status of statuses) {
    responses[status] = {
      description: errorDescriptions[status] ?? 'Error',
      content: { 'application/problem+json': { schema: { $ref: `${problemSchemaId}#` } } },
    }
  }
  return responses
}

/**
 * The error statuses each method can answer (auth adds 401 and 403 to protected ones, and 401 to open ones
 * that verify a token when one is sent: `optionalToken`).
 */
export function errorStatuses (method: ViewsetMethod, secured: boolean, optionalToken = false): number[] {
  const statuses = [400]
  if (secured) statuses.push(401, 403)
  else if (optionalToken) statuses.push(401)
  if (method !== 'LIST' && method !== 'POST' && method !== 'BULK') statuses.push(404)
  if (method === 'POST' || method === 'BULK' || method === 'PUT' || method === 'PATCH' || method === 'DELETE') statuses.push(409)
  if (method === 'POST' || method === 'BULK' || method === 'PUT' || method === 'PATCH') statuses.push(413, 415)
  statuses.push(500, 503)
  return statuses
}

/** `/admin/items` → `AdminItems`: the base of operationIds and component names. */
export function nameFromPrefix (prefix: string, table: string): string {
  const words = (prefix === '' ? table : prefix).split(/[^A-Za-z0-9]+/).filter(Boolean)
  const name = words.map((word) => word[0]?.toUpperCase() + word.slice(1)).join('')
  return /^[A-Za-z]/.test(name) ? name : `R${name}`
}
