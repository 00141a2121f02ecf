import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Precondition } from '../data/precondition.js'
import { ViewsetErrors } from '../errors.js'
import { currentCancellation } from '../execution/cancellation.js'
import type { JsonSchema } from '../schema/derive.js'
import { documentedHeaders, errorStatuses, problemResponses } from '../schema/openapi.js'
import { isRecord } from '../schema/object-schema.js'
import type { Row } from '../sql.js'
import { preconditionOf } from './conditional-requests.js'
import type { RouteContext } from './route-context.js'
import { collectionParams, elementParams } from './route-schemas.js'
import { hiddenFromRead, hideFields } from './field-hiding.js'
import { jsonType, loadRelations, tagRow } from './row-answers.js'

// What a custom route (or any handler) answers with to be as first-class as a generated one: the If-Match
// condition of a row it writes (412/428 as PATCH answers them), a row or rows through the resource's serializer
// with their relations and ETag, and the OpenAPI schema that documents all of it.

/** Methods that only read: a precondition on them has nothing to guard. */
const reads = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * The If-Match condition of a request that writes one row named by its `:id` (PUT, PATCH, DELETE, or a custom
 * action route such as `POST /:id/close`): the tags of `If-Match`, a 428 at the write under `requireIfMatch`, or
 * `undefined`. Throws `FST_VIEWSET_PRECONDITION_NOT_APPLICABLE` where no row is named or nothing is written, so
 * that a stale `If-Match` can never be ignored silently.
 */
export function requestPrecondition (context: RouteContext, request: FastifyRequest): Precondition | undefined {
  const { method } = request
  const path = request.routeOptions.url ?? request.url
  if (reads.has(method)) {
    throw new ViewsetErrors.PreconditionNotApplicable(method, path, 'a request that reads writes nothing to guard')
  }
  if (!isRecord(request.params) || request.params.id === undefined) {
    throw new ViewsetErrors.PreconditionNotApplicable(
      method, path, 'the route has no :id parameter naming the row whose ETag If-Match is compared with'
    )
  }
  const precondition = preconditionOf(request.headers['if-match'], context.versions.requireIfMatch)
  // The tag compared is of the row as this request's GET serves it: its relations under its rules.
  return precondition?.kind === 'match'
    ? { ...precondition, reader: { request, token: request.viewsetToken, hidden: hiddenOf(context, request) } }
    : precondition
}

/** The fields the caller's GET hides (resolved before the handler, see `customPreHandler`): the tag is without them. */
function hiddenOf (context: RouteContext, request: FastifyRequest): ReadonlySet<string> | undefined {
  return context.hiding === undefined ? undefined : hiddenFromRead(request)
}

/**
 * What a custom route answers, made ready as the generated routes make theirs: its default relations loaded under the
 * request's rules (read where the request's reads go, the primary after a write), and the caller's hidden fields
 * dropped before the tag and the body are made.
 */
async function prepare (context: RouteContext, request: FastifyRequest, rows: Row | Row[]): Promise<void> {
  const { resource, fields } = context
  const scope = currentCancellation()
  if (resource.hasRelations) {
    const db = reads.has(request.method) ? context.readerOf(request) : context.db
    await loadRelations(scope, request, resource, db, rows, fields.defaultRelations)
  }
  if (context.hiding !== undefined) {
    await context.hiding.resolve(request)
    hideFields(request, rows)
  }
}

/**
 * One row as GET serves it: its default relations loaded under the request's rules, its `ETag` set, and its body
 * serialized by the resource's serializer (only the schema's fields), to return from the handler.
 */
export async function representRow (context: RouteContext, reply: FastifyReply, row: Row): Promise<string> {
  await prepare(context, reply.request, row)
  const { etag, body } = tagRow(context, row)
  reply.header('etag', etag).type(jsonType)
  return body
}

/** Rows as LIST serves them: their default relations loaded in one batch per relation, each row serialized. */
export async function representRows (context: RouteContext, reply: FastifyReply, rows: Row[]): Promise<string> {
  await prepare(context, reply.request, rows)
  reply.type(jsonType)
  return `[${rows.map((row) => context.versions.represent(row)).join(',')}]`
}

/**
 * What a custom route's schema documents: {@link customRouteSchema}. `answer` is `'row'` (a row with its `ETag`,
 * the default), `'rows'` (an array of rows) or `'none'` (204).
 *
 * @example
 * ```ts
 * const options: CustomRouteSchemaOptions = { operationId: 'closeIssue', precondition: true }
 * ```
 */
export interface CustomRouteSchemaOptions {
  /** The operation's id in OpenAPI (unique in the document). */
  readonly operationId: string
  readonly summary?: string
  readonly description?: string
  /** An element route (`/:id/…`): `id` is a path parameter typed as the key, and 404 is documented. Default true. */
  readonly element?: boolean
  /** The route checks If-Match (`this.precondition(request)`): the header, 412, and 428 under `requireIfMatch`. */
  readonly precondition?: boolean
  /** What a success answers. Default `'row'`. */
  readonly answer?: 'row' | 'rows' | 'none'
  /** The body the route takes, if any (a TypeBox schema). */
  readonly body?: JsonSchema
  /** The status of a success. Default 200 (204 for `answer: 'none'`). */
  readonly status?: number
}

/**
 * The schema of a custom route of a viewset, documented as its generated routes are: the viewset's tags, the path
 * parameters (the key, and a nested viewset's parent parameters), the answer as the row component with its `ETag`,
 * and its error answers (404 on an element, 412 and 428 with a precondition, 409 and 403 on a write).
 */
export function customRouteSchema (context: RouteContext, method: string, options: CustomRouteSchemaOptions) {
  const { schemas, versions } = context
  const element = options.element ?? true
  const answer = options.answer ?? 'row'
  const writes = !reads.has(method.toUpperCase())
  const statuses = new Set(errorStatuses(element ? (writes ? 'PATCH' : 'GET') : (writes ? 'POST' : 'LIST'), {
    secured: false,
    requireIfMatch: options.precondition === true && versions.requireIfMatch,
  }))
  if (options.precondition !== true) statuses.delete(412)
  if (writes) statuses.add(403)
  if (options.body === undefined) statuses.delete(415)
  const row: JsonSchema = { $ref: `${schemas.components.row.$id}#` }
  const status = options.status ?? (answer === 'none' ? 204 : 200)
  const success: JsonSchema =
    answer === 'none'
      ? { type: 'null', description: 'Done' }
      : answer === 'rows'
        ? { description: 'The rows', type: 'array', items: row }
        : { description: 'The row as stored', ...row, headers: { ETag: documentedHeaders.etag } }
  const schema: Record<string, unknown> = {
    operationId: options.operationId,
    summary: options.summary ?? options.operationId,
    ...(options.description === undefined ? {} : { description: options.description }),
    tags: [...schemas.tags],
    params: element ? elementParams(context) : collectionParams(schemas),
    ...(options.body === undefined ? {} : { body: options.body }),
    response: { [status]: success, ...problemResponses([...statuses].sort((a, b) => a - b)) },
  }
  if (options.precondition === true) {
    schema.headers = {
      type: 'object',
      properties: {
        'if-match': {
          type: 'string',
          description: 'Entity tags (or `*`) the row must match: otherwise a 412 and nothing changes' +
            (versions.requireIfMatch ? ' (a 428 without it).' : '.'),
        },
      },
    }
  }
  if (schema.params === undefined) delete schema.params
  return schema
}
