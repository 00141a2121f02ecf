// What `Prefer: count=estimated` saves (issue 36 item 5): LIST 10 of a 1,000,000-row table with `count=true` against
// `Prefer: count=estimated`, unfiltered and with a filter, on PostgreSQL and MariaDB. Run:
// TEST_POSTGRES_URL=… TEST_MYSQL_URL=… node --conditions=source --import tsx benchmarks/count-estimate.ts
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { sql } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'

const Event = Type.Object({ id: Type.Integer(), kind: Type.Integer() })
const rows = 1_000_000

async function measure (url: string, dialect: string): Promise<Record<string, number | string>> {
  const db = createDatabase<any>(url)
  await db.schema.dropTable('cost_a_events').ifExists().execute()
  await db.schema.createTable('cost_a_events').addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('kind', 'integer', (c) => c.notNull()).execute()
  if (dialect === 'postgres') {
    await sql`insert into cost_a_events select g, g % 10 from generate_series(1, ${rows}) g`.execute(db)
    await sql`analyze cost_a_events`.execute(db)
  } else {
    await sql`insert into cost_a_events select seq, seq % 10 from seq_1_to_${sql.raw(String(rows))}`.execute(db)
    // MariaDB's engine-independent statistics: what its planner estimates an unindexed filter's selectivity from.
    await sql`analyze table cost_a_events persistent for all`.execute(db)
  }
  const app = Fastify()
  const options = { db, table: 'cost_a_events', schema: Event, methods: ['LIST'], filterFields: { kind: ['eq'] } }
  await app.register(createViewset(options as never), { prefix: '/events' })
  await app.ready()
  const median = async (path: string, prefer?: string) => {
    const times: number[] = []
    let total = ''
    for (let i = 0; i < 9; i++) {
      const start = process.hrtime.bigint()
      const response = await app.inject({ url: path, headers: prefer === undefined ? {} : { prefer } })
      times.push(Number(process.hrtime.bigint() - start) / 1e6)
      const applied = String(response.headers['preference-applied'] ?? 'count=true')
      total = `${String(response.headers['x-total-count'])} (${applied})`
    }
    return `${(times.sort((a, b) => a - b)[4] ?? 0).toFixed(2)} ms, X-Total-Count ${total}`
  }
  const result = {
    'count=true': await median('/events?limit=10&count=true'),
    'Prefer: count=estimated': await median('/events?limit=10', 'count=estimated'),
    'kind=3, count=true': await median('/events?limit=10&kind=3&count=true'),
    'kind=3, Prefer: count=estimated': await median('/events?limit=10&kind=3', 'count=estimated'),
  }
  await app.close()
  await db.schema.dropTable('cost_a_events').execute()
  await db.destroy()
  return result
}

for (const [dialect, url] of [['postgres', process.env.TEST_POSTGRES_URL], ['mysql', process.env.TEST_MYSQL_URL]]) {
  if (url === undefined || dialect === undefined) continue
  console.log(dialect, JSON.stringify(await measure(url, dialect), null, 1))
}
