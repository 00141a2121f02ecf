import type { FastifyInstance } from 'fastify'
import type { FieldError } from '../errors.js'
import { invalidFields } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'
import { resolveReferences } from './batch-references.js'

// Each operation of a batch runs through Fastify's own routing (`inject`), so that it is validated, authenticated,
// authorized, ruled, hooked and serialized exactly as its single route, with the batch's Authorization; the batch
// plugin runs this inside its request transaction, where every statement of the viewsets lands.

/** One operation, as the batch body's schema admits it. */
export interface BatchOperation {
  readonly method: string
  readonly path: string
  readonly body?: unknown
  readonly ifMatch?: string | undefined
}

/** One operation's answer, as the batch's 200 lists it. */
export interface OperationResult {
  readonly status: number
  readonly headers: { location?: string; etag?: string }
  readonly body: unknown
}

/** The first operation that failed: the status and problem the batch answers, errors named under its pointer. */
export interface OperationFailure {
  readonly status: number
  readonly code: string
  readonly detail: string
  readonly errors: readonly FieldError[]
  /** `Retry-After` and `WWW-Authenticate` of its answer, which the batch's answer carries. */
  readonly headers: Readonly<Record<string, string>>
}

/** The operations of a body that passed the schema (a typed copy: the schema already said each field's type). */
export function operationsOf (body: unknown): BatchOperation[] {
  const operations = isRecord(body) && Array.isArray(body.operations) ? body.operations : []
  return operations.filter(isRecord).map((operation) => {
    const headers = isRecord(operation.headers) ? operation.headers : {}
    const ifMatch = typeof headers['if-match'] === 'string' ? headers['if-match'] : undefined
    return {
      method: String(operation.method),
      path: String(operation.path),
      ...('body' in operation ? { body: operation.body } : {}),
      ifMatch,
    }
  })
}

/** An answer's body: its JSON, or null when it has none. */
function bodyOf (payload: string, type: unknown): unknown {
  if (payload === '' || typeof type !== 'string' || !type.includes('json')) return payload === '' ? null : payload
  try {
    const parsed: unknown = JSON.parse(payload)
    return parsed
  } catch {
    return payload
  }
}

/** A JSON pointer made of a field error's name: `/3/title` as it is, `author.name` as `/author/name`. */
function pointerOf (field: string): string {
  if (field === '' || field.startsWith('/')) return field
  return `/${field.split('.').map((token) => token.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`
}

/** Where an operation's failing field is in the batch body: its body, its If-Match, or its path. */
function batchField (index: number, error: Record<string, unknown>): FieldError {
  const at = `/operations/${index}`
  const field = typeof error.field === 'string' ? error.field : ''
  const message = typeof error.message === 'string' ? error.message : 'is not valid'
  switch (error.in) {
    case 'body':
      return { in: 'body', field: `${at}/body${pointerOf(field)}`, message }
    case 'headers':
      return { in: 'body', field: `${at}/headers${pointerOf(field)}`, message }
    case 'params':
    case 'querystring':
      return { in: 'body', field: `${at}/path`, message: `${field} ${message}`.trim() }
    default:
      return { in: 'body', field: at, message }
  }
}

/** The batch's problem for operation `index`, which answered `status` with `answer` (a problem, usually). */
function failureOf (index: number, operation: BatchOperation, status: number, answer: unknown,
  headers: Record<string, unknown>): OperationFailure {
  const problem = isRecord(answer) ? answer : {}
  const said = typeof problem.detail === 'string' ? problem.detail : 'The operation failed'
  const listed = Array.isArray(problem.errors) ? problem.errors.filter(isRecord) : []
  const errors = listed.length === 0
    ? [{ in: 'body', field: `/operations/${index}`, message: said }]
    : listed.map((error) => batchField(index, error))
  const carried: Record<string, string> = {}
  for (const name of ['retry-after', 'www-authenticate']) {
    const value = headers[name]
    if (typeof value === 'string') carried[name] = value
  }
  return {
    status,
    code: typeof problem.code === 'string' ? problem.code : 'FST_VIEWSET_INTERNAL',
    detail: `Operation ${index} (${operation.method} ${operation.path}) failed, nothing was written: ${said}`,
    errors,
    headers: carried,
  }
}

/**
 * Runs the operations one after another through `app`'s routes, each body's references resolved against the
 * results before it; stops at the first failure. `served(path)` says whether a viewset serves the path: any other
 * path (the batch route itself included) is a 400 naming `/operations/<index>/path`, before anything runs.
 *
 * @example
 * ```ts
 * const outcome = await trx.run(() => runOperations(app, operations, request.headers.authorization, served))
 * ```
 */
export async function runOperations (
  app: FastifyInstance,
  operations: readonly BatchOperation[],
  authorization: string | undefined,
  served: (path: string) => boolean
): Promise<{ results: OperationResult[]; cookies: string[] } | { failure: OperationFailure }> {
  const unserved = operations.flatMap((operation, index) => served(operation.path)
    ? []
    : [{ in: 'body', field: `/operations/${index}/path`, message: 'is not the path of a viewset route' }])
  if (unserved.length > 0) throw invalidFields(unserved)
  const results: OperationResult[] = []
  // The cookies the routes set (a replica's read-after-write window): the batch's answer sets them.
  const cookies: string[] = []
  for (const [index, operation] of operations.entries()) {
    const bodies = results.map((result) => result.body)
    const body = 'body' in operation
      ? resolveReferences(operation.body, `/operations/${index}/body`, index, { bodies })
      : undefined
    const headers: Record<string, string> = {
      ...(authorization === undefined ? {} : { authorization }),
      ...(operation.ifMatch === undefined ? {} : { 'if-match': operation.ifMatch }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    }
    const payload = body === undefined ? {} : { payload: JSON.stringify(body) }
    const method = batchMethod(operation.method)
    const response = await app.inject({ method, url: operation.path, headers, ...payload })
    const answer = bodyOf(response.payload, response.headers['content-type'])
    if (response.statusCode >= 400) {
      return { failure: failureOf(index, operation, response.statusCode, answer, response.headers) }
    }
    const { location, etag } = response.headers
    cookies.push(...[response.headers['set-cookie'] ?? []].flat())
    results.push({
      status: response.statusCode,
      headers: {
        ...(typeof location === 'string' ? { location } : {}),
        ...(typeof etag === 'string' ? { etag } : {}),
      },
      body: answer,
    })
  }
  return { results, cookies }
}

/** The method as inject types it: the schema admitted only these. */
function batchMethod (method: string): 'POST' | 'PUT' | 'PATCH' | 'DELETE' {
  switch (method) {
    case 'PUT':
    case 'PATCH':
    case 'DELETE':
      return method
    default:
      return 'POST'
  }
}
