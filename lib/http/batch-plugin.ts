import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { dialectOf } from '../dialect/pick-dialect.js'
import { invalidFields, invalidOption, problem, ViewsetErrors } from '../errors.js'
import type { FieldError } from '../errors.js'
import { RequestTransaction } from '../execution/request-transaction.js'
import { rootOf, whenAllRegistered } from '../mount/registry.js'
import type { RegisteredViewset } from '../mount/registry.js'
import type { AnyDatabase } from '../sql.js'
import { problemSchema, problemSchemaId } from '../schema/openapi.js'
import { viewsetValidatorCompiler } from '../schema/validator.js'
import { isRecord } from '../schema/object-schema.js'
import { operationsOf, runOperations } from './batch-dispatch.js'
import { BatchIdempotency } from './batch-idempotency.js'
import type { OperationFailure } from './batch-dispatch.js'
import { resolveBatchOptions } from './batch-options.js'
import type { ViewsetBatchOptions } from './batch-options.js'
import { batchSchema } from './batch-schemas.js'
import { identityBodies } from './content-encoding.js'
import { withIdempotency } from './idempotency.js'
import { problemHandler } from './problem-handler.js'
import { wellFormedJson } from './well-formed-input.js'

// POST /batch (issue 38 item 3): several writes on the app's viewsets in one transaction. The transaction is a
// request transaction (execution/request-transaction.ts) on the one database every viewset writes to: each
// viewset's db hands it every statement the operation runs, and turns the viewset's own transactions (afterWrite,
// a foreign-key check, an upsert) into savepoints of it. On SQLite the batch holds the one connection, so other
// requests wait for it as they would for any write transaction (bounded by createDatabase's connectionTimeout).

/** What the batch needs of the app's viewsets, resolved once they are all registered. */
interface BatchPlan {
  /** The one database every viewset writes to. */
  readonly db: AnyDatabase
  /** Whether a viewset serves a path (its prefix, the nested viewsets' `:param` segments matching one segment). */
  readonly served: (path: string) => boolean
}

