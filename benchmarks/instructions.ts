import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { startServer } from './processes.js'
import { allSystemNames } from './scenarios.js'
import type { SystemName } from './scenarios.js'
import { copySqlite, dropPostgres, seedPostgres, seedSqlite } from './seed.js'
import type { DatabaseTarget } from './seed.js'

// Instructions per request over HTTP, which do not depend on how busy the machine is (analysis.md, "Second
// session"): each server runs under callgrind, is warmed up, its counters are zeroed, it serves a fixed
// number of requests, and the counts are dumped. With --cache-sim, callgrind also simulates the first-level
// caches and the branch predictor. Only the server's own instructions are counted: on PostgreSQL, neither the
// database's nor the kernel's. valgrind must be installed; run `npm run build:bench` first.
//
//   node --import tsx benchmarks/instructions.ts --systems raw,viewsets --path '/books?limit=10' [--cache-sim]
//     [--database postgres]   (BENCH_POSTGRES_URL: a server where the run may create its database)
//     [--baseline-dist benchmarks/.data/baseline/<commit>/dist/index.js]   (with the system viewsets-baseline)
//     [--warm-paths '/books/3,/books-full?limit=50']   (800 requests each first, as the full run's warm-up serves
//     every scenario before it measures one: with one path only, pg's and Fastify's call sites stay monomorphic
//     and the counts are not the ones the full run measures)

const { values } = parseArgs({
  options: {
    systems: { type: 'string', default: 'raw,viewsets' },
    path: { type: 'string', default: '/books?limit=10' },
    requests: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '3000' },
    'cache-sim': { type: 'boolean', default: false },
    data: { type: 'string', default: join('benchmarks', '.data') },
    database: { type: 'string', default: 'sqlite' },
    'warm-paths': { type: 'string', default: '' },
    // A write measured the same way, e.g. --method PATCH --body '{"price":12.5}' --path /books/3.
    method: { type: 'string', default: 'GET' },
    body: { type: 'string' },
    // The dist/index.js of another build, for viewsets-baseline (`npm run bench -- --baseline <ref>` builds one
    // into benchmarks/.data/baseline/<commit>/dist).
    'baseline-dist': { type: 'string' },
  },
})
if (values.database !== 'sqlite' && values.database !== 'postgres') throw new Error(`--database ${values.database}: sqlite or postgres`)
const postgresUrl = process.env.BENCH_POSTGRES_URL
if (values.database === 'postgres' && (postgresUrl === undefined || postgresUrl === '')) throw new Error('--database postgres needs BENCH_POSTGRES_URL')

const systems = values.systems.split(',').map((name) => {
  const system = allSystemNames.find((known) => known === name)
  if (system === undefined) throw new Error(`unknown system ${name}: one of ${allSystemNames.join(', ')}`)
  return system
})
const requests = Number(values.requests)
const warmup = Number(values.warmup)

/** Instructions TurboFan spent compiling in a dump: with --single-threaded it compiles on the main thread, so code
 * still warming up lands in the count (analysis.md, "PATCH instructions against aa70cbd"). */
function compileInstructions (file: string): number {
  const text = execFileSync('callgrind_annotate', ['--inclusive=yes', file], { encoding: 'utf8', maxBuffer: 1 << 28 })
  const line = /^\s*([\d,]+) .*Runtime_CompileOptimized\(/m.exec(text)
  return Number(line?.[1]?.replaceAll(',', '') ?? 0)
}

/** The events callgrind counted in a dump, by name (Ir, I1mr, D1mr, Bcm, ...). */
function eventTotals (file: string): Map<string, number> {
  const text = readFileSync(file, 'utf8')
  const names = /^events: (.+)$/m.exec(text)?.[1]?.split(' ') ?? []
  const totals = /^totals: (.+)$/m.exec(text)?.[1]?.split(' ').map(Number) ?? []
  return new Map(names.map((name, index) => [name, totals[index] ?? 0]))
}

async function count (system: SystemName, seeded: DatabaseTarget): Promise<Map<string, number>> {
  const out = join(values.data, `callgrind-${system}.out`)
  const tool = ['--tool=callgrind', '--quiet', `--callgrind-out-file=${out}`, '--dump-instr=no', ...values['cache-sim'] ? ['--cache-sim=yes', '--branch-sim=yes'] : []]
  // One thread: the GC's helper threads would otherwise run the same work on another thread's counters.
  const target = seeded.kind === 'sqlite' ? copySqlite(seeded, `instructions-${system}`) : seeded
  const server = await startServer(system, target, { execArgv: ['--single-threaded'], wrapper: { command: 'valgrind', args: tool }, library: system === 'viewsets-baseline' ? values['baseline-dist'] : undefined })
  const url = `${server.url}${values.path}`
  const request = { method: values.method as 'GET', body: values.body, headers: values.body === undefined ? {} : { 'content-type': 'application/json' } } // autocannon types its method as a literal union; the value is checked by the server's answer below
  for (const path of values['warm-paths'].split(',').filter((path) => path !== '')) await autocannon({ url: `${server.url}${path}`, connections: 4, amount: 800 })
  await autocannon({ url, connections: 4, amount: warmup, ...request })
  execFileSync('callgrind_control', ['-z', String(server.pid)], { stdio: 'ignore' })
  const result = await autocannon({ url, connections: 4, amount: requests, ...request })
  execFileSync('callgrind_control', ['-d', 'measured', String(server.pid)], { stdio: 'ignore' })
  await server.stop()
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${system}: ${result.non2xx} non-2xx answers and ${result.errors} errors`)
  // callgrind numbers each dump: the first one asked for is `.1`.
  const totals = eventTotals(`${out}.1`)
  totals.set('compile', compileInstructions(`${out}.1`))
  return totals
}

const seeded = postgresUrl !== undefined && values.database === 'postgres' ? await seedPostgres(postgresUrl) : seedSqlite(join(values.data, 'instructions.db'))
const shown: Array<[string, string]> = [['Ir', 'instructions'], ['compile', 'of which TurboFan compiling'], ['I1mr', 'I1 misses'], ['D1mr', 'D1 read misses'], ['Bcm', 'mispredicted conditional branches'], ['Bim', 'mispredicted indirect branches']]
console.log(`${values.method} ${values.path}: per request, over ${requests} requests after ${warmup} unmeasured ones`)
for (const system of systems) {
  const totals = await count(system, seeded)
  const figures = shown.filter(([event]) => totals.has(event)).map(([event, name]) => `${name} ${Math.round((totals.get(event) ?? 0) / requests).toLocaleString('en-US')}`)
  console.log(`${system.padEnd(22)} ${figures.join(' · ')}`)
}
if (postgresUrl !== undefined && values.database === 'postgres') await dropPostgres(postgresUrl)
