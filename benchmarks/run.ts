import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { chartSvg } from './chart.js'
import { measure, probe } from './measure.js'
import type { Sample } from './measure.js'
import { startServer } from './processes.js'
import type { RunningServer } from './processes.js'
import { consoleReport, markdownReport } from './report.js'
import { addRatios, cellOf, checkTargets, describeMachine } from './results.js'
import type { DatabaseKind, Results, ScenarioResult } from './results.js'
import { scenarioById, scenarioIds, systemNames } from './scenarios.js'
import type { ScenarioId, SystemName } from './scenarios.js'
import { dropPostgres, seedPostgres, seedSqlite } from './seed.js'
import type { DatabaseTarget } from './seed.js'

// `npm run bench`: every system in its own process, measured in interleaved rounds on the same data.
// `npm run bench -- --quick` runs the same pipeline in about a minute.

const here = fileURLToPath(new URL('.', import.meta.url))

export interface BenchOptions {
  /** Seconds of measured load per system, scenario and round. */
  duration: number
  /** Seconds of load before each measurement, not counted. */
  warmup: number
  rounds: number
  connections: number
  systems: readonly SystemName[]
  scenarios: readonly ScenarioId[]
  /** The PostgreSQL server of the `postgres` runs (they use a schema of their own). */
  postgresUrl: string | undefined
  /** The databases to run on (default: SQLite, and PostgreSQL when `postgresUrl` is set). */
  databases: readonly DatabaseKind[]
  /** Where the seeded SQLite file (and CPU profiles) go. */
  dataDir: string
  /** Where results.json, results.md and chart.svg go; undefined writes nothing. */
  outDir: string | undefined
  /** Systems whose server runs with `--cpu-prof` (profiles land in `<dataDir>/profiles`). */
  profile: readonly SystemName[]
  progress: boolean
  quick: boolean
  log: (line: string) => void
}

/** Defaults sized so that a full run (SQLite and PostgreSQL) stays under 10 minutes on 2 cores. */
export function defaultOptions (overrides: Partial<BenchOptions> = {}): BenchOptions {
  const postgresUrl = overrides.postgresUrl ?? (process.env.BENCH_POSTGRES_URL || undefined)
  const databases = overrides.databases ?? (postgresUrl === undefined ? ['sqlite'] : ['sqlite', 'postgres'])
  const both = databases.length > 1
  const quick = overrides.quick ?? false
  return {
    // 28 measurements per database and round. More, shorter rounds give a median that a burst of load
    // elsewhere on the machine moves less; with both databases, 5 rounds of 1.6 s stay near 8 minutes.
    duration: quick ? (both ? 0.5 : 1) : both ? 1.2 : 2.5,
    warmup: quick ? 0.3 : both ? 0.4 : 0.6,
    rounds: quick ? 1 : 5,
    connections: 10,
    systems: systemNames,
    scenarios: scenarioIds,
    postgresUrl,
    databases,
    dataDir: join(here, '.data'),
    outDir: quick ? join(here, '.data', 'quick') : here,
    profile: [],
    progress: process.stderr.isTTY,
    quick,
    log: (line) => { process.stderr.write(line + '\n') },
    ...overrides,
  }
}

async function measureDatabase (database: DatabaseKind, target: DatabaseTarget, options: BenchOptions): Promise<Partial<Record<ScenarioId, ScenarioResult>>> {
  const profileDir = join(options.dataDir, 'profiles')
  const servers = await Promise.all(options.systems.map(async (system) =>
    await startServer(system, target, { profileDir: options.profile.includes(system) ? profileDir : undefined })))
  const scenarios: Partial<Record<ScenarioId, ScenarioResult>> = {}
  try {
    for (const [index, id] of options.scenarios.entries()) {
      const scenario = scenarioById.get(id)
      if (scenario === undefined) throw new Error(`unknown scenario ${id}`)
      const result: ScenarioResult = { title: scenario.title, systems: {}, ratios: {} }
      scenarios[id] = result
      const active: RunningServer[] = []
      for (const server of servers) {
        const reason = server.unsupported[id]
        if (reason !== undefined) {
          result.systems[server.system] = { status: 'n/a', reason }
          continue
        }
        const problem = await probe(server, scenario)
        if (problem === undefined) active.push(server)
        else {
          result.systems[server.system] = { status: 'failed', reason: problem }
          options.log(`! ${database} ${scenario.title} / ${server.system}: ${problem}`)
        }
      }
      const samples = new Map<SystemName, Sample[]>(active.map((server) => [server.system, []]))
      for (let round = 0; round < options.rounds; round++) {
        // Rotate the order each round (A B C D, B C D A, ...) so that drift does not favour a position.
        const order = active.map((_, position) => active[(position + round) % active.length] as RunningServer)
        for (const server of order) {
          const title = `${database} ${scenario.title} · ${server.system} · ${round + 1}/${options.rounds}`
          const sample = await measure(server, scenario, { ...options, seed: 1000 * index + round }, title)
          samples.get(server.system)?.push(sample)
          const broken = sample.errors + sample.non2xx > 0 ? ` BROKEN: ${sample.errors} errors, ${sample.non2xx} non-2xx` : ''
          options.log(`  ${title.padEnd(60)} ${Math.round(sample.requestsPerSecond).toLocaleString('en-US').padStart(8)} req/s  p50 ${sample.p50.toFixed(2)} ms  p99 ${sample.p99.toFixed(2)} ms  ${Math.round(sample.peakRssMiB)} MiB  ${Math.round(sample.cpuMicrosPerRequest)} µs CPU/req${broken}`)
        }
      }
      for (const [system, rounds] of samples) result.systems[system] = cellOf(rounds)
    }
  } finally {
    await Promise.all(servers.map(async (server) => { await server.stop() }))
  }
  addRatios(scenarios)
  return scenarios
}

