// The cost of the tracing channels (issue 41): GET /items/1 on in-memory SQLite through app.inject, with nobody
// subscribed, with fastify-viewsets/otel subscribed (spans made by an SDK tracer, exported nowhere), and with
// viewsetMetrics registered, in alternating rounds so that drift hits all three. Both wall time and this process's
// CPU time (process.cpuUsage: less sensitive to other processes on a busy machine) are reported, per request.
// Run: node --conditions=source --import tsx benchmarks/observability.ts
import { execFileSync } from 'node:child_process'
import { Type } from '@sinclair/typebox'
import { trace } from '@opentelemetry/api'
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base'
import Fastify from 'fastify'
import type { Generated } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'
import { instrumentViewsets } from 'fastify-viewsets/otel'
import { viewsetMetrics } from 'fastify-viewsets/metrics'

const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
const db = createDatabase<{ items: { id: Generated<number>, name: string } }>('sqlite::memory:')
await db.schema.createTable('items').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
  .addColumn('name', 'text', (c) => c.notNull()).execute()
await db.insertInto('items').values({ name: 'one' }).execute()
const app = Fastify()
await app.register(createViewset({ db, table: 'items', schema: Item }), { prefix: '/items' })
await app.ready()

/** Microseconds per request of one round: wall time, and this process's CPU time. */
async function round (requests: number): Promise<{ wall: number, cpu: number }> {
  const start = process.hrtime.bigint()
  const cpu = process.cpuUsage()
  for (let i = 0; i < requests; i++) await app.inject({ method: 'GET', url: '/items/1' })
  const used = process.cpuUsage(cpu)
  return { wall: Number(process.hrtime.bigint() - start) / requests / 1000, cpu: (used.user + used.system) / requests }
}

/** The metrics plugin subscribes process-wide while an app that registered it is open. */
async function withMetrics (): Promise<() => Promise<void>> {
  const metricsApp = Fastify()
  await metricsApp.register(viewsetMetrics, { path: false })
  await metricsApp.ready()
  return async () => { await metricsApp.close() }
}

// Under callgrind, one mode per process, the instructions of `REQUESTS` requests after as many to warm up: a count the
// machine's load does not change (--single-threaded: V8's compiler and GC threads would add counts that vary by run).
//   CALLGRIND_MODE=none|otel|otel-noop|metrics valgrind --tool=callgrind --instr-atstart=no \
//     node --single-threaded --conditions=source --import tsx benchmarks/observability.ts
const callgrindMode = process.env.CALLGRIND_MODE
if (callgrindMode !== undefined) {
  const requests = Number(process.env.REQUESTS ?? 2000)
  // otel-noop: the API's tracer with no SDK behind it (non-recording spans): the channels' and otel.ts's own share.
  const tracer = callgrindMode === 'otel' ? new BasicTracerProvider().getTracer('bench') : trace.getTracer('bench')
  const stop = callgrindMode.startsWith('otel') ? instrumentViewsets({ tracer }) : undefined
  const close = callgrindMode === 'metrics' ? await withMetrics() : undefined
  await round(requests)
  execFileSync('callgrind_control', ['--instr=on', String(process.pid)])
  await round(requests)
  execFileSync('callgrind_control', ['--instr=off', String(process.pid)])
  stop?.()
  await close?.()
  await app.close()
  await db.destroy()
  process.exit(0)
}

const rounds = Number(process.env.ROUNDS ?? 7)
const requests = Number(process.env.REQUESTS ?? 3000)
const tracer = new BasicTracerProvider().getTracer('bench')
type Round = Awaited<ReturnType<typeof round>>
const samples: Record<'none' | 'otel' | 'metrics', Round[]> = { none: [], otel: [], metrics: [] }
await round(requests)
for (let i = 0; i < rounds; i++) {
  samples.none.push(await round(requests))
  const stop = instrumentViewsets({ tracer })
  samples.otel.push(await round(requests))
  stop()
  const close = await withMetrics()
  samples.metrics.push(await round(requests))
  await close()
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
const spread = (values: number[]) => Math.max(...values) - Math.min(...values)
const summary = (kind: 'wall' | 'cpu') => {
  const of = (name: keyof typeof samples) => samples[name].map((sample) => sample[kind])
  return {
    none: median(of('none')),
    otel: median(of('otel')),
    metrics: median(of('metrics')),
    spreadNone: spread(of('none')),
    otelCost: median(of('otel')) - median(of('none')),
    metricsCost: median(of('metrics')) - median(of('none')),
  }
}
console.log(JSON.stringify({ microsecondsPerRequest: { wall: summary('wall'), cpu: summary('cpu') } }, null, 1))
await app.close()
await db.destroy()
