import fp from 'fastify-plugin'
import { Counter, Histogram, Registry } from 'prom-client'
import { handlerChannel, statementChannel } from './channels.js'
import type { HandlerContext, StatementContext } from './channels.js'
import { countStatements } from './request-statements.js'

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
 * by database and operation, `fastify_viewsets_unavailable_total` by reason; served at `/metrics` unless `path` says
 * otherwise. The channels are process-wide: the metrics count the viewsets of every application in the process.
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
    handlerChannel.subscribe(handlers)
    statementChannel.subscribe(statements)
    fastify.addHook('onClose', async () => {
      stopCounting()
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
