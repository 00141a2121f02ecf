import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { SpanKind } from '@opentelemetry/api'
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { build } from '../../examples/observability/app.js'
import { dialects, testDatabase } from '../helpers/database.js'

// examples/observability: the spans an in-process exporter receives, /metrics after a known sequence, /ready and
// Server-Timing, on every database.

function sample (body: string, name: string): number {
  return Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(body)?.[1])
}

for (const dialect of dialects) {
  describe(`examples/observability on ${dialect.name}`, () => {
    test('spans nest request → handler → statement; /metrics counts them; /ready answers', async (t) => {
      const { db } = await testDatabase(t, dialect)
      const spanExporter = new InMemorySpanExporter()
      const app = await build({ db, spanExporter })
      t.after(() => app.close())
      await app.ready()
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Observed Loaf', price: 3 } })
      assert.equal(created.statusCode, 201, created.body)
      spanExporter.reset()
      const listed = await app.inject({ method: 'GET', url: '/items' })
      assert.equal(listed.statusCode, 200)
      assert.match(String(listed.headers['server-timing']), /^db;dur=[\d.]+;desc="1 statement"$/)

      const spans = spanExporter.getFinishedSpans()
      const byId = new Map(spans.map((span) => [span.spanContext().spanId, span]))
      const parent = (span: ReadableSpan | undefined) => byId.get(span?.parentSpanContext?.spanId ?? '')
      const statement = spans.find((span) => span.kind === SpanKind.CLIENT)
      assert.equal(statement?.name, 'SELECT items')
      const handler = parent(statement)
      assert.equal(handler?.name, 'LIST items')
      let root: ReadableSpan | undefined = handler
      while (parent(root) !== undefined) root = parent(root)
      assert.notEqual(root, handler, 'the handler span descends from @fastify/otel\'s request span')
      assert.equal(root?.parentSpanContext, undefined)
      assert.doesNotMatch(JSON.stringify(spans.map((span) => span.attributes)), /Observed Loaf/)

      const metrics = await app.inject({ method: 'GET', url: '/metrics' })
      assert.equal(metrics.statusCode, 200)
      assert.equal(sample(metrics.body, 'fastify_viewsets_request_duration_seconds_count{viewset="items",method="POST"}'), 1)
      assert.equal(sample(metrics.body, 'fastify_viewsets_request_statements_total{viewset="items",method="LIST"}'), 1)

      const ready = await app.inject({ method: 'GET', url: '/ready' })
      assert.deepEqual({ status: ready.statusCode, body: ready.json() }, { status: 200, body: { status: 'ready', databases: 1 } })
    })
  })
}
