import type { ViewsetMethod } from '../options.js'
import type { JsonSchema } from './derive.js'

/** `$id` of the shared problem-details schema. */
export const problemSchemaId = 'ViewsetProblem'

/**
 * RFC 9457 problem details, as every error of a viewset is sent.
 *
 * @example
 * ```ts
 * app.get('/health', { schema: { response: { 503: problemSchema } } }, health)
 * ```
 */
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
    errorsOmitted: {
      type: 'integer',
      minimum: 1,
      description: 'How many failing fields were left out of errors; absent when none were',
    },
  },
  required: ['type', 'title', 'status', 'detail', 'code'],
}

const errorDescriptions: Record<number, string> = {
  400: 'Invalid request: the `errors` list names the failing fields (at most 50), ' +
    'or the URL is malformed (FST_VIEWSET_BAD_URL)',
  401: 'Missing or invalid bearer token',
  403: 'The token does not allow this operation',
  404: 'No such row',
  409: 'Conflict with a unique or foreign-key constraint',
  412: 'If-Match names a version of the row that is not the stored one: ' +
    'nothing was changed (FST_VIEWSET_PRECONDITION_FAILED)',
  413: 'The body is larger than the limit',
  414: 'A path parameter is longer than the limit (FST_VIEWSET_URI_TOO_LONG)',
  415: 'The body is not JSON, or is sent with a Content-Encoding other than identity',
  422: 'The Idempotency-Key was used for a different request (FST_VIEWSET_IDEMPOTENCY_KEY_REUSED)',
  428: 'This operation needs an If-Match header (FST_VIEWSET_PRECONDITION_REQUIRED)',
  500: 'Unexpected error',
  503: 'The database is unavailable (FST_VIEWSET_UNAVAILABLE) ' +
    'or the statement ran past its timeout (FST_VIEWSET_TIMEOUT)',
}

/**
 * The media type of a `?fields=` answer of GET and LIST: JSON, with a profile (RFC 6906) that says some fields
 * may be left out. A whole row stays `application/json`, so the document gives each its own schema and a client
 * generated from it types a read without `?fields=` as the whole row. A client that accepts `application/json`
 * takes it: a media range without parameters matches the type with any (RFC 9110, section 12.5.1).
 */
export const partialMediaType = 'application/json; profile="urn:fastify-viewsets:partial"'

/** {@link partialMediaType} as it is sent, with the charset that every JSON answer of a viewset names. */
export const partialContentType = 'application/json; charset=utf-8; profile="urn:fastify-viewsets:partial"'

/** RFC 7396's media type, which PATCH accepts besides `application/json`. */
export const mergePatchType = 'application/merge-patch+json'

/** What `Accept-Patch` says on a 415 of PATCH and on OPTIONS of a path that serves PATCH. */
export const acceptPatch = `application/json, ${mergePatchType}`

/** The response headers of the document, as @fastify/swagger reads them (a schema with a description). */
export const documentedHeaders = {
  etag: {
    type: 'string',
    description:
      'Strong entity tag of the row as sent: send it back in If-None-Match (GET) or If-Match (PUT, PATCH, DELETE).',
  },
  location: { type: 'string', description: 'The URL of the created row.' },
  wwwAuthenticate: { type: 'string', description: 'The Bearer challenge (RFC 6750): why the token was refused.' },
  retryAfter: { type: 'integer', minimum: 0, description: 'Seconds to wait before trying again.' },
  acceptPatch: { type: 'string', description: 'The media types PATCH accepts.' },
  preferenceApplied: {
    type: 'string',
    description:
      'RFC 7240: `resolution=merge-duplicates` when the Prefer header merged the request into existing rows ' +
        '(an upsert), `return=minimal` when the answer has no body (both, comma-separated); absent when none applied.',
  },
} as const satisfies Record<string, JsonSchema>

const errorHeaders: Record<number, Record<string, JsonSchema>> = {
  401: { 'WWW-Authenticate': documentedHeaders.wwwAuthenticate },
  403: { 'WWW-Authenticate': documentedHeaders.wwwAuthenticate },
  503: { 'Retry-After': documentedHeaders.retryAfter },
}

/** Documented error responses, serialized as `application/problem+json`, with the headers each one carries. */
export function problemResponses (statuses: readonly number[]): Record<number, JsonSchema> {
  const responses: Record<number, JsonSchema> = {}
  for (const status of statuses) {
    const headers = errorHeaders[status]
    responses[status] = {
      description: errorDescriptions[status] ?? 'Error',
      ...(headers === undefined ? {} : { headers }),
      content: { 'application/problem+json': { schema: { $ref: `${problemSchemaId}#` } } },
    }
  }
  return responses
}

/** What decides which errors a route can answer, besides its method. */
export interface ErrorConditions {
  /** The route needs a bearer token (401, 403). */
  readonly secured: boolean
  /** An open route that verifies a token when one is sent (401). */
  readonly optionalToken?: boolean
  /** PUT, PATCH and DELETE answer 428 without If-Match (`requireIfMatch`). */
  readonly requireIfMatch?: boolean
}

/** The methods whose routes are the collection's (`{prefix}`, `{prefix}/bulk`, `{prefix}/aggregate`), not one row's
 * (`{prefix}/:id`). */
export const collectionMethods: ReadonlySet<ViewsetMethod> = new Set<ViewsetMethod>([
  'LIST', 'POST', 'BULK', 'PATCH_MANY', 'BULK_PATCH', 'DELETE_MANY', 'AGGREGATE',
])

/** The error statuses each method can answer. */
export function errorStatuses (
  method: ViewsetMethod,
  { secured, optionalToken = false, requireIfMatch = false }: ErrorConditions
): number[] {
  const element = !collectionMethods.has(method)
  const write = ['PUT', 'PATCH', 'DELETE', 'RESTORE', 'PURGE'].includes(method)
  // The bulk writes take only `If-Match: *` (no 412), and BULK_PATCH names its missing rows (404).
  const many = method === 'PATCH_MANY' || method === 'BULK_PATCH' || method === 'DELETE_MANY'
  const statuses = [400]
  if (secured) statuses.push(401, 403)
  else if (optionalToken) statuses.push(401)
  // A write by a rule's WITH CHECK is a 403 even on an open route.
  else if (many) statuses.push(403)
  if (element || method === 'BULK_PATCH') statuses.push(404)
  if (method === 'POST' || method === 'BULK' || write || many) statuses.push(409)
  if (write) statuses.push(412)
  // Fastify reads a body sent with any method but GET and HEAD: a DELETE with one too (too large, or not JSON).
  const body = method !== 'LIST' && method !== 'GET' && method !== 'AGGREGATE' && method !== 'HISTORY'
  if (body) statuses.push(413)
  // A path parameter past Fastify's maxParamLength (viewsetFrameworkErrors).
  if (element) statuses.push(414)
  if (body) statuses.push(415)
  if ((write || many) && requireIfMatch) statuses.push(428)
  statuses.push(500, 503)
  return statuses
}

/** `/admin/items` → `AdminItems`: the base of operationIds and component names. */
export function nameFromPrefix (prefix: string, table: string): string {
  const words = (prefix === '' ? table : prefix).split(/[^A-Za-z0-9]+/).filter(Boolean)
  const name = words.map((word) => word[0]?.toUpperCase() + word.slice(1)).join('')
  return /^[A-Za-z]/.test(name) ? name : `R${name}`
}
