import fp from 'fastify-plugin'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { bulkheadChannel, cacheChannel, handlerChannel, statementChannel } from './channels.js'
import type { HandlerContext, StatementContext } from './channels.js'
import { countStatements } from './request-statements.js'
import { watchedPools } from './pools.js'
import type { PoolFigures } from './pools.js'

/**
 * {@link viewsetMetrics}'s options.
 *
 * @example
 * ```ts
 * await app.register(viewsetMetrics, { registry: promClient.register, path: false })
 * ```
 */
export interface ViewsetMetricsOptions {
  /** The prom-client registry the metrics join. Default: a registry of their own. */
  readonly registry?: Registry
  /** The route that serves the registry in Prometheus' text format, or `false` for none. Default: `'/metrics'`. */
  readonly path?: string | false
}

/** A gauge of one figure of the open pools, summed by database (several pools may open one), read at scrape. */
function poolGauge (registers: Registry[], figure: keyof PoolFigures, name: string, help: string) {
  return new Gauge({
    name,
    help,
    labelNames: ['dialect', 'database'] as const,
    registers,
    collect () {
      this.reset()
      for (const { dialect, database, figures } of watchedPools()) this.inc({ dialect, database }, figures[figure])
    },
  })
}

/** The metrics read at scrape or published outside handler runs: pools, statement caches, the heavy-request queue. */
function resourceMetricsOf (registers: Registry[]) {
  const pool = 'fastify_viewsets_pool_'
  poolGauge(registers, 'inUse', `${pool}connections_in_use`, 'Pooled connections handed out, by database')
  poolGauge(registers, 'idle', `${pool}connections_idle`, 'Open pooled connections not in use, by database')
  poolGauge(registers, 'waiting', `${pool}waiting`, 'Callers waiting for a pooled connection, by database')
  return {
    cache: new Counter({
      name: 'fastify_viewsets_statement_cache_events_total',
      help: 'Statement cache lookups and evictions, by cache (compiled, sqlite-prepared, postgres-prepared) and event',
      labelNames: ['cache', 'event'] as const,
      registers,
    }),
    queueDepth: new Gauge({
      name: 'fastify_viewsets_heavy_queue_depth',
      help: 'Heavy requests waiting for a connection, by database kind',
      labelNames: ['dialect'] as const,
      registers,
    }),
    rejections: new Counter({
      name: 'fastify_viewsets_heavy_rejections_total',
      help: 'Heavy requests answered 503 because their queue was full, by database kind',
      labelNames: ['dialect'] as const,
      registers,
    }),
  }
}

/** Subscribes the cache and queue metrics to their channels; returns the function that unsubscribes. */
function watchResources (registers: Registry[]): () => void {
  const metrics = resourceMetricsOf(registers)
  const cached = (message: unknown): void => {
    const { cache, event } = fieldsOf(message)
    if (typeof cache === 'string' && typeof event === 'string') metrics.cache.inc({ cache, event })
  }
  const queued = (message: unknown): void => {
    const { dialect, event, depth } = fieldsOf(message)
    if (typeof dialect !== 'string') return
    if (typeof depth === 'number') metrics.queueDepth.set({ dialect }, depth)
    if (event === 'rejected') metrics.rejections.inc({ dialect })
  }
  cacheChannel.subscribe(cached)
  bulkheadChannel.subscribe(queued)
  return () => {
    cacheChannel.unsubscribe(cached)
    bulkheadChannel.unsubscribe(queued)
  }
}

/** A channel message's fields, read without trusting its publisher. */
function fieldsOf (message: unknown): { cache?: unknown, event?: unknown, dialect?: unknown, depth?: unknown } {
  return typeof message === 'object' && message !== null ? message : {}
}

