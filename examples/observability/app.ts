// The basic shop's items, observed: OpenTelemetry spans through @fastify/otel and fastify-viewsets/otel, Prometheus
// metrics at /metrics, request logs that name the viewset and its statements, a readiness route, and Server-Timing.
import type { FastifyInstance } from 'fastify'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { SpanExporter } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { createViewset, viewsetDocs, viewsetLogs, viewsetReadiness, viewsetServerTiming } from 'fastify-viewsets'
import { instrumentViewsets } from 'fastify-viewsets/otel'
import { viewsetMetrics } from 'fastify-viewsets/metrics'
import { exampleApp } from '../shared.js'
import type { BuildOptions } from '../shared.js'
import { Item } from '../basic/app.js'
import type { DB } from '../basic/app.js'
import { migrate } from '../basic/migrations.js'

export interface ObservabilityOptions extends BuildOptions<DB> {
  /** Where finished spans go: server.ts prints them; in production an OTLP exporter to Jaeger or Tempo. Default: none
   * (spans are made, and dropped). */
  spanExporter?: SpanExporter
}

/** Builds the example app without listening, so tests can inject requests into it. */
export async function build (options: ObservabilityOptions = {}): Promise<FastifyInstance> {
  // One tracer provider per app here; a real server makes one at startup (NodeSDK does it for you).
  const { spanExporter } = options
  const provider = new NodeTracerProvider({
    spanProcessors: spanExporter === undefined ? [] : [new SimpleSpanProcessor(spanExporter)],
  })
  // The context manager that makes a handler's span the child of the request span (registered once per process).
  provider.register()
  const instrumentation = new FastifyOtelInstrumentation()
  instrumentation.setTracerProvider(provider)
  const stopTracing = instrumentViewsets({ tracer: provider.getTracer('fastify-viewsets') })

  const { app, db } = await exampleApp(options, migrate)
  app.addHook('onClose', async () => {
    stopTracing()
    await provider.shutdown()
  })
  await app.register(instrumentation.plugin()) // first: the request span wraps every hook and handler
  await app.register(viewsetLogs)
  await app.register(viewsetMetrics, { path: '/metrics' })
  await app.register(viewsetReadiness, { path: '/ready', timeout: 1000 })
  // Server-Timing tells clients how long the database took: development only, or behind trusted clients.
  if (process.env.NODE_ENV !== 'production') await app.register(viewsetServerTiming)
  await app.register(viewsetDocs, { title: 'Observed shop API', version: '1.0.0' })
  await app.register(createViewset({ db, table: 'items', schema: Item, tags: ['items'] }), { prefix: '/items' })
  return app
}
