import { parseArgs } from 'node:util'
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'

// `?q=` against `?search=` (README, "Full-text search"): 100,000 rows of 5 + 10 words drawn from 2,000, the README's
// migration per database, and the median of 30 `app.inject` LISTs of 20 rows after 5 warm-up requests:
//
//   node --conditions=source --import tsx benchmarks/full-text.ts --database sqlite
//   node --conditions=source --import tsx benchmarks/full-text.ts --database postgres \
//     --url postgres://postgres@127.0.0.1:5432/test
//
// The table is created and dropped in the database the URL names.

const { values } = parseArgs({
  options: {
    database: { type: 'string', default: 'sqlite' },
    url: { type: 'string', default: 'sqlite::memory:' },
    rows: { type: 'string', default: '100000' },
  },
})
const database = values.database
const db = createDatabase<any>(values.url)
const rows = Number(values.rows)

const migrations: Record<string, string[]> = {
  sqlite: [
    "create virtual table ftbench_fts using fts5(title, body, content='ftbench', content_rowid='id')",
    'create trigger ftbench_fts_insert after insert on ftbench begin ' +
      'insert into ftbench_fts(rowid, title, body) values (new.id, new.title, new.body); end',
    'create trigger ftbench_fts_delete after delete on ftbench begin insert into ftbench_fts(ftbench_fts, rowid, ' +
      "title, body) values ('delete', old.id, old.title, old.body); end",
    'create trigger ftbench_fts_update after update on ftbench begin insert into ftbench_fts(ftbench_fts, rowid, ' +
      "title, body) values ('delete', old.id, old.title, old.body); " +
      'insert into ftbench_fts(rowid, title, body) values (new.id, new.title, new.body); end',
    "insert into ftbench_fts(ftbench_fts) values ('rebuild')",
  ],
  postgres: [
    "create index ftbench_fts on ftbench using gin (to_tsvector('simple', coalesce(title, '') || ' ' || " +
      "coalesce(body, '')))",
    'analyze ftbench',
  ],
  mysql: ['create fulltext index ftbench_fts on ftbench (title, body)', 'analyze table ftbench'],
}

const key = { sqlite: 'id integer primary key', postgres: 'id serial primary key', mysql: 'id int auto_increment primary key' }
await sql.raw('drop table if exists ftbench').execute(db)
await sql.raw(`create table ftbench (${key[database as 'sqlite']}, title varchar(200) not null, ` +
  'body varchar(200) not null)').execute(db)
const vocabulary = Array.from({ length: 2000 }, (_, i) => `w${i.toString(36)}x${((i * 7919) % 1000).toString(36)}`)
let seed = 1
const words = (count: number) => Array.from({ length: count }, () => {
  seed = (seed * 48271) % 2147483647
  return vocabulary[seed % vocabulary.length]
}).join(' ')
for (let i = 0; i < rows; i += 1000) {
  await db.insertInto('ftbench').values(Array.from({ length: 1000 }, () => ({ title: words(5), body: words(10) })))
    .execute()
}
for (const statement of migrations[database] ?? []) await sql.raw(statement).execute(db)

const app = Fastify()
const schema = Type.Object({ id: Type.Integer(), title: Type.String(), body: Type.String() })
await app.register(createViewset({
  db,
  table: 'ftbench',
  schema,
  methods: ['LIST'],
  searchFields: ['title', 'body'],
  orderingFields: ['id'],
  fullText: { fields: ['title', 'body'] },
} as never), { prefix: '/f' })
await app.ready()

/** The median milliseconds of one LIST. */
async function median (url: string): Promise<string> {
  for (let i = 0; i < 5; i++) await app.inject(url)
  const times: number[] = []
  for (let i = 0; i < 30; i++) {
    const start = process.hrtime.bigint()
    const response = await app.inject(url)
    times.push(Number(process.hrtime.bigint() - start) / 1e6)
    if (response.statusCode !== 200) throw new Error(response.body)
  }
  times.sort((a, b) => a - b)
  return `${(times[15] ?? 0).toFixed(2)} ms`
}

const [one = '', two = ''] = [vocabulary[17], vocabulary[901]]
const counted = await app.inject(`/f?q=${one}&count=true&limit=1`)
console.log(JSON.stringify({
  database,
  rows,
  matches: counted.headers['x-total-count'],
  'q, by relevance': await median(`/f?q=${one}&limit=20`),
  'q, by key': await median(`/f?q=${one}&order_by=id&limit=20`),
  'q of two words': await median(`/f?q=${one}%20${two}&limit=20`),
  search: await median(`/f?search=${one}&limit=20`),
}))
await app.close()
await sql.raw('drop table if exists ftbench').execute(db)
if (database === 'sqlite') await sql.raw('drop table if exists ftbench_fts').execute(db)
await db.destroy()
