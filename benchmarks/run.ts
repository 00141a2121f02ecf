import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { ensureBaseline } from './baseline.js'
import type { Baseline } from './baseline.js'
import { ensureBuilt } from './build.js'
import { chartSvg } from './chart.js'
import { growthChartSvg } from './growth-chart.js'
import { updateReadme } from './readme.js'
import { measureGrowth } from './growth.js'
import { measure, probe, warmUp } from './measure.js'
import type { Sample } from './measure.js'
import { startServer } from './processes.js'
import type { RunningServer, ServerRuntimeKind } from './processes.js'
import { consoleReport, markdownReport } from './report.js'
import {
  addRatios, cellOf, checkTargets, describeMachine, equivalentScenarios, etagCosts, peakMemory, ruledScenarios,
  targetScenarios,
} from './results.js'
import type { DatabaseKind, Results, ScenarioResult } from './results.js'
import { allSystemNames, baselineSystem, scenarioById, scenarioIds, systemNames } from './scenarios.js'
import type { Scenario, ScenarioId, SystemName } from './scenarios.js'
import { doomedRows } from './doomed-rows.js'
import type { DoomedRows } from './doomed-rows.js'
import { copySqlite, dropPostgres, seedPostgres, seedSqlite } from './seed.js'
import type { DatabaseTarget } from './seed.js'
import { measureDocs, measureStartup } from './startup.js'

// `npm run bench`: every system in its own process (plain node over dist/), measured in interleaved rounds
// on the same data; then the startup of an app with 50 viewsets, and how cost grows on 1,000,000 rows.
// `npm run bench -- --quick` runs the same pipeline in a few minutes.

/** The phases of a run: the side-by-side scenarios, the startup, and the growth on a large table. */
export const phaseNames = ['throughput', 'startup', 'growth'] as const
export type PhaseName = (typeof phaseNames)[number]

const here = fileURLToPath(new URL('.', import.meta.url))

export interface BenchOptions {
  /** Seconds of measured load per system, scenario and round (unless `amount` is set). */
  duration: number
  /**
   * Requests per measurement, instead of `duration` seconds: each measurement sends exactly this many (autocannon's
   * `amount`) and ends when all are answered, so that every cell completes requests however busy the machine is. The
   * smoke test sets it; unset (the default, and `npm run bench`), measurements are timed.
   */
  amount?: number | undefined
  /** Seconds of load before each measurement, not counted. */
  warmup: number
  /** Seconds of load per read scenario for each fresh server before the first measurement (default: `warmup`). */
  serverWarmup?: number | undefined
  rounds: number
  connections: number
  systems: readonly SystemName[]
  /**
   * A git ref: the run adds `viewsets-baseline`, the same viewsets over the library built at that commit, to
   * compare the build before a change with the build after it in the same interleaved rounds.
   */
  baseline?: string
  scenarios: readonly ScenarioId[]
  /** The PostgreSQL server of the `postgres` runs (they use a schema of their own). */
  postgresUrl: string | undefined
  /** The databases to run on (default: SQLite, and PostgreSQL when `postgresUrl` is set). */
  databases: readonly DatabaseKind[]
  /** Where the seeded SQLite file (and CPU profiles) go. */
  dataDir: string
  /** Where results.json, results.md and chart.svg go; undefined writes nothing. */
  outDir: string | undefined
  /** Also write the figures into README.md's benchmark section (a full run of `npm run bench` does). */
  readme: boolean
  /** A results.json to report again (targets checked again) instead of measuring. */
  reportFrom?: string
  /** A measurement during which the hypervisor stole more than this share of the CPU (in %) is taken again (Linux). */
  stealLimit: number
  /** At most this share of the measurements is taken again (keeps the run's duration bounded). */
  retryShare: number
  /** Systems whose server runs with `--cpu-prof` (profiles land in `<dataDir>/profiles`). */
  profile: readonly SystemName[]
  phases: readonly PhaseName[]
  /** `dist` (default): servers run with plain node over dist/; `source`: through tsx over the TypeScript sources. */
  runtime: ServerRuntimeKind
  /** Rows of the growth table (issue 15: 1,000,000). */
  growthRows: number
  /** Timed requests per growth figure (the median is reported). */
  growthRequests: number
  progress: boolean
  quick: boolean
  log: (line: string) => void
}

