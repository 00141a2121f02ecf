// The cost of the tracing channels (issue 41): GET /items/1 on in-memory SQLite through app.inject, with nobody
// subscribed, then with fastify-viewsets/otel subscribed (spans made by an SDK tracer, exported nowhere), in
// alternating rounds so that drift hits both. Run: node --conditions=source --import tsx benchmarks/observability.ts
import { Type } from '@sinclair/typebox'
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base'
import Fastify from 'fastify'
import type { Generated } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'
import { instrumentViewsets } from 'fastify-viewsets/otel'

const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
const db = createDatabase<{ items: { id: Generated<number>, name: string } }>('sqlite::memory:')
await db.schema.createTable('items').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
  .addColumn('name', 'text', (c) => c.notNull()).execute()
await db.insertInto('items').values({ name: 'one' }).execute()
const app = Fastify()
await app.register(createViewset({ db, table: 'items', schema: Item }), { prefix: '/items' })
await app.ready()

async function round (requests: number): Promise<number> {
  const start = process.hrtime.bigint()
  for (let i = 0; i < requests; i++) await app.inject({ method: 'GET', url: '/items/1' })
  return Number(process.hrtime.bigint() - start) / requests / 1000
}

const tracer = new BasicTracerProvider().getTracer('bench')
const off: number[] = []
const on: number[] = []
await round(3000)
for (let i = 0; i < 7; i++) {
  off.push(await round(3000))
  const stop = instrumentViewsets({ tracer })
  on.push(await round(3000))
  stop()
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
const spread = (values: number[]) => Math.max(...values) - Math.min(...values)
console.log(JSON.stringify({
  microsecondsPerRequest: { noSubscriber: median(off), otel: median(on) },
  spreadNoSubscriber: spread(off),
  otelCost: median(on) - median(off),
}))
await app.close()
await db.destroy()
