import type { FastifySchema } from 'fastify'
import type { JsonSchema } from '../schema/derive.js'
import { documentedHeaders, problemResponses } from '../schema/openapi.js'

// What POST /batch validates and what OpenAPI says of it: the operations (method, path, body, If-Match), the
// results (status, Location, ETag, body), and every error an operation can answer, since the batch answers it.

/** The methods a batch operation may use: the writes (a read inside one transaction would gain nothing). */
export const batchMethods = ['POST', 'PUT', 'PATCH', 'DELETE'] as const

/** One operation: what its single route would be sent, and only `If-Match` of its headers. */
function operationSchema (): JsonSchema {
  return {
    type: 'object',
    properties: {
      method: { type: 'string', enum: [...batchMethods] },
      path: {
        type: 'string',
        minLength: 1,
        maxLength: 2048,
        // RFC 3986's path and query characters (percent-encoded otherwise), never a fragment.
        pattern: "^/[A-Za-z0-9\\-._~!$&'()*+,;=:@%/?]*$",
        description: 'The path of a viewset route, such as /authors or /authors/7 (the prefix included)',
      },
      body: {
        description: 'The body its route takes (absent for DELETE); any value in it may be a reference',
        examples: [{ author_id: { $result: 0, pointer: '/id' } }],
      },
      headers: {
        type: 'object',
        properties: {
          'if-match': {
            type: 'string',
            maxLength: 1024,
            pattern: '^[\\u0020-\\u007e]*$', // a header value's printable ASCII: anything else no request could carry
            description: 'The If-Match header of the operation',
          },
        },
        additionalProperties: false,
      },
    },
    required: ['method', 'path'],
    additionalProperties: false,
  }
}

/** One operation's answer: its status, the Location and ETag its route sent, and its body (null for a 204). */
const resultSchema: JsonSchema = {
  type: 'object',
  properties: {
    status: { type: 'integer' },
    headers: {
      type: 'object',
      properties: { location: documentedHeaders.location, etag: documentedHeaders.etag },
      additionalProperties: false,
    },
    body: { description: 'The body its single route answered, or null when it answered none' },
  },
  required: ['status', 'headers', 'body'],
}

/** Every status an operation may fail with: the batch answers the first failure's. */
const failureStatuses = [400, 401, 403, 404, 405, 409, 412, 413, 415, 428, 500, 503]

/**
 * The route schema of `POST /batch`: at most `maxOperations` operations (more is a 400 naming `/operations`).
 *
 * @example
 * ```ts
 * fastify.post('/batch', { schema: batchSchema(100), attachValidation: true }, handler)
 * ```
 */
export function batchSchema (maxOperations: number): FastifySchema & Record<string, unknown> {
  return {
    operationId: 'batch',
    summary: 'Run several write operations in one transaction',
    description:
      'Runs each operation as its single route would (validation, authentication, rules, hooks), in order, in one ' +
      'transaction: all are written, or none. A body value `{"$result": i, "pointer": "/id"}` is the value at the ' +
      'pointer in operation i\'s result body. A failure answers that operation\'s status, with `errors[].field` ' +
      'starting with `/operations/<index>`.',
    tags: ['batch'],
    body: {
      type: 'object',
      properties: {
        operations: { type: 'array', minItems: 1, maxItems: maxOperations, items: operationSchema() },
      },
      required: ['operations'],
      additionalProperties: false,
    },
    response: {
      200: {
        description: 'Every operation succeeded, and all were committed together',
        type: 'object',
        properties: { results: { type: 'array', items: resultSchema } },
        required: ['results'],
      },
      ...problemResponses(failureStatuses),
    },
  }
}