/** The scenarios of a quick run: those of issue 43's targets (targets.ts), in the blocks' order. */
const quickScenarios: readonly ScenarioId[] = scenarioIds.filter((id) =>
  id === 'eager-n1' || [...targetScenarios, ...ruledScenarios, ...equivalentScenarios].some((target) => target === id))

/** Defaults sized so that a full run (SQLite and PostgreSQL) stays under 15 minutes on 2 cores. */
export function defaultOptions (overrides: Partial<BenchOptions> = {}): BenchOptions {
  const postgresUrl = overrides.postgresUrl ?? (process.env.BENCH_POSTGRES_URL || undefined)
  const databases = overrides.databases ?? (postgresUrl === undefined ? ['sqlite'] : ['sqlite', 'postgres'])
  const both = databases.length > 1
  const quick = overrides.quick ?? false
  // Quick: the systems of issue 43's targets (raw, Platformatic and ours; the hand-written Kysely peer sets none).
  const systems = overrides.systems ?? (quick ? systemNames.filter((system) => system !== 'kysely') : systemNames)
  return {
    // 44 measurements per database and round. On a shared virtual machine a system's speed drifts within
    // seconds, so many short interleaved rounds give steadier medians than a few long ones: with both
    // databases, 7 rounds of about 1 s (and up to 5% of the measurements taken again) take about 11 minutes.
    duration: quick ? (both ? 0.5 : 1) : both ? 0.7 : 1.5,
    // Quick: 0.2 s before each measurement, 0.1 s per read for a fresh server (under 2 minutes on 2 busy cores).
    warmup: quick ? 0.2 : both ? 0.3 : 0.5,
    serverWarmup: quick ? 0.1 : undefined,
    stealLimit: 10,
    retryShare: 0.05,
    rounds: quick ? 1 : both ? 7 : 8,
    connections: 10,
    // Quick: the scenarios issue 43 sets targets on (the ETag's and the ours-against-ours rule rows left out).
    scenarios: quick ? quickScenarios : scenarioIds,
    postgresUrl,
    databases,
    dataDir: join(here, '.data'),
    outDir: quick ? join(here, '.data', 'quick') : here,
    readme: false,
    profile: [],
    phases: phaseNames,
    runtime: 'dist',
    growthRows: 1_000_000,
    growthRequests: quick ? 10 : 30,
    progress: process.stderr.isTTY,
    quick,
    log: (line) => {
      process.stderr.write(line + '\n')
    },
    ...overrides,
    // A baseline is there to be measured: its system joins whichever systems were chosen.
    systems:
      overrides.baseline === undefined || systems.includes(baselineSystem) ? systems : [...systems, baselineSystem],
  }
}

/**
 * Scenarios measured in the same rounds, so that their ratios compare measurements taken side by side:
 * GET beside the GETs that isolate the ETag's cost and the row rule's, eager beside N+1, a LIST with its relation
 * beside the same under rules on both tables. DELETE comes last: the rows it
 * inserts and deletes never meet another scenario.
 */
const blocks: ReadonlyArray<readonly ScenarioId[]> = [
  ['get', 'get-versioned', 'get-untagged', 'get-scoped', 'get-history'],
  ['list10'],
  ['list100'],
  ['filter'],
  ['or-filter'],
  ['aggregate'],
  ['eager', 'eager-n1'],
  ['list-author', 'list-author-scoped'],
  ['post', 'nested-post'],
  ['patch', 'patch-history'],
  ['patch-many'],
  ['delete'],
  ['get-ruled'],
  ['list10-ruled'],
  ['list100-ruled'],
  ['filter-ruled'],
  ['patch-ruled'],
  ['delete-ruled'],
]

