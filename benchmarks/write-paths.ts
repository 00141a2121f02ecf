import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import * as library from 'fastify-viewsets'
import { build as buildRaw } from './systems/raw.js'
import { buildViewsets } from './systems/viewsets-app.js'
import { scenarioById } from './scenarios.js'
import type { ScenarioId, SystemName } from './scenarios.js'
import { copySqlite, dropPostgres, seedPostgres, seedSqlite } from './seed.js'
import type { DatabaseTarget } from './seed.js'

// CPU per request of issue 43's four slow paths (an OR filter, an aggregate, a bulk PATCH by filter, a nested POST)
// against raw's hand-written equivalents, interleaved in one process through `app.inject` (analysis.md, "The slow
// paths against raw"): every thread's CPU is counted, a read worker's included. A quick check of one change between
// two full runs; it leaves out the HTTP server and the client, which both systems pay alike, so its ratios are
// harsher than `npm run bench`'s. From the sources (or over dist/ without `--conditions=source`):
//   node --conditions=source --import tsx benchmarks/write-paths.ts [sqlite|postgres]
// (env: SCENARIOS=or-filter,aggregate SYSTEMS=viewsets WARM=3000 PER=1000 ROUNDS=5; postgres needs
// BENCH_POSTGRES_URL). One system per process where a path turns something on for the whole process.

const database = process.argv[2] ?? 'sqlite'
const ids = (process.env.SCENARIOS ?? 'or-filter,aggregate,patch-many,nested-post').split(',') as ScenarioId[]
const warm = Number(process.env.WARM ?? 3000)
const per = Number(process.env.PER ?? 1000)
const rounds = Number(process.env.ROUNDS ?? 5)
const postgresUrl = process.env.BENCH_POSTGRES_URL

let seed = 42
/** The same sequence of numbers in [0, 1) for every run. */
function next (): number {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
}
const draw = { next, doomed: () => { throw new Error('no DELETE here') } }

const seeded: DatabaseTarget = database === 'postgres'
  ? await seedPostgres(postgresUrl ?? '')
  : seedSqlite(join('benchmarks', '.data', 'write-paths.db'))
const targetOf = (system: string): DatabaseTarget => seeded.kind === 'sqlite' ? copySqlite(seeded, system) : seeded
const builders = {
  raw: async () => (await buildRaw(targetOf('raw'))).app,
  viewsets: async () => (await buildViewsets(targetOf('viewsets'), library)).app,
}
const names = (process.env.SYSTEMS ?? 'raw,viewsets').split(',') as Array<keyof typeof builders>
const systems: Array<[SystemName, FastifyInstance]> = []
for (const name of names) systems.push([name, await builders[name]()])
for (const [, app] of systems) await app.ready()

/** CPU µs per request of `n` requests of `id` on `app`, every thread of the process. */
async function run (system: SystemName, app: FastifyInstance, id: ScenarioId, n: number): Promise<number> {
  const scenario = scenarioById.get(id)
  if (scenario === undefined) throw new Error(`unknown scenario ${id}`)
  const requests = Array.from({ length: n }, () => scenario.request(system, draw))
  const start = process.cpuUsage()
  for (const request of requests) {
    const payload = request.body === undefined ? {} : { payload: request.body }
    const response = await app.inject({ method: request.method, url: request.path, ...payload })
    if (response.statusCode >= 300) throw new Error(`${system} ${request.path}: ${response.statusCode} ${response.body}`)
  }
  const used = process.cpuUsage(start)
  return (used.user + used.system) / n
}

for (const id of ids) for (const [system, app] of systems) await run(system, app, id, warm)
const samples = new Map<string, number[]>()
for (let round = 0; round < rounds; round++) {
  for (const id of ids) {
    for (const [system, app] of systems) {
      const key = `${id} ${system}`
      samples.set(key, [...samples.get(key) ?? [], await run(system, app, id, per)])
    }
  }
}
const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
console.log(`${database}: CPU µs per request, median of ${rounds} rounds of ${per} after ${warm} unmeasured`)
for (const id of ids) {
  const [raw, ours] = ['raw', 'viewsets'].map((system) => median(samples.get(`${id} ${system}`) ?? []))
  const ratio = raw !== undefined && ours !== undefined && raw > 0 && ours > 0 ? `  raw ÷ viewsets ${(raw / ours).toFixed(2)}×` : ''
  console.log(`${id.padEnd(12)} raw ${raw?.toFixed(1).padStart(7)}  viewsets ${ours?.toFixed(1).padStart(7)}${ratio}`)
}
for (const [, app] of systems) await app.close()
if (database === 'postgres' && postgresUrl !== undefined) await dropPostgres(postgresUrl)
