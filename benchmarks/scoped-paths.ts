import { copyFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as library from 'fastify-viewsets'
import { buildViewsets } from './systems/viewsets-app.js'
import type { DatabaseTarget } from './seed.js'

// CPU per request of the scoped paths against the unscoped ones, interleaved in one process through `app.inject`
// (analysis.md, "Scoped paths, fourth session"): a quick check between two callgrind runs, which on a loaded machine
// take half an hour each. Run `npm run build:bench` first, over a seeded copy of the benchmark database, or over
// a PostgreSQL database a benchmark run seeded:
//   node --import tsx benchmarks/scoped-paths.ts benchmarks/.data/instructions.db
//   node --import tsx benchmarks/scoped-paths.ts postgres://postgres@127.0.0.1:5432/test
// (env: PATHS=/a,/b WARM=6000 PER=2000 ROUNDS=7)

const source = process.argv[2] ?? join('benchmarks', '.data', 'instructions.db')
/** A seeded SQLite file, copied so that the run leaves it as it was, or a seeded PostgreSQL database's URL. */
function target (): DatabaseTarget {
  if (source.startsWith('postgres://')) return { kind: 'postgres', url: source }
  const file = join(mkdtempSync(join(tmpdir(), 'scoped-paths-')), 'books.db')
  copyFileSync(source, file)
  return { kind: 'sqlite', file }
}
const { app } = await buildViewsets(target(), library)
await app.ready()
const defaults = '/books/3,/books-scoped/3,/books-author?limit=10,/books-author-scoped?limit=10'
const paths = (process.env.PATHS ?? defaults).split(',')
const warm = Number(process.env.WARM ?? 6000)
const per = Number(process.env.PER ?? 2000)
const rounds = Number(process.env.ROUNDS ?? 7)

/** Lets the event loop turn: `app.inject` answers through promises, and what each request leaves for a later turn
 * (light-my-request's immediates) would otherwise pile up, about 10 kB a request, and grow the collector's work. */
const turn = async () => await new Promise((resolve) => setImmediate(resolve))

/** CPU µs per request of `n` requests to `path`, all threads of the process. */
async function run (path: string, n: number): Promise<number> {
  const start = process.cpuUsage()
  for (let i = 0; i < n; i++) {
    const response = await app.inject({ method: 'GET', url: path })
    if (response.statusCode !== 200) throw new Error(`${path}: ${response.statusCode} ${response.body}`)
    if (i % 64 === 63) await turn()
  }
  const used = process.cpuUsage(start)
  return (used.user + used.system) / n
}

for (const path of paths) await run(path, warm)
const samples = paths.map((): number[] => [])
for (let round = 0; round < rounds; round++) {
  for (const [index, path] of paths.entries()) samples[index]?.push(await run(path, per))
}
const medians = samples.map((values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0)
for (const [index, path] of paths.entries()) console.log(`${path.padEnd(32)} ${(medians[index] ?? 0).toFixed(1)} µs`)
if (paths.length === 4) {
  const [get = 0, getScoped = 0, list = 0, listScoped = 0] = medians
  console.log(`GET scoped/unscoped ${(getScoped / get).toFixed(3)}  LIST scoped/unscoped ${(listScoped / list).toFixed(3)}`)
}
await app.close()