interface Slot {
  id: ScenarioId
  index: number
  scenario: Scenario
  server: RunningServer
}

/** Requests/s assumed before a system's first measurement, to size the first batch of rows to delete. */
const assumedRate: Record<DatabaseKind, number> = { sqlite: 30_000, postgres: 15_000 }

/**
 * Where each system finds the data: on SQLite a copy of the seeded file per system, so that no server's writes
 * (its WAL, the checkpoints its commits run) land in another's measurements; on PostgreSQL the one database.
 */
function targetsOf (target: DatabaseTarget, systems: readonly SystemName[]): Map<SystemName, DatabaseTarget> {
  return new Map(systems.map((system) => [system, target.kind === 'sqlite' ? copySqlite(target, system) : target]))
}

async function measureDatabase (
  database: DatabaseKind,
  seeded: DatabaseTarget,
  options: BenchOptions,
  baseline: Baseline | undefined,
  retries: { left: number }
): Promise<Partial<Record<ScenarioId, ScenarioResult>>> {
  const profileDir = join(options.dataDir, 'profiles')
  const targets = targetsOf(seeded, options.systems)
  const targetOf = (system: SystemName): DatabaseTarget => targets.get(system) ?? seeded
  const started = await Promise.allSettled(
    options.systems.map(
      async (system) =>
        await startServer(system, targetOf(system), {
          profileDir: options.profile.includes(system) ? profileDir : undefined,
          runtime: options.runtime,
          library: system === baselineSystem ? baseline?.library : undefined,
        })
    )
  )
  const servers = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []))
  const failed = started.find((outcome) => outcome.status === 'rejected')
  if (failed !== undefined) {
    // The servers that did start would keep the runner alive: stop them before giving up.
    await Promise.all(
      servers.map(async (server) => {
        await server.stop()
      })
    )
    throw failed.reason
  }
  for (const server of servers) {
    const { execArgv, library } = server.runtime
    options.log(
      `  ${server.system} (pid ${server.pid}): node ${[...execArgv, 'server.js'].join(' ')}, fastify-viewsets → ${relative(process.cwd(), library)}`
    )
    for (const [id, note] of Object.entries(server.notes)) options.log(`    ${id}: ${note}`)
  }
  // A fresh process runs its first scenario on cold code (the first measured slot would pay for the JIT):
  // each server gets a little unmeasured load on each read first. Writes wait for their own block (their
  // first round's warm-up): on PostgreSQL an UPDATE moves rows, and Platformatic's LIST, which has no
  // ORDER BY, would then answer them out of key order.
  options.log('Warming the servers up…')
  for (const server of servers) {
    for (const id of options.scenarios) {
      const scenario = scenarioById.get(id)
      if (scenario === undefined || scenario.writes === true || server.unsupported[id] !== undefined) continue
      const seconds = options.serverWarmup ?? options.warmup
      await warmUp(server, scenario, { connections: options.connections, seed: 99 }, seconds)
    }
  }
  const scenarios: Partial<Record<ScenarioId, ScenarioResult>> = {}
  const samples = new Map<string, Sample[]>()
  // The rows DELETE deletes, in each system's own data (one batch per SQLite copy, one for PostgreSQL).
  const batches = new Map<string, DoomedRows>()
  const doomedOf = (system: SystemName): DoomedRows => {
    const target = targetOf(system)
    const key = target.kind === 'sqlite' ? target.file : target.url
    let rows = batches.get(key)
    if (rows === undefined) batches.set(key, (rows = doomedRows(target)))
    return rows
  }
  // The fastest a system has gone so far (GET comes first): a DELETE cannot outrun it.
  const fastest = new Map<SystemName, number>()
  // Rows for `seconds` of load at twice the fastest rate seen, plus `requests` counted ones.
  const refill = async (system: SystemName, seconds: number, requests = 0) => {
    // Never below the assumed rate: a GET measured over a handful of requests (the smoke test's `amount`) or on a busy
    // machine reads far slower than a DELETE's time-bound warm-up may then go, which ran the batch out (404s).
    const rate = Math.max(fastest.get(system) ?? 0, assumedRate[database])
    await doomedOf(system).refill(Math.ceil(rate * seconds * 2) + 200 + requests)
  }
  try {
    for (const block of blocks) {
      const slots: Slot[] = []
      for (const id of block) {
        const index = options.scenarios.indexOf(id)
        const scenario = scenarioById.get(id)
        if (index === -1 || scenario === undefined) continue
        const result: ScenarioResult = { title: scenario.title, systems: {}, ratios: {} }
        scenarios[id] = result
        for (const server of servers) {
          const reason = server.unsupported[id]
          if (reason !== undefined) {
            result.systems[server.system] = { status: 'n/a', reason }
            continue
          }
          if (scenario.deletes === true) await refill(server.system, 0)
          const problem = await probe(server, scenario, doomedOf(server.system))
          if (problem === undefined) slots.push({ id, index, scenario, server })
          else {
            result.systems[server.system] = { status: 'failed', reason: problem }
            options.log(`! ${database} ${scenario.title} / ${server.system}: ${problem}`)
          }
        }
      }
      for (let round = 0; round < options.rounds; round++) {
        // Rotate the order each round (A B C D, B C D A, ...) so that drift does not favour a position.
        const order = slots.map((_, position) => slots[(position + round) % slots.length] as Slot)
        for (const { id, index, scenario, server } of order) {
          const title = `${database} ${scenario.title} · ${server.system} · ${round + 1}/${options.rounds}`
          // The servers stay up for the whole run: after the first round a short warm-up is enough.
          const warmup = round === 0 ? options.warmup : Math.min(options.warmup, 0.2)
          const run = async (warmup: number) => {
            if (scenario.deletes === true) {
              await (options.amount === undefined
                ? refill(server.system, warmup + options.duration)
                : refill(server.system, warmup, options.amount))
            }
            const doomed = doomedOf(server.system)
            const sample = await measure(
              server,
              scenario,
              { ...options, warmup, seed: 1000 * index + round, doomed },
              title
            )
            if (scenario.deletes === true) await doomed.clear()
            return sample
          }
          let sample = await run(warmup)
          // On a virtual machine the hypervisor may take the CPU away for a while: measure such a slot again
          // (a bounded number of times per run) and keep the steadier of the two.
          if (sample.stealPercent > options.stealLimit && retries.left > 0) {
            retries.left--
            options.log(
              `  ${title.padEnd(60)} again: ${sample.stealPercent}% of the CPU time was stolen by the hypervisor`
            )
            const again = await run(Math.min(options.warmup, 0.3))
            if (again.stealPercent < sample.stealPercent) sample = again
          }
          fastest.set(server.system, Math.max(fastest.get(server.system) ?? 0, sample.requestsPerSecond))
          const key = `${id}/${server.system}`
          samples.set(key, [...(samples.get(key) ?? []), sample])
          const broken =
            sample.errors + sample.non2xx > 0 ? ` BROKEN: ${sample.errors} errors, ${sample.non2xx} non-2xx` : ''
          options.log(
            `  ${title.padEnd(60)} ${Math.round(sample.requestsPerSecond).toLocaleString('en-US').padStart(8)} req/s  p50 ${sample.p50.toFixed(2)} ms  p99 ${sample.p99.toFixed(2)} ms  ${Math.round(sample.peakRssMiB)} MiB  ${Math.round(sample.cpuMicrosPerRequest)} µs CPU/req  machine ${sample.machineBusyPercent}% busy, ${sample.stealPercent}% stolen${broken}`
          )
        }
      }
      for (const { id, server } of slots) {
        const rounds = samples.get(`${id}/${server.system}`)
        const result = scenarios[id]
        const note = server.notes[id]
        if (rounds !== undefined && result !== undefined) {
          result.systems[server.system] = { ...cellOf(rounds), ...(note === undefined ? {} : { note }) }
        }
      }
    }
  } finally {
    await Promise.all(
      servers.map(async (server) => {
        await server.stop()
      })
    )
    await Promise.all(
      [...batches.values()].map(async (rows) => {
        await rows.close()
      })
    )
  }
  addRatios(scenarios)
  return scenarios
}

