// The change feed under load (issue 40): 1,000 open streams on one server process across 10 filter shapes (and two
// tenants' rules: 20 groups), 100 writes/s through the API. Measures the delivery latency (write sent → event
// received, p50/p99), the statements per change batch, and a cheap GET's throughput with the streams open vs. none,
// the writes flowing in both. The server runs in its own process (plain node over dist/, or LIB=…).
// Run: npm run build && node benchmarks/changes.ts   (node ≥ 22.6 strips the types; else --import tsx)
//      BENCH_POSTGRES_URL=postgres://… (as benchmarks/run.ts) measures PostgreSQL (LISTEN/NOTIFY) instead of a
//      SQLite file. It drops and creates bench_changes and viewset_history there.
// The feed's statements are counted exactly, from the database's log: the feed runs two statements of its own, each
// told by its SQL (no other statement of this app has it): the read of the history after a position
// (data/history-reader.ts `readHistoryAfter` selects `row_key` … `before`, `after`, ordered by position) and the
// evaluation of the stored versions (data/version-match.ts selects the version column). A feed reads, then evaluates
// the batch read once per group, then reads again, one statement at a time: in the log's order, a batch is a read
// followed by evaluations.
import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'

const subscribers = Number(process.env.SUBSCRIBERS ?? 1000)
const writesPerSecond = Number(process.env.WRITES ?? 100)
const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const statuses = ['open', 'closed', 'draft', 'review', 'done']
const postgresUrl = process.env.BENCH_POSTGRES_URL || process.env.DATABASE || undefined

// The ten filter shapes: five values of one filter, and five other shapes.
const shapes = [
  ...statuses.map((status) => `status=${status}`),
  'priority__gte=3', 'priority__lt=3', 'status=open&priority__gte=2', 'name__startswith=w', '',
]

/** The SQL of the feed's read of the history (data/history-entries.ts), on every database. */
const historyRead = /select\W.*\brow_key\W.*\bbefore\W+after\W+from\W+viewset_history\W.*order by/is

async function server (): Promise<void> {
  const lib = await import(process.env.LIB ?? 'fastify-viewsets')
  const { Type } = await import('@sinclair/typebox')
  const { default: Fastify } = await import('fastify')
  const { sql } = await import('kysely')
  const url = postgresUrl ?? `sqlite:${join(tmpdir(), `changes-bench-${process.pid}.db`)}`
  // The feed's statements in the order they completed; every other statement only counted.
  let feedLog: Array<'read' | 'evaluation'> = []
  let others = 0
  const db = lib.createDatabase(url, {
    log: (event: { level: string, query: { sql: string } }) => {
      if (event.level !== 'query') return
      const text = event.query.sql
      if (text.includes('__viewset_version')) feedLog.push('evaluation')
      else if (historyRead.test(text)) feedLog.push('read')
      else others++
    },
  })
  const postgres = url.startsWith('postgres')
  await sql`drop table if exists bench_changes`.execute(db)
  await sql`drop table if exists viewset_history`.execute(db)
  await sql`drop table if exists viewset_history_locks`.execute(db)
  const id = postgres ? sql`serial primary key` : sql`integer primary key autoincrement`
  await sql`create table bench_changes (id ${id}, name varchar(64) not null, status varchar(16) not null,
    priority integer not null, tenant varchar(16) not null)`.execute(db)
  await db.insertInto('bench_changes').values({ name: 'cheap', status: 'open', priority: 1, tenant: 't0' }).execute()
  const Item = Type.Object({
    id: Type.Optional(Type.Integer({ readOnly: true })),
    name: Type.String(),
    status: Type.String(),
    priority: Type.Integer(),
    tenant: Type.String(),
  })
  const app = Fastify({ logger: false })
  await app.register(lib.createViewset({
    db,
    table: 'bench_changes',
    schema: Item,
    history: { createTable: true },
    changes: { maxStreams: 10_000, maxStreamsPerCaller: 10_000, pollInterval: postgres ? 1000 : 50 },
    filterFields: { status: ['eq'], priority: ['gte', 'lt'], name: ['startswith'] },
    withoutTokens: true,
    // Each subscriber says which tenant it is (a stand-in for a token's claim): two rule parameters.
    scope: (eb: any, { request, method }: any) =>
      method === 'LIST' ? eb('tenant', '=', String(request.headers['x-tenant'] ?? 't0')) : undefined,
  } as any), { prefix: '/items' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  process.send?.({ port: typeof address === 'object' && address !== null ? address.port : 0 })
  process.on('message', (message: string) => {
    if (message === 'counts') process.send?.({ ...batchesOf(feedLog), others })
    if (message === 'reset') {
      feedLog = []
      others = 0
    }
    if (message === 'stop') app.close().then(() => db.destroy()).then(() => process.exit(0))
  })
}

/** The feed's batches in its log: a read followed by at least one evaluation (an empty read is followed by none). */
function batchesOf (log: ReadonlyArray<'read' | 'evaluation'>) {
  const perBatch: number[] = []
  let reads = 0
  let current: number | undefined
  for (const statement of log) {
    if (statement === 'read') {
      reads++
      if (current !== undefined && current > 0) perBatch.push(current)
      current = 0
    } else if (current !== undefined) current++
  }
  if (current !== undefined && current > 0) perBatch.push(current)
  const evaluations = perBatch.reduce((sum, count) => sum + count, 0)
  return {
    reads,
    emptyReads: reads - perBatch.length,
    batches: perBatch.length,
    evaluations,
    // The statements of one batch: its read and its evaluations.
    perBatch: perBatch.length === 0
      ? { min: 0, max: 0, mean: 0 }
      : {
          min: 1 + Math.min(...perBatch),
          max: 1 + Math.max(...perBatch),
          mean: +(1 + evaluations / perBatch.length).toFixed(2),
        },
  }
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN
}

function ask<T> (child: ChildProcess, message: string): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', (answer: T) => { resolve(answer) })
    child.send(message)
  })
}