/** Runs the whole suite and writes its outputs; returns the results. */
export async function runBenchmarks (options: BenchOptions): Promise<Results> {
  const results: Results = {
    date: new Date().toISOString(),
    machine: describeMachine(),
    settings: { rounds: options.rounds, warmup: options.warmup, duration: options.duration, connections: options.connections, quick: options.quick },
    databases: {},
    targets: [],
  }
  if (options.databases.includes('sqlite')) {
    options.log('Seeding SQLite…')
    results.databases.sqlite = await measureDatabase('sqlite', seedSqlite(join(options.dataDir, 'bench.db')), options)
  }
  if (options.databases.includes('postgres')) {
    const url = options.postgresUrl
    if (url === undefined) throw new Error('PostgreSQL runs need BENCH_POSTGRES_URL, such as postgres://postgres@127.0.0.1:5432/test')
    options.log('Seeding PostgreSQL…')
    const target = await seedPostgres(url)
    try {
      results.databases.postgres = await measureDatabase('postgres', target, options)
    } finally {
      await dropPostgres(url)
    }
  }
  results.targets = checkTargets(results)
  if (options.outDir !== undefined) {
    mkdirSync(options.outDir, { recursive: true })
    writeFileSync(join(options.outDir, 'results.json'), JSON.stringify(results, null, 2) + '\n')
    writeFileSync(join(options.outDir, 'results.md'), markdownReport(results))
    writeFileSync(join(options.outDir, 'chart.svg'), chartSvg(results))
  }
  return results
}

function list<T extends string> (value: string | undefined, allowed: readonly T[], option: string): T[] | undefined {
  if (value === undefined) return undefined
  const items = value.split(',').map((item) => item.trim()).filter((item) => item !== '')
  for (const item of items) {
    if (!(allowed as readonly string[]).includes(item)) throw new Error(`--${option}: unknown ${JSON.stringify(item)}; allowed: ${allowed.join(', ')}`)
  }
  return items as T[]
}

function number (value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined
  const parsed = Number(value)
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`--${option}: expected a non-negative number, got ${value}`)
  return parsed
}

/** Parses the command line into options. */
export function optionsFromArgs (args: string[]): BenchOptions {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: 'boolean' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      rounds: { type: 'string' },
      connections: { type: 'string' },
      systems: { type: 'string' },
      scenarios: { type: 'string' },
      databases: { type: 'string' },
      out: { type: 'string' },
      data: { type: 'string' },
      profile: { type: 'string' },
      'no-progress': { type: 'boolean' },
      help: { type: 'boolean' },
    },
  })
  if (values.help === true) {
    process.stdout.write(`npm run bench -- [options]
  --quick                 about a minute: 1 round of 1 s per system and scenario (writes to benchmarks/.data/quick unless --out)
  --duration <s>          measured seconds per system, scenario and round
  --warmup <s>            warm-up seconds before each measurement
  --rounds <n>            interleaved rounds (the median is reported)
  --connections <n>       autocannon connections (default 10)
  --systems a,b           ${systemNames.join(', ')}
  --scenarios a,b         ${scenarioIds.join(', ')}
  --databases a,b         sqlite, postgres (default: sqlite, and postgres when BENCH_POSTGRES_URL is set)
  --out <dir>             where results.json, results.md and chart.svg go (default benchmarks/; benchmarks/.data/quick with --quick)
  --data <dir>            where the seeded SQLite file and profiles go (default benchmarks/.data)
  --profile a,b           run these systems' servers with --cpu-prof (profiles in <data>/profiles)
  --no-progress           no progress bars
`)
    process.exit(0)
  }
  const overrides: Partial<BenchOptions> = { quick: values.quick === true }
  const set = <K extends keyof BenchOptions>(key: K, value: BenchOptions[K] | undefined) => { if (value !== undefined) overrides[key] = value }
  set('duration', number(values.duration, 'duration'))
  set('warmup', number(values.warmup, 'warmup'))
  set('rounds', number(values.rounds, 'rounds'))
  set('connections', number(values.connections, 'connections'))
  set('systems', list(values.systems, systemNames, 'systems'))
  set('scenarios', list(values.scenarios, scenarioIds, 'scenarios'))
  set('profile', list(values.profile, systemNames, 'profile'))
  set('databases', list(values.databases, ['sqlite', 'postgres'] as const, 'databases'))
  if (values.out !== undefined) overrides.outDir = resolve(values.out)
  if (values.data !== undefined) overrides.dataDir = resolve(values.data)
  if (values['no-progress'] === true) overrides.progress = false
  return defaultOptions(overrides)
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const options = optionsFromArgs(process.argv.slice(2))
  const started = Date.now()
  runBenchmarks(options).then((results) => {
    process.stdout.write(consoleReport(results) + '\n')
    process.stdout.write(`\nDone in ${Math.round((Date.now() - started) / 1000)} s.${options.outDir === undefined ? '' : ` Wrote ${join(options.outDir, 'results.json')}, results.md and chart.svg.`}\n`)
  }).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
    process.exitCode = 1
  })
}
