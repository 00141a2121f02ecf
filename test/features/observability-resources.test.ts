import assert from 'node:assert/strict'
import diagnosticsChannel from 'node:diagnostics_channel'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import Database from 'better-sqlite3'
import { SpanStatusCode } from '@opentelemetry/api'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset, viewsetLogs, viewsetServerTiming } from 'fastify-viewsets'
import { instrumentViewsets } from 'fastify-viewsets/otel'
import { viewsetMetrics } from 'fastify-viewsets/metrics'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { switchProxy } from '../helpers/switch-proxy.js'

// Issue 41's remaining metrics (pools, statement caches, the heavy-request queue), Server-Timing, and a 5xx that a
// database fault answers: logged with its kind, recorded on the span with its problem code.

const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
const table = 'obs_items'

const exporter = new InMemorySpanExporter()
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
let stop: () => void = () => {}
before(() => { stop = instrumentViewsets({ tracer: provider.getTracer('fastify-viewsets') }) })
after(async () => {
  stop()
  await provider.shutdown()
})

async function createItems (db: Kysely<any>, dialect: TestDialect['name']): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable(table).addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(255)', (column) => column.notNull()).execute()
  await db.insertInto(table).values([{ name: 'Secret One' }, { name: 'Secret Two' }]).execute()
}

/** The value of one sample of a Prometheus text exposition, or NaN when it is absent. */
function sample (body: string, name: string): number {
  return Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(body)?.[1])
}

for (const dialect of dialects) {
  describe(`observability of resources on ${dialect.name}`, () => {
    test('metrics: statement cache hits and misses, pool figures, the heavy-request queue; labels hold no secrets', async (t) => {
      const { db, url: opened } = await testDatabase(t, dialect)
      await createItems(db, dialect.name)
      const app = testApp(t)
      await app.register(viewsetMetrics)
      await app.register(createViewset({ db, table, schema: Item, orderingFields: ['name'] }), { prefix: '/items' })
      await app.ready()
      for (let i = 0; i < 3; i++) {
        const listed = await app.inject({ method: 'GET', url: '/items?order_by=-name' })
        assert.equal(listed.statusCode, 200, listed.body)
      }
      const bulkhead = diagnosticsChannel.channel('fastify-viewsets:bulkhead')
      bulkhead.publish({ dialect: dialect.name, event: 'queued', depth: 2 })
      bulkhead.publish({ dialect: dialect.name, event: 'rejected', depth: 2 })
      bulkhead.publish({ dialect: dialect.name, event: 'timeout', depth: 1 })
      const body = await db.transaction().execute(async (trx) => {
        await trx.selectFrom(table).select('id').execute() // holds a pooled connection while /metrics is scraped
        return (await app.inject({ method: 'GET', url: '/metrics' })).body
      })
      // The first LIST of this shape compiles its statement (a miss), the next two find it.
      assert.ok(sample(body, 'fastify_viewsets_statement_cache_events_total{cache="compiled",event="hit"}') >= 2, body)
      assert.ok(sample(body, 'fastify_viewsets_statement_cache_events_total{cache="compiled",event="miss"}') >= 1)
      assert.equal(sample(body, `fastify_viewsets_heavy_queue_depth{dialect="${dialect.name}"}`), 1)
      assert.equal(sample(body, `fastify_viewsets_heavy_rejections_total{dialect="${dialect.name}"}`), 1)
      if (dialect.name === 'sqlite') {
        assert.equal(sample(body, 'fastify_viewsets_statement_cache_events_total{cache="sqlite-prepared",event="hit"}') >= 1, true)
        assert.doesNotMatch(body, /^fastify_viewsets_pool_connections_in_use\{/m, 'SQLite has no pool')
      } else {
        const url = new URL(opened)
        const label = `dialect="${dialect.name}",database="${url.protocol}//${url.host}${url.pathname}"`
        assert.ok(sample(body, `fastify_viewsets_pool_connections_in_use{${label}}`) >= 1, body)
        assert.ok(sample(body, `fastify_viewsets_pool_connections_idle{${label}}`) >= 0)
        assert.equal(sample(body, `fastify_viewsets_pool_waiting{${label}}`), 0)
        assert.doesNotMatch(body, /search_path|password|@/, 'the database label keeps no user, parameter or password')
      }
      assert.doesNotMatch(body, /Secret/)
    })

    test('Server-Timing: off by default; viewsetServerTiming reports the statements and their time', async (t) => {
      const { db } = await testDatabase(t, dialect)
      await createItems(db, dialect.name)
      const plain = testApp(t)
      await plain.register(createViewset({ db, table, schema: Item }), { prefix: '/items' })
      const plainGet = await plain.inject({ method: 'GET', url: '/items/1' })
      assert.equal(plainGet.statusCode, 200)
      assert.equal(plainGet.headers['server-timing'], undefined, 'off unless registered')

      const app = testApp(t)
      await app.register(viewsetServerTiming)
      await app.register(createViewset({ db, table, schema: Item }), { prefix: '/items' })
      app.get('/other', async () => ({ ok: true }))
      const list = await app.inject({ method: 'GET', url: '/items?count=true' })
      assert.equal(list.statusCode, 200)
      assert.match(String(list.headers['server-timing']), /^db;dur=\d+\.\d{3};desc="2 statements"$/)
      const get = await app.inject({ method: 'GET', url: '/items/1' })
      assert.match(String(get.headers['server-timing']), /^db;dur=\d+\.\d{3};desc="1 statement"$/)
      const missing = await app.inject({ method: 'GET', url: '/items/999' })
      assert.equal(missing.statusCode, 404)
      assert.match(String(missing.headers['server-timing']), /desc="1 statement"$/, 'an error answer reports its statements')
      assert.equal((await app.inject({ method: 'GET', url: '/other' })).headers['server-timing'], undefined,
        'only viewset handlers are timed')
      assert.equal((await plain.inject({ method: 'GET', url: '/items/1' })).headers['server-timing'], undefined,
        'another application is not affected')
    })

    test('a 5xx from a database fault: dbFault in the log, the problem code on the span, no SQL or values', async (t) => {
      const logs: string[] = []
      const { app, breakDatabase } = await faultyApp(t, dialect, logs)
      assert.equal((await app.inject({ method: 'POST', url: '/items', payload: { name: 'Before' } })).statusCode, 201)
      await breakDatabase()
      exporter.reset()
      const response = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Secret Payload' } })
      assert.equal(response.statusCode, 503, response.body)
      assert.equal(problemOf(response).code, 'FST_VIEWSET_UNAVAILABLE')
      assert.equal(response.headers['retry-after'], '1')
      const completed = logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'request completed')
      const { viewset, viewsetMethod, dbFault, res } = completed.at(-1) ?? {}
      assert.deepEqual(
        { viewset, viewsetMethod, dbFault, status: res?.statusCode },
        { viewset: table, viewsetMethod: 'POST', dbFault: 'unavailable', status: 503 }
      )
      const handler = exporter.getFinishedSpans().find((span) => span.name === `POST ${table}`)
      assert.equal(handler?.attributes['error.type'], 'FST_VIEWSET_UNAVAILABLE')
      assert.equal(handler?.status.code, SpanStatusCode.ERROR, 'a 5xx is the server\'s error')
      const written = logs.join('\n') + JSON.stringify(exporter.getFinishedSpans().map((span) => span.attributes))
      assert.doesNotMatch(written, /Secret Payload/)
      assert.doesNotMatch(logs.join('\n'), /insert into|select /i, 'no SQL in the log')
    })
  })
}

