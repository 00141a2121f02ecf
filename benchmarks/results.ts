import { cpus, loadavg, release, totalmem } from 'node:os'
import { readFileSync } from 'node:fs'
import type { Sample } from './measure.js'
import { allSystemNames, baselineSystem, ourSystems, scenarioById, systemNames } from './scenarios.js'
import type { ScenarioId, SystemName } from './scenarios.js'

export type DatabaseKind = 'sqlite' | 'postgres'

/** One system on one scenario: the medians over the rounds, or why it did not run. */
export type Cell =
  | (Pick<Sample, 'requestsPerSecond' | 'p50' | 'p99' | 'peakRssMiB' | 'cpuMicrosPerRequest'> & {
    status: 'measured'
    /** Summed over all rounds: any non-zero count means the scenario is broken. */
    errors: number
    non2xx: number
    rounds: Sample[]
    /** What this system did differently on the scenario (a baseline's GET without an ETag). */
    note?: string
  })
  | { status: 'n/a' | 'failed'; reason: string }

export interface ScenarioResult {
  title: string
  systems: Partial<Record<SystemName, Cell>>
  /** Throughput of one of ours divided by another system's (median of the per-round ratios); keys such as
   * `viewsets/kysely`, `viewsets-own-kysely/raw`. */
  ratios: Record<string, number>
  /** Server CPU time per request of another system divided by ours; keys such as `kysely/viewsets`. */
  cpuRatios?: Record<string, number>
}

/** One target of issue 43, checked against one run: a ratio (≥ minimum) or a cost (≤ maximum). */
export interface Target {
  /** `all` for targets that are not per database (startup). */
  database: DatabaseKind | 'all'
  /** A scenario id, or `memory`, `startup`, `growth`. */
  scenario: string
  /** What is compared, such as `viewsets/raw` or `peak RSS − raw (MiB)`. */
  ratio: string
  minimum?: number
  maximum?: number
  value: number | null
  /** For a throughput ratio: the same comparison by server CPU time per request (theirs ÷ ours), steadier on a busy
   * machine. */
  cpuValue?: number | null
  /** For a throughput ratio: the lowest and the highest of its per-round ratios (the run's noise on this pair). */
  spread?: [number, number]
  met: boolean
}

/** The cost of the ETag on GET, from server CPU time per request measured side by side. */
export interface EtagCost {
  system: SystemName
  /** The GET that hashes its body, and the same GET without that hash (untagged, or tagged by a version column). */
  tagged: ScenarioId
  untagged: ScenarioId
  taggedMicros: number
  untaggedMicros: number
  /** taggedMicros − untaggedMicros, and that as a share of taggedMicros (in %). */
  micros: number
  percent: number
  /** Requests/s of the tagged GET divided by the untagged one's (median of per-round ratios). */
  throughputRatio: number | null
}

/** Startup of an app with many viewsets, in a fresh plain-node process over dist/ (medians of a few processes). */
export interface Startup {
  viewsets: number
  database: DatabaseKind
  /** From the process's start to `app.ready()`: module loading included. */
  totalMs: number
  /** Loading fastify and fastify-viewsets. */
  importMs: number
  /** createDatabase, the registrations and `app.ready()`. */
  readyMs: number
  runs: number
  /** The first `GET /docs/json` with viewsetDocs, by number of viewsets (50 and 200). */
  docs?: DocsStartup[]
}

/** The first `/docs/json` of an app with viewsetDocs and `viewsets` viewsets, in fresh processes, medians. */
export interface DocsStartup {
  viewsets: number
  /** createDatabase, viewsetDocs, the registrations and `app.ready()`. */
  readyMs: number
  /** The first `GET /docs/json` after `ready()`: the document is built then, once. */
  firstDocsMs: number
  runs: number
}

/** How cost grows on a large table: in-process latencies (app.inject), medians. */
export interface Growth {
  rows: number
  limit: number
  /** Page 1 of the default (offset) LIST, without and with `count=true`. */
  listMs: number
  countMs: number
  /** Page 1 and page 1,000 by cursor, and pages 1 and 1,000 by offset (the same rows), ordered by score. */
  cursorFirstMs: number
  cursorDeepMs: number
  offsetFirstMs: number
  offsetDeepMs: number
  page: number
  requests: number
  /** Seconds the seeding took, or 0 when the seeded table was reused. */
  seededSeconds: number
}