async function client (): Promise<void> {
  const child = fork(new URL(import.meta.url), ['--server'], { execArgv: process.execArgv, stdio: 'inherit' })
  const { port } = await new Promise<{ port: number }>((resolve) => { child.once('message', resolve) })
  const base = `http://127.0.0.1:${port}`
  const sent = new Map<string, number>()
  const latencies: number[] = []
  const post = (body: object) => new Promise<void>((resolve) => {
    const text = JSON.stringify(body)
    const outgoing = request(`${base}/items`, { method: 'POST', headers: { 'content-type': 'application/json' } },
      (response) => { response.resume(); response.on('end', resolve) })
    outgoing.end(text)
  })
  const state = { writing: true }
  let written = 0
  const writer = (async () => {
    const start = performance.now()
    while (state.writing) {
      const name = `w${written}`
      sent.set(name, performance.now())
      await post({ name, status: statuses[written % statuses.length], priority: written % 5, tenant: `t${written % 2}` })
      written++
      const due = start + (written * 1000) / writesPerSecond
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())))
    }
  })()
  const cheap = async () => (await autocannon({ url: `${base}/items/1`, connections: 10, duration: 5 })).requests.average
  const without = await cheap()
  console.error('cheap GET without streams', Math.round(without))
  const streams: Array<{ destroy: () => void }> = []
  // The streams' answers by status: every one should be a 200 (a refused stream would shrink the groups).
  const statusCounts = new Map<number, number>()
  for (let i = 0; i < subscribers; i++) {
    const shape = shapes[i % shapes.length] ?? ''
    const outgoing = request(`${base}/items?${shape}`, {
      headers: { accept: 'text/event-stream', 'x-tenant': `t${Math.floor(i / shapes.length) % 2}` }, agent: false,
    }, (response) => {
      statusCounts.set(response.statusCode ?? 0, (statusCounts.get(response.statusCode ?? 0) ?? 0) + 1)
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        for (const match of chunk.matchAll(/"name":"(w\d+)"/g)) {
          const at = sent.get(match[1] ?? '')
          if (at !== undefined) latencies.push(performance.now() - at)
        }
      })
    })
    outgoing.end()
    streams.push(outgoing)
  }
  // Until every stream has answered (a loaded machine takes seconds), then 2 s more.
  const answered = () => [...statusCounts.values()].reduce((sum, count) => sum + count, 0)
  for (let waited = 0; answered() < subscribers && waited < 60_000; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await new Promise((resolve) => setTimeout(resolve, 2000))
  console.error('streams asked', streams.length, 'answered', Object.fromEntries(statusCounts), 'events so far',
    latencies.length)
  if (statusCounts.get(200) !== subscribers) {
    child.kill()
    throw new Error('some streams were refused or never answered: fix their query strings')
  }
  latencies.length = 0
  child.send('reset')
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
  const counts = await ask<ReturnType<typeof batchesOf> & { others: number }>(child, 'counts')
  const measured = [...latencies].sort((a, b) => a - b)
  const withStreams = await cheap()
  state.writing = false
  await writer
  for (const stream of streams) stream.destroy()
  const exited = new Promise((resolve) => { child.once('exit', resolve) })
  child.send('stop')
  await exited
  console.log(JSON.stringify({
    database: postgresUrl === undefined ? 'sqlite' : 'postgres',
    subscribers,
    writesPerSecond,
    events: measured.length,
    latencyMs: { p50: Math.round(percentile(measured, 0.5)), p99: Math.round(percentile(measured, 0.99)) },
    // Subscribers with equal statements: 10 filter shapes × 2 tenants' rule parameters.
    groups: shapes.length * 2,
    batches: counts.batches,
    // Exact counts of the measured window: every batch's statements (its read and one evaluation per group).
    statementsPerBatch: counts.perBatch,
    evaluations: counts.evaluations,
    historyReads: counts.reads,
    emptyReads: counts.emptyReads,
    otherStatements: counts.others,
    cheapGetPerSecond: { withoutStreams: Math.round(without), withStreams: Math.round(withStreams) },
    getChange: `${(100 * (withStreams / without - 1)).toFixed(1)} %`,
  }, null, 2))
  if (postgresUrl === undefined) rmSync(join(tmpdir(), `changes-bench-${child.pid}.db`), { force: true })
}

if (process.argv.includes('--server')) await server()
else await client()