/**
 * An app whose database the test can break: through a proxy it closes (PostgreSQL, MariaDB), or a SQLite file another
 * connection locks (a write then finds it busy past the busy timeout).
 */
async function faultyApp (t: TestContext, dialect: TestDialect, logs: string[]) {
  const stream = { write: (line: string) => { logs.push(line) } }
  const app = testApp(t, { logger: { level: 'info', stream } })
  await app.register(viewsetLogs)
  if (dialect.name === 'sqlite') {
    const directory = mkdtempSync(join(tmpdir(), 'obs-fault-'))
    t.after(() => { rmSync(directory, { recursive: true, force: true }) })
    const file = join(directory, 'items.db')
    const db = createDatabase<any>(`sqlite:${file}`, { busyTimeout: 20, connectionTimeout: 2000 })
    t.after(() => db.destroy())
    await createItems(db, 'sqlite')
    await app.register(createViewset({ db, table, schema: Item }), { prefix: '/items' })
    await app.ready()
    const locker = new Database(file)
    t.after(() => { if (locker.inTransaction) locker.exec('rollback'); locker.close() })
    return { app, breakDatabase: async () => { locker.exec('begin exclusive') } }
  }
  const { db: setup, url } = await testDatabase(t, dialect)
  await createItems(setup, dialect.name)
  const target = new URL(url)
  const proxy = await switchProxy(t, target.hostname, Number(target.port))
  const db = createDatabase<any>(proxy.through(url), { connectionTimeout: 2000 })
  t.after(() => db.destroy())
  await app.register(createViewset({ db, table, schema: Item }), { prefix: '/items' })
  await app.ready()
  return { app, breakDatabase: proxy.down }
}
