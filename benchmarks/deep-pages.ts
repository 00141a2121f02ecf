// Deep pages (issue 15): on a table of 1,000,000 rows ordered by a NOT NULL indexed column, reading page
// 1,000 by cursor against page 1, with the offset equivalent beside it. SQLite always, PostgreSQL when
// TEST_POSTGRES_URL (or BENCH_POSTGRES_URL) is set.
//   node --conditions=source --import tsx benchmarks/deep-pages.ts [rows] [requests]
// Latencies are in-process (app.inject), medians of `requests` runs after a warm-up: the statement's cost,
// not the network's.
import { performance } from 'node:perf_hooks'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from '../lib/index.js'
import { encodeCursor } from '../lib/query/cursor.js'

const rows = Number(process.argv[2] ?? 1_000_000)
const requests = Number(process.argv[3] ?? 30)
const limit = 20
// One table per run: several people share the PostgreSQL server.
const table = `deep_entries_${process.pid}`
const t = sql.id(table)
const page = 1_000

const Entry = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), score: Type.Integer(), label: Type.String() })

async function seed (db: Kysely<any>, dialect: 'sqlite' | 'postgres'): Promise<void> {
  await sql`drop table if exists ${t}`.execute(db)
  await sql`create table ${t} (id integer primary key, score integer not null, label varchar(32) not null)`.execute(db)
  // Scores repeat (ties broken by id), spread so that the order differs from the key's.
  if (dialect === 'postgres') {
    await sql`insert into ${t} select i, ((i::bigint * 7919) % 100000)::integer, 'entry ' || i from generate_series(1, ${rows}) as i`.execute(db)
  } else {
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${rows}) insert into ${t} select i, (i * 7919) % 100000, 'entry ' || i from n`.execute(db)
  }
  await sql`create index ${sql.id(`${table}_score`)} on ${t} (score, id)`.execute(db)
  await sql`analyze ${t}`.execute(db)
}

async function median (run: () => Promise<void>): Promise<number> {
  for (let i = 0; i < 3; i++) await run()
  const times: number[] = []
  for (let i = 0; i < requests; i++) {
    const start = performance.now()
    await run()
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)] ?? 0
}

async function measure (name: 'sqlite' | 'postgres', url: string): Promise<void> {
  const db = createDatabase<any>(url)
  await seed(db, name)
  const app = Fastify()
  const options = { db, table, schema: Entry, orderingFields: ['score'] as const, maxLimit: 100 }
  await app.register(createViewset({ ...options, pagination: 'cursor' }), { prefix: '/cursor' })
  await app.register(createViewset({ ...options, maxOffset: rows }), { prefix: '/offset' })
  await app.ready()
  // Page 1,000 starts after the row at position 999 × limit: its cursor, as the Link header would carry it.
  const before = await sql<{ score: number, id: number }>`select score, id from ${t} order by score, id limit 1 offset ${(page - 1) * limit - 1}`.execute(db)
  const at = before.rows[0]
  if (at === undefined) throw new Error('too few rows for page 1,000')
  const cursor = encodeCursor({ shape: 'score,id', keys: [{ field: 'score', descending: false, nullable: false }, { field: 'id', descending: false, nullable: false }] }, { direction: 'after', values: [at.score, at.id] })
  const get = (path: string) => async () => {
    const response = await app.inject({ method: 'GET', url: path })
    if (response.statusCode !== 200) throw new Error(`${path}: ${response.statusCode} ${response.body}`)
  }
  const first = await median(get(`/cursor?order_by=score&limit=${limit}`))
  const deep = await median(get(`/cursor?order_by=score&limit=${limit}&cursor=${cursor}`))
  const offsetFirst = await median(get(`/offset?order_by=score&limit=${limit}`))
  const offsetDeep = await median(get(`/offset?order_by=score&limit=${limit}&offset=${(page - 1) * limit}`))
  // The same rows either way.
  const a = await app.inject({ method: 'GET', url: `/cursor?order_by=score&limit=${limit}&cursor=${cursor}` })
  const b = await app.inject({ method: 'GET', url: `/offset?order_by=score&limit=${limit}&offset=${(page - 1) * limit}` })
  if (a.body !== b.body) throw new Error('cursor and offset pages differ')
  console.log(`${name}: ${rows} rows, limit ${limit}, median of ${requests}`)
  console.log(`  cursor  page 1 ${first.toFixed(2)} ms, page ${page} ${deep.toFixed(2)} ms (${(deep / first).toFixed(2)}x)`)
  console.log(`  offset  page 1 ${offsetFirst.toFixed(2)} ms, page ${page} ${offsetDeep.toFixed(2)} ms (${(offsetDeep / offsetFirst).toFixed(2)}x)`)
  await app.close()
  await sql`drop table ${t}`.execute(db)
  await db.destroy()
}

await measure('sqlite', 'sqlite::memory:')
const postgres = process.env.BENCH_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL
if (postgres !== undefined && postgres !== '') await measure('postgres', postgres)
