import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { FieldError } from '../errors.js'
import { faultProblem, invalidFields, problem, ViewsetErrors } from '../errors.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { acceptPatch } from '../schema/openapi.js'
import { storableTextPattern } from '../schema/list-patterns.js'

interface AjvError {
  instancePath?: string
  schemaPath?: string
  keyword?: string
  message?: string
  params?: Record<string, unknown>
}

function fieldError (error: AjvError, part: string, message?: string, pointer = false): FieldError {
  // An array body (POST /bulk) names its fields by JSON pointer, `/3/name`: `3.name` would read as a field.
  const path = pointer ? (error.instancePath ?? '') : (error.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.')
  const join = (parts: string[]) => (pointer ? parts.join('/') : parts.filter(Boolean).join('.'))
  const params = error.params ?? {}
  if (error.keyword === 'additionalProperties') {
    const field = join([path, String(params.additionalProperty)])
    return {
      in: part,
      field,
      message: part === 'querystring' ? 'is not a supported query parameter' : 'is not a field of this resource',
    }
  }
  if (error.keyword === 'required') {
    return { in: part, field: join([path, String(params.missingProperty)]), message: 'is required' }
  }
  if (error.keyword === 'const' || error.keyword === 'enum') {
    const values = error.keyword === 'const' ? [params.allowedValue] : params.allowedValues
    if (Array.isArray(values)) return { in: part, field: path, message: oneOf(values) }
  }
  if (error.keyword === 'pattern' && params.pattern === storableTextPattern) {
    return { in: part, field: path, message: 'must not contain the NUL character, which the database cannot store' }
  }
  return { in: part, field: path, message: message ?? error.message ?? 'is not valid' }
}

/** `must be one of: open, closed`: strings as they are, other values as JSON (`null`, `3`). */
function oneOf (values: readonly unknown[]): string {
  const names = values.map((value) => (typeof value === 'string' ? value : JSON.stringify(value)))
  return names.length === 1 ? `must be ${names.join('')}` : `must be one of: ${names.join(', ')}`
}

/**
 * The values a failed union allows when each of its branches is a value (`Type.Literal`, `Type.Enum`, an
 * `enum`) or `null`: Ajv reports each branch apart ("must be equal to constant" once per value), the answer
 * names them together. `undefined` when a branch has another constraint, which is then reported as before.
 */
function unionValues (union: AjvError, branches: readonly AjvError[]): unknown[] | undefined {
  const byBranch = new Map<string, AjvError[]>()
  for (const branch of branches) {
    const at = branch.schemaPath?.slice(0, branch.schemaPath.lastIndexOf('/')) ?? ''
    byBranch.set(at, [...(byBranch.get(at) ?? []), branch])
  }
  const values: unknown[] = []
  for (const errors of byBranch.values()) {
    const value = errors.find((error) => error.keyword === 'const' || error.keyword === 'enum')
    if (value !== undefined) {
      const allowed = value.keyword === 'const' ? [value.params?.allowedValue] : value.params?.allowedValues
      if (!Array.isArray(allowed)) return undefined
      values.push(...allowed)
    } else if (errors.every((error) => error.keyword === 'type' && error.params?.type === 'null')) {
      values.push(null)
    } else {
      return undefined
    }
  }
  return union.keyword === 'anyOf' && values.some((value) => value !== null) ? values : undefined
}

/**
 * One field error per failing field. A failed union (such as `string | null`) makes Ajv report each
 * branch and then the union: keep a branch's own constraint (maxLength, ...) when it has one,
 * else say "must be string or null" once.
 */
function fieldErrors (validation: AjvError[], part: string, pointer: boolean): FieldError[] {
  const unions = new Set(validation.filter((error) => error.keyword === 'anyOf').map((error) => error.instancePath))
  const inUnion = (error: AjvError) =>
    unions.has(error.instancePath) && error.keyword !== 'required' && error.keyword !== 'additionalProperties'
  const errors: FieldError[] = []
  for (const error of validation) {
    if (!inUnion(error)) {
      errors.push(fieldError(error, part, undefined, pointer))
    } else if (error.keyword === 'anyOf') {
      const branches = validation.filter(
        (other) => other.instancePath === error.instancePath && other !== error && inUnion(other)
      )
      const constraints = branches.filter((branch) => branch.keyword !== 'type')
      const values = unionValues(error, branches)
      if (values !== undefined) {
        errors.push(fieldError(error, part, oneOf(values), pointer))
      } else if (constraints.length > 0) {
        errors.push(...constraints.map((branch) => fieldError(branch, part, undefined, pointer)))
      } else {
        errors.push(
          fieldError(
            error,
            part,
            `must be ${branches.map((branch) => String(branch.params?.type)).join(' or ')}`,
            pointer
          )
        )
      }
    }
  }
  return errors
}

// Every 4xx of Fastify's own that a client can cause becomes one of our documented codes: no FST_ERR_* reaches a body.
const fastifyCodes: Record<string, (request: FastifyRequest) => FastifyError> = {
  FST_ERR_CTP_INVALID_JSON_BODY: () => new ViewsetErrors.InvalidBody(),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => new ViewsetErrors.InvalidBody(),
  FST_ERR_ROUTE_MISSING_CONTENT: () => new ViewsetErrors.InvalidBody(),
  FST_ERR_CTP_BODY_TOO_LARGE: () => new ViewsetErrors.PayloadTooLarge(),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (request) => unsupportedType(request),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: (request) => unsupportedType(request),
  // A QUERY without Content-Type (RFC 10008 makes it a failure): on a path that no route serves, the 404 it is.
  FST_ERR_ROUTE_MISSING_CONTENT_TYPE: (request) =>
    request.is404
      ? new ViewsetErrors.RouteNotFound(request.method, request.url.split('?')[0])
      : unsupportedType(request),
  FST_ERR_NOT_FOUND: (request) => new ViewsetErrors.RouteNotFound(request.method, request.url.split('?')[0]),
  FST_ERR_BAD_URL: () => new ViewsetErrors.BadUrl(),
  FST_ERR_INVALID_URL: () => new ViewsetErrors.BadUrl(),
  FST_ERR_MAX_PARAM_LENGTH: () => new ViewsetErrors.UriTooLong(),
}

/** The field errors an error carries (`errors`), those that are field errors. */
function fieldErrorList (listed: unknown): FieldError[] | undefined {
  if (!Array.isArray(listed)) return undefined
  return listed.filter((entry): entry is FieldError => typeof entry === 'object' && entry !== null &&
    typeof entry.in === 'string' && typeof entry.field === 'string' && typeof entry.message === 'string')
}

function unsupportedType (request: FastifyRequest): FastifyError {
  return new ViewsetErrors.UnsupportedMediaType(String(request.headers['content-type'] ?? 'none'))
}

/**
 * The error handler of a viewset's scope: every error becomes RFC 9457 problem details with a
 * stable code. Nothing from the database (SQL, parameters, driver text) or a stack reaches the body. With
 * `conflictDetail` `'none'`, every 409 conflict answers only its title-like default detail.
 */
export function problemHandler (dialect: () => ViewsetDialect | undefined, conflictDetail: 'field' | 'none' = 'field') {
  return function handleError (this: unknown, error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    let known: FastifyError | undefined
    let errors: FieldError[] | undefined
    if (error.validation !== undefined) {
      const part = error.validationContext ?? 'body'
      errors = fieldErrors(error.validation, part, part === 'body' && Array.isArray(request.body))
      // The detail names the fields that are listed, not the ones left out.
      known = invalidFields(errors)
    } else if (error.code?.startsWith('FST_VIEWSET_')) {
      known = error
      if (error instanceof ViewsetErrors.Validation || error instanceof ViewsetErrors.Conflict) errors = error.errors
      // A bulk write by key names its missing elements (errors.ts missingRows).
      else if (error instanceof ViewsetErrors.NotFound && 'errors' in error) errors = fieldErrorList(error.errors)
    } else if (error.code !== undefined && fastifyCodes[error.code] !== undefined) {
      known = fastifyCodes[error.code]?.(request)
    } else {
      const fault = dialect()?.classify(error)
      if (fault !== undefined) known = faultProblem(fault, request.method)
      else if (
        typeof error.statusCode === 'number' &&
        error.statusCode >= 400 &&
        error.statusCode < 500 &&
        error.code !== undefined
      ) { known = error }
    }

    // conflictDetail 'none': a conflict says nothing of the constraint, nor of the rows that hold its value.
    if (conflictDetail === 'none' && known instanceof ViewsetErrors.Conflict) {
      known = new ViewsetErrors.Conflict()
      errors = undefined
    }
    const status = known?.statusCode ?? 500
    if (known === undefined || status >= 500) request.log.error({ err: error }, 'viewset request failed')
    if (status === 503) reply.header('retry-after', '1')
    // RFC 5789: a 415 of PATCH says which types it takes.
    if (status === 415 && request.method === 'PATCH') reply.header('accept-patch', acceptPatch)
    const body =
      known === undefined
        ? problem(500, 'FST_VIEWSET_INTERNAL', new ViewsetErrors.Internal().message)
        : problem(status, known.code, known.message, errors)
    return reply.code(status).type('application/problem+json').send(body)
  }
}

/**
 * Fastify answers a few URL errors before it picks a route, so no viewset's error handler sees them:
 * malformed percent-encoding (`/items/%ZZ`) and a path parameter longer than `maxParamLength`. Pass this
 * as Fastify's `frameworkErrors` option to answer them as problem+json like every other error.
 *
 * @example
 * ```ts
 * const app = Fastify({ frameworkErrors: viewsetFrameworkErrors })
 * ```
 */
export function viewsetFrameworkErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const known =
    error.code === 'FST_ERR_BAD_URL'
      ? new ViewsetErrors.BadUrl()
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new ViewsetErrors.UriTooLong()
        : undefined
  if (known === undefined) request.log.error({ err: error }, 'viewset request failed')
  const body =
    known === undefined
      ? problem(500, 'FST_VIEWSET_INTERNAL', new ViewsetErrors.Internal().message)
      : problem(known.statusCode ?? 400, known.code, known.message)
  void reply.code(body.status).type('application/problem+json').send(body)
}

/**
 * 404 for paths under the prefix that match no route; 405 with `Allow` for a served path asked with a method Fastify's
 * router does not know (PROPFIND, PURGE, ...): `allowOf` gives the path's `Allow` (allowed-methods.ts).
 */
export function notFoundHandler (allowOf: (path: string) => string | undefined) {
  return function notFound (request: FastifyRequest, reply: FastifyReply) {
    const path = request.url.split('?')[0] ?? ''
    const allow = allowOf(path)
    const error =
      allow === undefined ? new ViewsetErrors.RouteNotFound(request.method, path) : new ViewsetErrors.MethodNotAllowed()
    if (allow !== undefined) reply.header('allow', allow)
    const status = error.statusCode
    return reply.code(status).type('application/problem+json').send(problem(status, error.code, error.message))
  }
}
