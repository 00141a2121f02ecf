// A to-many relation's `limit` bounds the work per parent (issue 36 item 3): GET one parent with 100,000 children
// against one with 100, both through a `prefetchRelated` with the default limit of 100, on each database the
// environment names. Run: node --conditions=source --import tsx benchmarks/relation-limit.ts
// (TEST_POSTGRES_URL and TEST_MYSQL_URL add PostgreSQL and MariaDB; LIB=/path/to/lib/index.ts measures another tree).
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import type * as Viewsets from 'fastify-viewsets'

const lib: typeof Viewsets = await import(process.env.LIB ?? 'fastify-viewsets')
const { createDatabase, createViewset } = lib

const Child = Type.Object({ id: Type.Integer(), year: Type.Integer() })
const Parent = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  children: Type.Optional(Type.Array(Child)),
})
const many = 100_000
const few = 100

async function seed (db: Kysely<any>, dialect: string): Promise<void> {
  const id = dialect === 'postgres' ? 'serial' : 'integer'
  const key = (column: any) => (dialect === 'mysql' ? column.primaryKey().autoIncrement() : column.primaryKey())
  await db.schema.dropTable('cost_a_children').ifExists().execute()
  await db.schema.dropTable('cost_a_parents').ifExists().execute()
  await db.schema.createTable('cost_a_parents').addColumn('id', id, key)
    .addColumn('name', 'varchar(64)', (c) => c.notNull()).execute()
  await db.schema.createTable('cost_a_children').addColumn('id', id, key)
    .addColumn('parent_id', 'integer', (c) => c.notNull()).addColumn('year', 'integer', (c) => c.notNull()).execute()
  // The index a per-parent read in the relation's order (by id) walks: (parent_id, id).
  await db.schema.createIndex('cost_a_children_parent').on('cost_a_children').columns(['parent_id', 'id']).execute()
  // Parent 1 has 100,000 children; parents 2 to 1,001 have 100 each, so that the planner sees many parents.
  const parents = Array.from({ length: 1001 }, (_, i) => ({ name: i === 0 ? 'many' : `few ${i}` }))
  await db.insertInto('cost_a_parents').values(parents).execute()
  const rows = (parent: number, count: number) =>
    Array.from({ length: count }, (_, i) => ({ parent_id: parent, year: 1900 + (i % 120) }))
  const all = rows(1, many)
  for (let parent = 2; parent <= 1001; parent++) all.push(...rows(parent, few))
  for (let start = 0; start < all.length; start += 5000) {
    await db.insertInto('cost_a_children').values(all.slice(start, start + 5000)).execute()
  }
  if (dialect === 'mysql') await sql`analyze table cost_a_children`.execute(db)
  else await sql`analyze cost_a_children`.execute(db)
}

async function measure (url: string, dialect: string): Promise<Record<string, number>> {
  const db = createDatabase<any>(url)
  await seed(db, dialect)
  const app = Fastify()
  const relatedConfig = { prefetchRelated: { children: { table: 'cost_a_children', foreignKey: 'parent_id' } } }
  await app.register(createViewset({ db, table: 'cost_a_parents', schema: Parent, relatedConfig } as never), {
    prefix: '/parents',
  })
  await app.ready()
  const median = async (path: string, parents = 1): Promise<number> => {
    const times: number[] = []
    for (let i = 0; i < 15; i++) {
      const start = process.hrtime.bigint()
      const response = await app.inject(path)
      times.push(Number(process.hrtime.bigint() - start) / 1e6)
      const body = response.json()
      const children = parents === 1
        ? body.children.length
        : body.reduce((sum: number, row: any) => sum + row.children.length, 0)
      if (children !== 100 * parents) throw new Error(`${path}: ${response.body.slice(0, 200)}`)
    }
    return times.sort((a, b) => a - b)[7] ?? 0
  }
  const result = {
    [`${many} children (ms)`]: await median('/parents/1'),
    [`${few} children (ms)`]: await median('/parents/500'),
    'LIST 20 parents of 100 (ms)': await median('/parents?offset=100&limit=20', 20),
  }
  await app.close()
  await db.schema.dropTable('cost_a_children').execute()
  await db.schema.dropTable('cost_a_parents').execute()
  await db.destroy()
  return result
}

const targets: Array<[string, string]> = [['sqlite', 'sqlite::memory:']]
if (process.env.TEST_POSTGRES_URL !== undefined) targets.push(['postgres', process.env.TEST_POSTGRES_URL])
if (process.env.TEST_MYSQL_URL !== undefined) targets.push(['mysql', process.env.TEST_MYSQL_URL])
for (const [dialect, url] of targets) console.log(dialect, JSON.stringify(await measure(url, dialect)))