/** Runs the whole suite and writes its outputs; returns the results. */
export async function runBenchmarks (options: BenchOptions): Promise<Results> {
  if (options.reportFrom !== undefined) {
    const results = JSON.parse(readFileSync(options.reportFrom, 'utf8')) as Results
    results.targets = checkTargets(results)
    writeOutputs(results, options)
    return results
  }
  const measuresBaseline = options.systems.includes(baselineSystem) && options.phases.includes('throughput')
  if (measuresBaseline && options.baseline === undefined) {
    throw new Error(`--systems ${baselineSystem} needs --baseline <git-ref>: the commit whose build it runs`)
  }
  // Built before anything is timed (a first build of a ref takes a tsc run), and first, so that an unknown ref stops
  // the run at once.
  const baseline =
    measuresBaseline && options.baseline !== undefined ? ensureBaseline(options.baseline, options.log) : undefined
  ensureBuilt(options.log)
  const results: Results = {
    date: new Date().toISOString(),
    machine: describeMachine(),
    settings: {
      rounds: options.rounds,
      warmup: options.warmup,
      duration: options.duration,
      connections: options.connections,
      quick: options.quick,
      stealLimit: options.stealLimit,
      runtime: options.runtime,
      ...(baseline === undefined ? {} : { baseline: { ref: baseline.ref, commit: baseline.commit } }),
    },
    databases: {},
    targets: [],
  }
  const measurements = options.databases.length * options.scenarios.length * options.systems.length * options.rounds
  const retries = { left: Math.floor(measurements * options.retryShare) }
  const postgresUrl = () => {
    if (options.postgresUrl === undefined) {
      throw new Error('PostgreSQL runs need BENCH_POSTGRES_URL, such as postgres://postgres@127.0.0.1:5432/test')
    }
    return options.postgresUrl
  }
  if (options.phases.includes('throughput')) {
    if (options.databases.includes('sqlite')) {
      options.log('Seeding SQLite…')
      results.databases.sqlite = await measureDatabase(
        'sqlite',
        seedSqlite(join(options.dataDir, 'bench.db')),
        options,
        baseline,
        retries
      )
    }
    if (options.databases.includes('postgres')) {
      const url = postgresUrl()
      options.log('Seeding PostgreSQL…')
      const target = await seedPostgres(url)
      try {
        results.databases.postgres = await measureDatabase('postgres', target, options, baseline, retries)
      } finally {
        await dropPostgres(url)
      }
    }
    results.memory = {}
    results.etagCost = {}
    for (const [database, scenarios] of Object.entries(results.databases) as Array<
      [DatabaseKind, Partial<Record<ScenarioId, ScenarioResult>>]
    >) {
      results.memory[database] = peakMemory(scenarios)
      results.etagCost[database] = etagCosts(scenarios)
    }
  }
  if (options.phases.includes('startup')) {
    options.log('Startup: 50 viewsets to app.ready(), fresh plain-node processes…')
    // Quick: 3 processes instead of 5, and no viewsetDocs startups (issue 42's, no target of issue 43).
    results.startup = await measureStartup(join(options.dataDir, 'startup.db'), 50, options.quick ? 3 : 5)
    options.log(
      `  ${results.startup.totalMs} ms (imports ${results.startup.importMs} ms, registrations and ready ${results.startup.readyMs} ms)`
    )
    results.startup.docs = []
    for (const viewsets of options.quick ? [] : [50, 200]) {
      options.log(`Startup with viewsetDocs: ${viewsets} viewsets, the first GET /docs/json…`)
      const docs = await measureDocs(join(options.dataDir, `startup-docs-${viewsets}.db`), viewsets)
      results.startup.docs.push(docs)
      options.log(`  ${docs.firstDocsMs} ms (ready ${docs.readyMs} ms)`)
    }
  }
  if (options.phases.includes('growth')) {
    results.growth = {}
    for (const database of options.databases) {
      options.log(`Growth on ${database}: ${options.growthRows.toLocaleString('en-US')} rows (seeded once, then kept)…`)
      const growth = await measureGrowth(database, {
        rows: options.growthRows,
        requests: options.growthRequests,
        dataDir: options.dataDir,
        postgresUrl: database === 'postgres' ? postgresUrl() : undefined,
      })
      results.growth[database] = growth
      options.log(
        `  ${growth.seededSeconds > 0 ? `seeded in ${growth.seededSeconds} s; ` : ''}LIST ${growth.listMs} ms, count=true ${growth.countMs} ms; cursor page 1 ${growth.cursorFirstMs} ms, page ${growth.page} ${growth.cursorDeepMs} ms; offset page ${growth.page} ${growth.offsetDeepMs} ms`
      )
    }
  }
  results.targets = checkTargets(results)
  writeOutputs(results, options)
  return results
}