export interface Machine {
  cpus: number
  /** The 1, 5 and 15 minute load averages when the run started (0s where the platform has none). */
  loadAverage?: [number, number, number]
  model: string
  memoryGiB: number
  platform: string
  kernel: string
  node: string
}

export interface Settings {
  rounds: number
  warmup: number
  duration: number
  connections: number
  quick: boolean
  stealLimit: number
  /** How the servers ran (see processes.ts): `dist` is plain node over the built package. */
  runtime?: 'dist' | 'source'
  /** The build `viewsets-baseline` ran (`--baseline <ref>`): the ref as given and its commit. */
  baseline?: { ref: string; commit: string }
}

export interface Results {
  date: string
  machine: Machine
  settings: Settings
  databases: Partial<Record<DatabaseKind, Partial<Record<ScenarioId, ScenarioResult>>>>
  /** Peak RSS (MiB) per system under the load: the highest of all its measurements on that database. */
  memory?: Partial<Record<DatabaseKind, Partial<Record<SystemName, number>>>>
  etagCost?: Partial<Record<DatabaseKind, EtagCost[]>>
  startup?: Startup
  growth?: Partial<Record<DatabaseKind, Growth>>
  targets: Target[]
}

/** The machine, described as the README shows it. */
export function describeMachine (): Machine {
  let model = cpus()[0]?.model ?? 'unknown'
  try {
    // lscpu's "Model name" comes from here on Linux.
    model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? model
  } catch {
    // Not Linux: keep the model Node reports.
  }
  return {
    cpus: cpus().length,
    loadAverage: loadavg().map((load) => Math.round(load * 100) / 100) as [number, number, number],
    model,
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    platform: `${process.platform}-${process.arch}`,
    kernel: release(),
    node: process.version,
  }
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** Folds the rounds of one system into a cell. */
export function cellOf (rounds: Sample[]): Cell {
  return {
    status: 'measured',
    requestsPerSecond: median(rounds.map((sample) => sample.requestsPerSecond)),
    p50: median(rounds.map((sample) => sample.p50)),
    p99: median(rounds.map((sample) => sample.p99)),
    errors: rounds.reduce((sum, sample) => sum + sample.errors, 0),
    non2xx: rounds.reduce((sum, sample) => sum + sample.non2xx, 0),
    peakRssMiB: Math.max(...rounds.map((sample) => sample.peakRssMiB)),
    cpuMicrosPerRequest: median(rounds.map((sample) => sample.cpuMicrosPerRequest)),
    rounds,
  }
}

export function throughput (cell: Cell | undefined): number | undefined {
  return cell?.status === 'measured' && cell.requestsPerSecond > 0 ? cell.requestsPerSecond : undefined
}

const round2 = (value: number) => Math.round(value * 100) / 100

/**
 * The ratios of a database's scenarios, computed in place once every scenario is measured. Each ratio is
 * the median of the per-round ratios: systems measured in the same round ran seconds apart, so a burst of
 * load elsewhere on the machine moves both sides of a pair more than it moves their ratio. `cpuRatios`
 * divide the other system's server CPU time per request by viewsets' (above 1: viewsets spends less).
 */
export function addRatios (scenarios: Partial<Record<ScenarioId, ScenarioResult>>): void {
  for (const [id, result] of Object.entries(scenarios) as Array<[ScenarioId, ScenarioResult]>) {
    const cpuRatios: Record<string, number> = {}
    for (const name of ourSystems) {
      const ours = result.systems[name]
      if (ours?.status !== 'measured') continue
      const others: Array<[string, Cell | undefined]> = [
        ['kysely', result.systems.kysely],
        ['raw', result.systems.raw],
        ['platformatic', result.systems.platformatic],
      ]
      if (id === 'eager') others.push(['n+1', scenarios['eager-n1']?.systems.kysely])
      // With --baseline: this build against the one before the change (`viewsets/viewsets-baseline`).
      if (name === 'viewsets' && result.systems[baselineSystem] !== undefined) {
        others.push([baselineSystem, result.systems[baselineSystem]])
      }
      for (const [other, theirs] of others) {
        const paired = pairedRatio(ours, theirs)
        if (paired !== null) result.ratios[`${name}/${other}`] = paired
        if (theirs?.status === 'measured' && ours.cpuMicrosPerRequest > 0) {
          cpuRatios[`${other}/${name}`] = round2(theirs.cpuMicrosPerRequest / ours.cpuMicrosPerRequest)
        }
      }
    }
    result.cpuRatios = cpuRatios
  }
}

/** The median of per-round throughput ratios a ÷ b (rounds measured seconds apart), or null. */
function pairedRatio (a: Cell | undefined, b: Cell | undefined): number | null {
  if (a?.status !== 'measured' || b?.status !== 'measured') return null
  const paired = a.rounds.flatMap((sample, round) => {
    const other = b.rounds[round]
    return other !== undefined && other.requestsPerSecond > 0
      ? [sample.requestsPerSecond / other.requestsPerSecond]
      : []
  })
  return paired.length > 0 ? round2(median(paired)) : null
}

/** The systems a run has, in the order they are shown: the default ones, and the baseline when it ran. */
export function shownSystems (results: Pick<Results, 'databases'>): SystemName[] {
  return hasBaseline(results) ? [...systemNames, baselineSystem] : [...systemNames]
}

/** Whether `viewsets-baseline` ran (`--baseline`): its column and the `viewsets ÷ baseline` ratios show only then. */
export function hasBaseline (results: Pick<Results, 'databases'>): boolean {
  return Object.values(results.databases).some((scenarios) =>
    Object.values(scenarios ?? {}).some((result) => result.systems[baselineSystem] !== undefined)
  )
}

/** Peak RSS per system over all of a database's measurements. */
export function peakMemory (
  scenarios: Partial<Record<ScenarioId, ScenarioResult>>
): Partial<Record<SystemName, number>> {
  const peaks: Partial<Record<SystemName, number>> = {}
  for (const result of Object.values(scenarios)) {
    for (const system of allSystemNames) {
      const cell = result.systems[system]
      if (cell?.status === 'measured') peaks[system] = Math.round(Math.max(peaks[system] ?? 0, cell.peakRssMiB))
    }
  }
  return peaks
}

/**
 * The ETag's cost on GET: viewsets' GET (a SHA-1 of the body) against its GET of a versionField row (the
 * version is the tag, nothing hashed), and raw's GET (the same hash) against raw's GET without a tag.
 */
export function etagCosts (scenarios: Partial<Record<ScenarioId, ScenarioResult>>): EtagCost[] {
  const pairs: Array<[SystemName, ScenarioId]> = [
    ['raw', 'get-untagged'],
    ['raw', 'get-versioned'],
    ['viewsets', 'get-versioned'],
    ['viewsets-own-kysely', 'get-versioned'],
  ]
  return pairs.flatMap(([system, untagged]) => {
    const a = scenarios.get?.systems[system]
    const b = scenarios[untagged]?.systems[system]
    if (a?.status !== 'measured' || b?.status !== 'measured') return []
    const micros = a.cpuMicrosPerRequest - b.cpuMicrosPerRequest
    return [
      {
        system,
        tagged: 'get',
        untagged,
        taggedMicros: Math.round(a.cpuMicrosPerRequest * 10) / 10,
        untaggedMicros: Math.round(b.cpuMicrosPerRequest * 10) / 10,
        micros: Math.round(micros * 10) / 10,
        percent: Math.round((micros / a.cpuMicrosPerRequest) * 1000) / 10,
        throughputRatio: pairedRatio(a, b),
      },
    ]
  })
}

/** Issue 43's core paths: ours ≥ 0.95× raw on every database. */
export const targetScenarios = [
  'get',
  'list10',
  'list100',
  'filter',
  'eager',
  'post',
  'patch',
  'delete',
] as const satisfies readonly ScenarioId[]

/** The core paths under a row rule and a field rule: ours ≥ 0.9× raw applying the same rules by hand. */
export const ruledScenarios = [
  'get-ruled',
  'list10-ruled',
  'list100-ruled',
  'filter-ruled',
  'patch-ruled',
  'delete-ruled',
] as const satisfies readonly ScenarioId[]

/** The new query shapes and writes: ours ≥ 0.9× the hand-written raw equivalent. */
export const equivalentScenarios = [
  'or-filter',
  'aggregate',
  'patch-many',
  'nested-post',
] as const satisfies readonly ScenarioId[]

/** The paths Platformatic has (no eager LIST, no OR, no aggregate, no nested write). */
export const platformaticScenarios = [
  'get',
  'list10',
  'list100',
  'filter',
  'post',
  'patch',
  'delete',
] as const satisfies readonly ScenarioId[]

/** Issue 43's minimum ratios: against raw (core, ruled, equivalents) and against Platformatic, per database. */
export interface Minimums { raw: number; ruled: number; equivalent: number; platformatic: number }
export const minimumRatios: Record<DatabaseKind, Minimums> = {
  sqlite: { raw: 0.95, ruled: 0.9, equivalent: 0.9, platformatic: 1.5 },
  postgres: { raw: 0.95, ruled: 0.9, equivalent: 0.9, platformatic: 1.3 },
}

/** The minimum of a ratio `ours/other` on a scenario, or undefined when issue 43 sets none. */
export function minimumFor (database: DatabaseKind, id: string, other: 'raw' | 'platformatic'): number | undefined {
  const minimum = minimumRatios[database]
  const among = (list: readonly string[]) => list.includes(id)
  if (other === 'platformatic') return among(platformaticScenarios) ? minimum.platformatic : undefined
  if (among(targetScenarios)) return minimum.raw
  if (among(ruledScenarios)) return minimum.ruled
  if (among(equivalentScenarios)) return minimum.equivalent
  return undefined
}

/** Peak RSS of ours under the load, at most raw's plus this (MiB). */
export const memoryAllowanceMiB = 5
/** Startup with 50 viewsets, process start to ready(), median of 5: under this (ms). */
export const startupLimitMs = 500
/** Cursor page 1,000 at most this multiple of page 1. */
export const deepPageLimit = 1.2

/**
 * History on (issue 43): a PATCH of a viewset that records history at most this multiple of the same PATCH without
 * (its req/s, per-round ratio `patch ÷ patch-history`). The `history` work adds the `patch-history` scenario (a
 * ScenarioId and a block of run.ts next to `patch`); until then a run has no such row and no such target.
 */
export const historyTarget = { scenario: 'patch-history', against: 'patch', maximum: 1.5 } as const

/**
 * Issue 35: a scoped path (a row rule on its table, and through `rulesFrom` on its relation's) at least this fraction
 * of the same path unscoped, by the median of their per-round req/s ratios: the two run in the same block of the run,
 * seconds apart, so each round's ratio cancels the machine's drift that a ratio of two medians keeps.
 */
export const scopedTargets = [
  { scenario: 'get-scoped', against: 'get', minimum: 0.9 },
  { scenario: 'list-author-scoped', against: 'list-author', minimum: 0.9 },
] as const

/** The per-round throughput ratios a ÷ b (rounds measured seconds apart), in round order. */
function roundRatios (a: Cell | undefined, b: Cell | undefined): number[] {
  if (a?.status !== 'measured' || b?.status !== 'measured') return []
  return a.rounds.flatMap((sample, round) => {
    const other = b.rounds[round]
    if (other === undefined || other.requestsPerSecond <= 0) return []
    return [sample.requestsPerSecond / other.requestsPerSecond]
  })
}

/** The spread of a pair's per-round ratios: lowest and highest, rounded. */
function spreadOf (ratios: number[]): [number, number] | undefined {
  return ratios.length === 0 ? undefined : [round2(Math.min(...ratios)), round2(Math.max(...ratios))]
}

/** The issue 43 targets, checked against one run; each ratio with its CPU counterpart and its per-round spread. */
export function checkTargets (results: Results): Target[] {
  const targets: Target[] = []
  const atLeast = (
    database: Target['database'],
    scenario: string,
    ratio: string,
    minimum: number,
    value: number | null
  ) => targets.push({ database, scenario, ratio, minimum, value, met: value !== null && value >= minimum })
  const atMost = (
    database: Target['database'],
    scenario: string,
    ratio: string,
    maximum: number,
    value: number | null
  ) => targets.push({ database, scenario, ratio, maximum, value, met: value !== null && value <= maximum })
  for (const [database, scenarios] of Object.entries(results.databases) as Array<
    [DatabaseKind, Partial<Record<ScenarioId, ScenarioResult>>]
  >) {
    for (const ours of ourSystems) {
      for (const scenario of [...targetScenarios, ...ruledScenarios, ...equivalentScenarios]) {
        for (const other of ['raw', 'platformatic'] as const) {
          const minimum = minimumFor(database, scenario, other)
          const result = scenarios[scenario]
          if (minimum === undefined || result === undefined || result.systems[ours] === undefined) continue
          atLeast(database, scenario, `${ours}/${other}`, minimum, result.ratios[`${ours}/${other}`] ?? null)
          const target = targets[targets.length - 1]
          if (target === undefined) continue
          target.cpuValue = result.cpuRatios?.[`${other}/${ours}`] ?? null
          const spread = spreadOf(roundRatios(result.systems[ours], result.systems[other]))
          if (spread !== undefined) target.spread = spread
        }
      }
    }
    if (scenarios.eager !== undefined) {
      atLeast(database, 'eager', 'viewsets/n+1', 5, scenarios.eager.ratios['viewsets/n+1'] ?? null)
    }
    const byId: Partial<Record<string, ScenarioResult>> = scenarios
    const withHistory = byId[historyTarget.scenario]?.systems.viewsets
    const without = byId[historyTarget.against]?.systems.viewsets
    const slowdowns = roundRatios(without, withHistory)
    // Checked once the scenario runs: until the history work adds it, the run has no such row.
    if (byId[historyTarget.scenario] !== undefined) {
      atMost(
        database,
        historyTarget.scenario,
        `viewsets ${historyTarget.against} ÷ ${historyTarget.scenario} (req/s; history on at most 1.5× slower)`,
        historyTarget.maximum,
        slowdowns.length === 0 ? null : round2(median(slowdowns))
      )
    }
    for (const { scenario, against, minimum } of scopedTargets) {
      for (const ours of ourSystems) {
        const scoped = byId[scenario]?.systems[ours]
        const unscoped = byId[against]?.systems[ours]
        if (scoped === undefined || unscoped === undefined) continue
        const ratios = roundRatios(scoped, unscoped)
        const measure = `${ours} ${scenario} ÷ ${against} (req/s, median of the rounds; issue 35: within 10%)`
        atLeast(database, scenario, measure, minimum, ratios.length === 0 ? null : round2(median(ratios)))
        const target = targets[targets.length - 1]
        if (target === undefined) continue
        const bothMeasured = scoped.status === 'measured' && unscoped.status === 'measured'
        target.cpuValue = bothMeasured ? round2(unscoped.cpuMicrosPerRequest / scoped.cpuMicrosPerRequest) : null
        const spread = spreadOf(ratios)
        if (spread !== undefined) target.spread = spread
      }
    }
    const memory = results.memory?.[database]
    if (memory?.raw !== undefined) {
      for (const ours of ourSystems) {
        const peak = memory[ours]
        if (peak !== undefined) {
          atMost(database, 'memory', `${ours} peak RSS − raw's (MiB)`, memoryAllowanceMiB, peak - memory.raw)
        }
      }
    }
    const growth = results.growth?.[database]
    if (growth !== undefined) {
      atMost(
        database,
        'growth',
        `cursor page ${growth.page.toLocaleString('en-US')} ÷ page 1`,
        deepPageLimit,
        round2(growth.cursorDeepMs / growth.cursorFirstMs)
      )
    }
  }
  if (results.startup !== undefined) {
    atMost(
      'all',
      'startup',
      `${results.startup.viewsets} viewsets to app.ready() on ${results.startup.database} (ms)`,
      startupLimitMs,
      results.startup.totalMs
    )
  }
  return targets
}

/**
 * The run's noise: how far the per-round ratios of the target pairs spread, (highest − lowest) ÷ median, as a
 * median over the pairs and the widest one. Undefined with one round (nothing to spread).
 */
export interface Noise { medianPercent: number; widestPercent: number; widest: string }
export function noiseOf (targets: readonly Target[]): Noise | undefined {
  const spreads = targets.flatMap((target) =>
    target.spread === undefined || target.value === null || target.value <= 0 || target.spread[0] === target.spread[1]
      ? []
      : [{ percent: ((target.spread[1] - target.spread[0]) / target.value) * 100, name: `${target.database} ${target.scenario} ${target.ratio}` }]
  )
  if (spreads.length === 0) return undefined
  spreads.sort((a, b) => a.percent - b.percent)
  const widest = spreads[spreads.length - 1] as { percent: number; name: string }
  return {
    medianPercent: Math.round(median(spreads.map((spread) => spread.percent))),
    widestPercent: Math.round(widest.percent),
    widest: widest.name,
  }
}

export function scenarioTitle (id: ScenarioId): string {
  return scenarioById.get(id)?.title ?? id
}
