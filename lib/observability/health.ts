import fp from 'fastify-plugin'
import { Kysely, sql } from 'kysely'
import { invalidOption, problem } from '../errors.js'
import { viewsetsOf } from '../mount/registry.js'

/**
 * {@link viewsetReadiness}'s options.
 *
 * @example
 * ```ts
 * const options: ViewsetReadinessOptions = { path: '/health/ready', timeout: 1000 }
 * ```
 */
export interface ViewsetReadinessOptions {
  /** The route's path. Default: `'/ready'`. */
  readonly path?: string
  /** Milliseconds each database has to answer `select 1` before the route answers 503. Default: 2000. */
  readonly timeout?: number
}

/** Resolves `false` after `milliseconds`, unless `work` settles first (`true` when it answered). */
async function within (work: Promise<unknown>, milliseconds: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<boolean>((resolve) => { timer = setTimeout(() => { resolve(false) }, milliseconds) })
  try {
    return await Promise.race([work.then(() => true, () => false), late])
  } finally {
    clearTimeout(timer)
  }
}

/** How many of `databases` failed to answer `select 1` within `timeout` milliseconds, all asked at once. */
async function failing (databases: ReadonlyArray<Kysely<unknown>>, timeout: number): Promise<number> {
  const answers = await Promise.all(databases.map(async (db) => await within(sql`select 1`.execute(db), timeout)))
  return answers.filter((answered) => !answered).length
}

function checkedOptions (options: ViewsetReadinessOptions): Required<ViewsetReadinessOptions> {
  const { path = '/ready', timeout = 2000 } = options
  if (typeof path !== 'string' || !path.startsWith('/')) invalidOption('path', "must be a path such as '/ready'")
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0) {
    invalidOption('timeout', 'must be a number of milliseconds above 0')
  }
  return { path, timeout }
}

/**
 * A readiness route for load balancers and Kubernetes probes: `GET /ready` asks each database the application's
 * viewsets use for `select 1`, all at once, each within `timeout` milliseconds, and answers 200
 * `{ "status": "ready", "databases": 2 }`, or 503 `FST_VIEWSET_UNAVAILABLE` (problem+json, `Retry-After: 1`) naming
 * how many did not answer, never which or why. Probes that arrive while one runs share its answer, so a burst of
 * probes sends each database one query. Register it on the root instance; the route is hidden from the docs.
 *
 * @example
 * ```ts
 * import { viewsetReadiness } from 'fastify-viewsets'
 * await app.register(viewsetReadiness, { path: '/ready', timeout: 1000 })
 * // readinessProbe: { httpGet: { path: /ready, port: 3000 } }
 * ```
 */
export const viewsetReadiness = fp<ViewsetReadinessOptions>(
  async function viewsetReadiness (fastify, options) {
    const { path, timeout } = checkedOptions(options)
    let running: Promise<number> | undefined
    fastify.get(path, { schema: { hide: true } }, async (_request, reply) => {
      // Every database once, though several viewsets share it; the registry holds them from startup on.
      const databases = [...new Set(viewsetsOf(fastify).map((entry) => entry.db))]
        .filter((db) => db instanceof Kysely)
      running ??= failing(databases, timeout).finally(() => { running = undefined })
      const failed = await running
      if (failed === 0) return { status: 'ready', databases: databases.length }
      const detail = `${failed} of ${databases.length} databases did not answer within ${timeout} ms`
      return await reply.code(503).header('retry-after', '1').type('application/problem+json')
        .send(problem(503, 'FST_VIEWSET_UNAVAILABLE', detail))
    })
  },
  { fastify: '5.x', name: 'fastify-viewsets-readiness' }
)
