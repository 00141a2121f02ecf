// The cost of the served-request context (issue 35, item 6): an overridden LIST whose helper applies the row rule of
// the request it serves, and a generated GET of another viewset in the same process, on in-memory SQLite through
// app.inject. `open`: the override on a viewset without `scope` (no context is ever entered); `scoped`: the same with
// a `scope`, so that each request runs in an AsyncLocalStorage. Each mode runs in a process of its own (an entered
// storage slows every promise of its process from then on), alternately.
// Run: node --conditions=source --import tsx benchmarks/served-request.ts
import { execFileSync } from 'node:child_process'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import type { Generated } from 'kysely'
import { createDatabase, createViewset, Viewset } from 'fastify-viewsets'

const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
interface DB { items: { id: Generated<number>, name: string } }

class Listed extends Viewset<DB, 'items', typeof Item> {
  override async list () {
    return await this.query().where('id', '<=', 10).execute()
  }
}

async function measure (scoped: boolean): Promise<{ list: number, get: number }> {
  const db = createDatabase<DB>('sqlite::memory:')
  await db.schema.createTable('items').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    .addColumn('name', 'text', (c) => c.notNull()).execute()
  await db.insertInto('items').values(Array.from({ length: 20 }, (_, i) => ({ name: `item ${i}` }))).execute()
  const app = Fastify()
  const options = { db, table: 'items', schema: Item, withoutTokens: true } as const
  await app.register(new Listed(scoped ? { ...options, scope: (eb) => eb('id', '>', 0) } : options).register(), {
    prefix: '/listed',
  })
  await app.register(createViewset(options), { prefix: '/items' })
  await app.ready()
  const round = async (url: string, requests: number): Promise<number> => {
    const start = process.hrtime.bigint()
    for (let i = 0; i < requests; i++) await app.inject({ method: 'GET', url })
    return Number(process.hrtime.bigint() - start) / requests / 1000
  }
  await round('/listed', 2000)
  await round('/items/1', 2000)
  const list: number[] = []
  const get: number[] = []
  for (let i = 0; i < 5; i++) {
    list.push(await round('/listed', 2000))
    get.push(await round('/items/1', 2000))
  }
  await app.close()
  return { list: median(list), get: median(get) }
}

function median (values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
}

const mode = process.argv[2]
if (mode === 'open' || mode === 'scoped') {
  console.log(JSON.stringify(await measure(mode === 'scoped')))
} else {
  const runs: Record<string, Array<{ list: number, get: number }>> = { open: [], scoped: [] }
  for (let i = 0; i < 3; i++) {
    for (const each of ['open', 'scoped'] as const) {
      const out = execFileSync(process.execPath, [...process.execArgv, process.argv[1] ?? '', each], { encoding: 'utf8' })
      runs[each]?.push(JSON.parse(out))
    }
  }
  console.log(JSON.stringify(runs))
}