/** The metrics, each labelled with bounded values only: tables, methods, operations, databases, codes. */
function metricsOf (registers: Registry[]) {
  return {
    requests: new Histogram({
      name: 'fastify_viewsets_request_duration_seconds',
      help: 'Duration of viewset handler runs, relations included, by viewset and method',
      labelNames: ['viewset', 'method'] as const,
      registers,
    }),
    requestStatements: new Counter({
      name: 'fastify_viewsets_request_statements_total',
      help: 'SQL statements run by viewset handlers, by viewset and method',
      labelNames: ['viewset', 'method'] as const,
      registers,
    }),
    statements: new Histogram({
      name: 'fastify_viewsets_statement_duration_seconds',
      help: 'Duration of SQL statements, by database and operation',
      labelNames: ['dialect', 'operation'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    unavailable: new Counter({
      name: 'fastify_viewsets_unavailable_total',
      help: 'Requests answered 503, by reason (the database fault kind: unavailable, timeout)',
      labelNames: ['reason'] as const,
      registers,
    }),
  }
}

/**
 * Prometheus metrics of the viewsets (with prom-client, an optional peer): `fastify_viewsets_request_duration_seconds`
 * and `fastify_viewsets_request_statements_total` by viewset and method, `fastify_viewsets_statement_duration_seconds`
 * by database and operation, `fastify_viewsets_unavailable_total` by reason; the pools of the databases createDatabase
 * opened (`fastify_viewsets_pool_connections_in_use`, `_idle`, `fastify_viewsets_pool_waiting`, by dialect and database
 * without credentials), `fastify_viewsets_statement_cache_events_total` by cache and event (hit, miss, eviction), and
 * the heavy-request queue (`fastify_viewsets_heavy_queue_depth`, `fastify_viewsets_heavy_rejections_total`); served at
 * `/metrics` unless `path` says otherwise. The channels and pools are process-wide: the metrics count the viewsets and
 * databases of every application in the process.
 *
 * @example
 * ```ts
 * import { viewsetMetrics } from 'fastify-viewsets/metrics'
 * await app.register(viewsetMetrics, { path: '/metrics' })
 * ```
 */
export const viewsetMetrics = fp<ViewsetMetricsOptions>(
  async function viewsetMetrics (fastify, options) {
    const registry = options.registry ?? new Registry()
    const path = options.path ?? '/metrics'
    const metrics = metricsOf([registry])
    const starts = new WeakMap<HandlerContext, number>()
    const finished = (context: HandlerContext): void => {
      const labels = { viewset: context.viewset, method: context.method }
      const start = starts.get(context)
      if (start !== undefined) metrics.requests.observe(labels, (performance.now() - start) / 1000)
      metrics.requestStatements.inc(labels, context.statements ?? 0)
      const { problem } = context
      if (problem?.status === 503) metrics.unavailable.inc({ reason: problem.fault ?? problem.code })
    }
    const handlers = {
      start (context: HandlerContext) { starts.set(context, performance.now()) },
      end (context: HandlerContext) { if (context.pending !== true) finished(context) },
      asyncStart () {},
      asyncEnd: finished,
      error () {},
    }
    const statementDone = (context: StatementContext): void => {
      const seconds = (performance.now() - context.startTime) / 1000
      metrics.statements.observe({ dialect: context.dialect, operation: context.operation }, seconds)
    }
    const statements = {
      start () {},
      end (context: StatementContext) { if (context.pending !== true) statementDone(context) },
      asyncStart () {},
      asyncEnd: statementDone,
      error () {},
    }
    const stopCounting = countStatements()
    const stopWatching = watchResources([registry])
    handlerChannel.subscribe(handlers)
    statementChannel.subscribe(statements)
    fastify.addHook('onClose', async () => {
      stopCounting()
      stopWatching()
      handlerChannel.unsubscribe(handlers)
      statementChannel.unsubscribe(statements)
    })
    if (path !== false) {
      fastify.get(path, { schema: { hide: true } }, async (_request, reply) => {
        return await reply.type(registry.contentType).send(await registry.metrics())
      })
    }
  },
  { fastify: '5.x', name: 'fastify-viewsets-metrics' }
)