function writeOutputs (results: Results, options: BenchOptions): void {
  if (options.outDir !== undefined) {
    mkdirSync(options.outDir, { recursive: true })
    writeFileSync(join(options.outDir, 'results.json'), JSON.stringify(results, null, 2) + '\n')
    writeFileSync(join(options.outDir, 'results.md'), markdownReport(results))
    writeFileSync(join(options.outDir, 'chart.svg'), chartSvg(results))
    if (results.growth !== undefined) writeFileSync(join(options.outDir, 'growth.svg'), growthChartSvg(results))
  }
  if (options.readme) updateReadme(results)
}

function list<T extends string> (value: string | undefined, allowed: readonly T[], option: string): T[] | undefined {
  if (value === undefined) return undefined
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
  for (const item of items) {
    if (!(allowed as readonly string[]).includes(item)) {
      throw new Error(`--${option}: unknown ${JSON.stringify(item)}; allowed: ${allowed.join(', ')}`)
    }
  }
  return items as T[]
}

function number (value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined
  const parsed = Number(value)
  if (!Number.isFinite(parsed) || parsed < 0) {
    throw new Error(`--${option}: expected a non-negative number, got ${value}`)
  }
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
      baseline: { type: 'string' },
      scenarios: { type: 'string' },
      databases: { type: 'string' },
      out: { type: 'string' },
      data: { type: 'string' },
      profile: { type: 'string' },
      phases: { type: 'string' },
      runtime: { type: 'string' },
      'growth-rows': { type: 'string' },
      'report-from': { type: 'string' },
      'no-progress': { type: 'boolean' },
      help: { type: 'boolean' },
    },
  })
  if (values.help === true) {
    process.stdout.write(`npm run bench -- [options]
  --quick                 about 2 minutes: 1 round of 1 s per system and scenario of issue 43's targets (no kysely
                          column), short warm-ups, startup over 3 processes and without the viewsetDocs ones
                          (writes to benchmarks/.data/quick unless --out); --rounds 1 means --quick
  --duration <s>          measured seconds per system, scenario and round
  --warmup <s>            warm-up seconds before each measurement
  --rounds <n>            interleaved rounds (the median is reported)
  --connections <n>       autocannon connections (default 10)
  --systems a,b           ${systemNames.join(', ')} (default: all of these)
  --baseline <git-ref>    also run ${baselineSystem}: the viewsets over the library built at that ref (built once
                          into benchmarks/.data/baseline/<commit>), measured in the same interleaved rounds, with
                          "viewsets ÷ baseline" ratios: the build before a change against the build after it
  --scenarios a,b         ${scenarioIds.join(', ')}
  --databases a,b         sqlite, postgres (default: sqlite, and postgres when BENCH_POSTGRES_URL is set)
  --out <dir>             where results.json, results.md and chart.svg go (default benchmarks/; benchmarks/.data/quick with --quick)
  --data <dir>            where the seeded SQLite file and profiles go (default benchmarks/.data)
  --profile a,b           run these systems' servers with --cpu-prof (profiles in <data>/profiles)
  --phases a,b            ${phaseNames.join(', ')} (default: all)
  --runtime dist|source   servers over dist/ with plain node (default), or over the sources through tsx (to compare)
  --report-from <file>    measure nothing: write results.md, the charts (and with a full run's file, the README) from a results.json
  --growth-rows <n>       rows of the growth table (default 1,000,000; kept in <data> and reused)
  --no-progress           no progress bars
  --attack                the attack scenario instead (attack.ts): --attackers 0,1,8, --attack-seconds 10,
                          --attack-rows 1000000, --attack-workers default,0 (readWorkers), --attack-url sqlite:…
`)
    process.exit(0)
  }
  // `--rounds 1` is a quick run (issue 43: `npm run bench -- --rounds 1 --duration 1` is the quick mode).
  const overrides: Partial<BenchOptions> = { quick: values.quick === true || values.rounds === '1' }
  const set = <K extends keyof BenchOptions>(key: K, value: BenchOptions[K] | undefined) => {
    if (value !== undefined) overrides[key] = value
  }
  set('duration', number(values.duration, 'duration'))
  set('warmup', number(values.warmup, 'warmup'))
  set('rounds', number(values.rounds, 'rounds'))
  set('connections', number(values.connections, 'connections'))
  set('systems', list(values.systems, allSystemNames, 'systems'))
  set('baseline', values.baseline)
  set('scenarios', list(values.scenarios, scenarioIds, 'scenarios'))
  set('profile', list(values.profile, allSystemNames, 'profile'))
  set('databases', list(values.databases, ['sqlite', 'postgres'] as const, 'databases'))
  set('phases', list(values.phases, phaseNames, 'phases'))
  set('runtime', list(values.runtime, ['dist', 'source'] as const, 'runtime')?.[0])
  set('growthRows', number(values['growth-rows'], 'growth-rows'))
  if (values.out !== undefined) overrides.outDir = resolve(values.out)
  // Only a full run refreshes the README: every system (and no baseline), scenario and phase, written to benchmarks/.
  overrides.readme =
    overrides.quick !== true &&
    values.out === undefined &&
    values.systems === undefined &&
    values.baseline === undefined &&
    values.scenarios === undefined &&
    values.phases === undefined &&
    values.runtime === undefined
  if (values.data !== undefined) overrides.dataDir = resolve(values.data)
  if (values['no-progress'] === true) overrides.progress = false
  if (values['report-from'] !== undefined) overrides.reportFrom = resolve(values['report-from'])
  return defaultOptions(overrides)
}

const entry = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)
if (entry && process.argv.includes('--attack')) {
  // The attack scenario of issue 36 (attack.ts): its own options, its own table; its servers run over dist/ too.
  ensureBuilt((line) => { process.stderr.write(line + '\n') })
  import('./attack.js')
    .then(async ({ runAttack }) => { await runAttack(process.argv.slice(2).filter((arg) => arg !== '--attack')) })
    .catch((error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
      process.exitCode = 1
    })
} else if (entry) {
  const options = optionsFromArgs(process.argv.slice(2))
  const started = Date.now()
  runBenchmarks(options)
    .then((results) => {
      process.stdout.write(consoleReport(results) + '\n')
      process.stdout.write(
        `\nDone in ${Math.round((Date.now() - started) / 1000)} s.${options.outDir === undefined ? '' : ` Wrote ${join(options.outDir, 'results.json')}, results.md, chart.svg and growth.svg.`}\n`
      )
    })
    .catch((error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
      process.exitCode = 1
    })
}
