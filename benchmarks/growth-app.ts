import { performance } from 'node:perf_hooks'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'
import type { Growth } from './results.js'

// The child process of the growth phase (growth.ts forks it with plain `node` over dist/): on a table of
// `rows` rows ordered by a NOT NULL indexed column, the cost of LIST with `count=true`, and page 1,000 by
// cursor against page 1, with the offset equivalent beside it. The table is seeded once and kept
// (SQLite: a file in the data directory; PostgreSQL: a database of its own) while its schema version and
// size match. Latencies are in-process (app.inject): the statements' cost, not the network's.

/** Bump when the table's definition or contents change: a kept table of another version is seeded again. */
const schemaVersion = 1
const limit = 20
const page = 1000

const Entry = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  score: Type.Integer(),
  label: Type.String(),
})

interface GrowthDB {
  entries: { id: number; score: number; label: string }
  growth_meta: { version: number; rows: number }
}

async function seeded (db: Kysely<GrowthDB>, rows: number): Promise<boolean> {
  try {
    const meta = await db.selectFrom('growth_meta').select(['version', 'rows']).executeTakeFirst()
    return meta !== undefined && Number(meta.version) === schemaVersion && Number(meta.rows) === rows
  } catch {
    return false
  }
}

/** One statement fills the table: generate_series on PostgreSQL, a recursive CTE on SQLite. */
async function seed (db: Kysely<GrowthDB>, kind: 'sqlite' | 'postgres', rows: number): Promise<void> {
  await sql`drop table if exists growth_meta`.execute(db)
  await sql`drop table if exists entries`.execute(db)
  await sql`create table entries (id integer primary key, score integer not null, label varchar(32) not null)`.execute(
    db
  )
  // Scores repeat (ties broken by id) and are spread, so that the order differs from the key's.
  if (kind === 'postgres') {
    await sql`insert into entries select i, ((i::bigint * 7919) % 100000)::integer, 'entry ' || i from generate_series(1, ${rows}::integer) as i`.execute(
      db
    )
  } else {
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${rows}) insert into entries select i, (i * 7919) % 100000, 'entry ' || i from n`.execute(
      db
    )
  }
  await sql`create index entries_score on entries (score, id)`.execute(db)
  await sql`analyze entries`.execute(db)
  await sql`create table growth_meta (version integer not null, rows integer not null)`.execute(db)
  await db.insertInto('growth_meta').values({ version: schemaVersion, rows }).execute()
}

async function median (requests: number, run: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 3; i++) await run()
  const times: number[] = []
  for (let i = 0; i < requests; i++) {
    const start = performance.now()
    await run()
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)
  return Math.round((times[Math.floor(times.length / 2)] ?? 0) * 100) / 100
}

/** GETs a path; the answer's body and `Link` header. */
async function get (app: FastifyInstance, url: string): Promise<{ body: string; link: string }> {
  const response = await app.inject({ method: 'GET', url })
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`)
  return { body: response.body, link: String(response.headers.link ?? '') }
}

/** The cursor of page `page`: walks the `next` links (a cursor may be reused with another limit, so 100 rows a step).
 * */
async function deepCursor (app: FastifyInstance): Promise<string> {
  const target = (page - 1) * limit
  let position = 0
  let cursor: string | undefined
  while (position < target) {
    const step = Math.min(100, target - position)
    const { link } = await get(
      app,
      `/cursor?order_by=score&limit=${step}${cursor === undefined ? '' : `&cursor=${cursor}`}`
    )
    cursor = /[?&]cursor=([^&>]+)[^>]*>;\s*rel="next"/.exec(link)?.[1]
    if (cursor === undefined) throw new Error(`no next link after ${position} rows: ${link}`)
    position += step
  }
  return cursor as string
}

async function main (): Promise<void> {
  const [kind, url, rowsText, requestsText] = process.argv.slice(2) as ['sqlite' | 'postgres', string, string, string]
  const rows = Number(rowsText)
  const requests = Number(requestsText)
  const db = createDatabase<GrowthDB>(url)
  let seededSeconds = 0
  if (!(await seeded(db, rows))) {
    const start = performance.now()
    await seed(db, kind, rows)
    seededSeconds = Math.round((performance.now() - start) / 100) / 10
  }
  const app = Fastify({ logger: false })
  const options = {
    db,
    table: 'entries' as const,
    schema: Entry,
    orderingFields: ['score'] as const,
    maxLimit: 100,
    methods: ['LIST'] as const,
  }
  await app.register(createViewset({ ...options, pagination: 'cursor' }), { prefix: '/cursor' })
  await app.register(createViewset({ ...options, maxOffset: rows }), { prefix: '/offset' })
  await app.ready()
  const cursor = await deepCursor(app)
  const offset = (page - 1) * limit
  const deepByCursor = await get(app, `/cursor?order_by=score&limit=${limit}&cursor=${cursor}`)
  const deepByOffset = await get(app, `/offset?order_by=score&limit=${limit}&offset=${offset}`)
  if (deepByCursor.body !== deepByOffset.body) throw new Error('the cursor and offset pages differ')
  const time = async (path: string) => await median(requests, async () => await get(app, path))
  const result: Growth = {
    rows,
    limit,
    page,
    requests,
    listMs: await time(`/offset?limit=${limit}`),
    countMs: await time(`/offset?limit=${limit}&count=true`),
    cursorFirstMs: await time(`/cursor?order_by=score&limit=${limit}`),
    cursorDeepMs: await time(`/cursor?order_by=score&limit=${limit}&cursor=${cursor}`),
    offsetFirstMs: await time(`/offset?order_by=score&limit=${limit}`),
    offsetDeepMs: await time(`/offset?order_by=score&limit=${limit}&offset=${offset}`),
    seededSeconds,
  }
  process.send?.(result)
  await app.close()
  await db.destroy()
}

await main()