/** A viewset prefix as a pattern of the paths under it: `/authors/:author_id/books` matches `/authors/7/books/3`. */
function prefixPattern (prefix: string): RegExp {
  const segments = prefix.split('/').map((segment) =>
    segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^${segments.join('/')}(?:/|$)`)
}

/** The viewsets' prefixes by database, for a message: `/authors, /books (database 1); /logs (database 2)`. */
function byDatabase (entries: readonly RegisteredViewset[]): string {
  const groups = new Map<object, string[]>()
  for (const entry of entries) groups.set(entry.db, [...(groups.get(entry.db) ?? []), entry.prefix || '/'])
  return [...groups.values()].map((prefixes, index) => `${prefixes.join(', ')} (database ${index + 1})`).join('; ')
}

/**
 * The batch's plan from the app's viewsets, or `FST_VIEWSET_INVALID_OPTION` failing `ready()`: no viewset, viewsets
 * over several databases (named), or a viewset whose requests run in a transaction of their own (`rowLevelSecurity`).
 */
function batchPlan (entries: readonly RegisteredViewset[]): BatchPlan {
  const [first] = entries
  if (first === undefined) return invalidOption('viewsetBatch', 'no viewset is registered: register the viewsets first')
  if (entries.some((entry) => entry.db !== first.db)) {
    invalidOption('viewsetBatch', 'runs its operations in one transaction on one database, and the viewsets are over ' +
      `several: ${byDatabase(entries)}. Give them one Kysely instance, or do not register viewsetBatch`)
  }
  const isolated = entries.filter((entry) => entry.rowLevelSecurity === true).map((entry) => entry.prefix)
  if (isolated.length > 0) {
    invalidOption('viewsetBatch', `cannot hold the requests of ${isolated.join(', ')} in its transaction: ` +
      'rowLevelSecurity runs each in one of its own')
  }
  const patterns = entries.map((entry) => prefixPattern(entry.prefix))
  const db: AnyDatabase = first.db as AnyDatabase // the registry keeps each viewset's Kysely instance as an object
  return {
    db,
    served: (path) => {
      const [route = ''] = path.split('?')
      // A dot segment (`/authors/../batch`) would be resolved to another route: only plain paths are served.
      if (route.includes('//') || route.split('/').some((segment) => /^(?:\.|%2e){1,2}$/i.test(segment))) return false
      return patterns.some((pattern) => pattern.test(route))
    },
  }
}

/** Schema errors of the batch body, named by JSON pointer (`/operations/3/method`), as the batch names every field. */
function bodyErrors (validation: ReadonlyArray<Record<string, unknown>>, maxOperations: number): FieldError[] {
  return validation.map((error) => {
    const path = typeof error.instancePath === 'string' ? error.instancePath : ''
    const params = isRecord(error.params) ? error.params : {}
    if (error.keyword === 'maxItems' && path === '/operations') {
      return { in: 'body', field: path, message: `has more than ${maxOperations} operations (maxOperations)` }
    }
    if (error.keyword === 'additionalProperties') {
      return { in: 'body', field: `${path}/${String(params.additionalProperty)}`, message: 'is not allowed here' }
    }
    if (error.keyword === 'required') {
      return { in: 'body', field: `${path}/${String(params.missingProperty)}`, message: 'is required' }
    }
    if (error.keyword === 'enum' && path.endsWith('/method')) {
      return { in: 'body', field: path, message: 'is not the method of a write route (see the batch schema)' }
    }
    return { in: 'body', field: path, message: typeof error.message === 'string' ? error.message : 'is not valid' }
  }).filter((error, index, all) =>
    all.findIndex((other) => other.field === error.field && other.message === error.message) === index)
}

/** Answers the failing operation's status and problem: nothing was written. */
function sendFailure (reply: FastifyReply, failure: OperationFailure): FastifyReply {
  for (const [name, value] of Object.entries(failure.headers)) reply.header(name, value)
  const body = problem(failure.status, failure.code, failure.detail, failure.errors)
  return reply.code(failure.status).type('application/problem+json').send(body)
}

/**
 * Runs the batch in one transaction on `plan.db`: commits when every operation succeeded, else rolls back. With
 * `Idempotency-Key`, the transaction is the one http/idempotency.ts opened for the request (already open here): the
 * operations run in it, and it ends, with the answer stored or not, when the answer is sent.
 */
async function runBatch (app: FastifyInstance, plan: BatchPlan, request: FastifyRequest, reply: FastifyReply) {
  const operations = operationsOf(request.body)
  const authorization = request.headers.authorization
  if (RequestTransaction.isOpen(plan.db)) {
    const outcome = await runOperations(app, operations, authorization, plan.served)
    if ('failure' in outcome) return sendFailure(reply, outcome.failure)
    if (outcome.cookies.length > 0) reply.header('set-cookie', outcome.cookies)
    return { results: outcome.results }
  }
  const trx = await RequestTransaction.open(plan.db)
  let ended = false
  const end = async (commit: boolean) => {
    ended = true
    await trx.end(commit)
  }
  try {
    const outcome = await trx.run(async () => await runOperations(app, operations, authorization, plan.served))
    if ('failure' in outcome) {
      await end(false)
      return sendFailure(reply, outcome.failure)
    }
    await end(true)
    if (outcome.cookies.length > 0) reply.header('set-cookie', outcome.cookies)
    return { results: outcome.results }
  } finally {
    if (!ended) await trx.end(false)
  }
}

/**
 * The atomic batch: registers `POST /batch`, which runs `{"operations": [{"method", "path", "body", "headers":
 * {"if-match"}}]}` on the app's viewsets in one transaction, each operation exactly as its single route (the batch's
 * `Authorization` applied to each), and answers `{"results": [{"status", "headers": {"location", "etag"}, "body"}]}`,
 * or the first failing operation's status with a problem whose `errors[].field` starts with `/operations/<index>`,
 * nothing written. A body value `{"$result": 0, "pointer": "/id"}` is the value at the pointer in operation 0's result
 * body. Register it once, after the viewsets; `ready()` fails when they are over several databases.
 *
 * @example
 * ```ts
 * await app.register(createViewset({ db, table: 'authors', schema: Author }), { prefix: '/authors' })
 * await app.register(createViewset({ db, table: 'books', schema: Book }), { prefix: '/books' })
 * await app.register(viewsetBatch({ maxOperations: 50 }))
 * ```
 */
export function viewsetBatch (options?: ViewsetBatchOptions): FastifyPluginAsync {
  const { maxOperations, idempotency: keys } = resolveBatchOptions(options)
  const plugin: FastifyPluginAsync = async (fastify) => {
    let plan: BatchPlan | undefined
    let dialect: ViewsetDialect | undefined
    whenAllRegistered(fastify, (entries) => { plan = batchPlan(entries) })
    const idempotency = keys === undefined ? undefined : new BatchIdempotency(keys)
    // After the registry's own onReady (the root's hook runs first): the plan is known, and its database with it.
    fastify.addHook('onReady', async () => {
      if (plan === undefined || idempotency === undefined) return
      dialect ??= await dialectOf(plan.db)
      await idempotency.mount(plan.db, dialect)
    })
    if (fastify.getSchema(problemSchemaId) === undefined) fastify.addSchema(problemSchema)
    fastify.setErrorHandler(problemHandler(() => dialect))
    // The viewsets' Ajv: an unknown key (a header other than If-Match) is a 400, never silently dropped.
    fastify.setValidatorCompiler(viewsetValidatorCompiler)
    // JSON only, read and checked as the viewsets read theirs (plugin.ts): text is a 415, not a string body.
    const json = wellFormedJson(fastify.getDefaultJsonParser('error', 'error'))
    fastify.removeContentTypeParser(['application/json', 'text/plain'])
    fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, json)
    fastify.addHook('onRequest', identityBodies)
    fastify.route(withIdempotency({
      method: 'POST',
      url: '/batch',
      schema: batchSchema(maxOperations),
      attachValidation: true,
      onRequest: [
        // A batch inside a batch's transaction would hold a second transaction: refused, whatever path led here
        // (checked before `Idempotency-Key` opens this request's own transaction).
        async () => {
          if (plan !== undefined && RequestTransaction.isOpen(plan.db)) {
            throw new ViewsetErrors.BadRequest('A batch cannot run inside a batch')
          }
        },
        ...(idempotency === undefined ? [] : [idempotency.identifyCaller(fastify)]),
      ],
      handler: async (request, reply) => {
        const { validationError } = request
        if (validationError !== undefined) {
          throw invalidFields(bodyErrors(validationError.validation ?? [], maxOperations))
        }
        if (plan === undefined) throw new TypeError('viewsetBatch serves requests only once the app is ready')
        dialect ??= await dialectOf(plan.db)
        return await runBatch(rootOf(fastify), plan, request, reply)
      },
    }, idempotency))
    otherMethods(fastify)
  }
  return fp(plugin, { fastify: '5.x', name: 'fastify-viewsets:batch', encapsulate: true })
}

/** Every other method on /batch: 405 with `Allow: POST` (OPTIONS: 204), as on a viewset's paths; undocumented. */
function otherMethods (fastify: FastifyInstance): void {
  fastify.route({
    method: ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/batch',
    schema: { hide: true },
    handler: async (request, reply) => {
      reply.header('allow', 'POST')
      if (request.method === 'OPTIONS') return await reply.code(204).send()
      throw new ViewsetErrors.MethodNotAllowed()
    },
  })
}
