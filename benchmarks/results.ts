import { cpus, release, totalmem } from 'node:os'
import { readFileSync } from 'node:fs'
import type { Sample } from './measure.js'
import { scenarioById } from './scenarios.js'
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
  })
  | { status: 'n/a' | 'failed', reason: string }

export interface ScenarioResult {
  title: string
  systems: Partial<Record<SystemName, Cell>>
  /** Throughput of viewsets divided by another system's (median of the per-round ratios); keys such as `viewsets/kysely`. */
  ratios: Record<string, number>
  /** Server CPU time per request of another system divided by viewsets'; keys such as `kysely/viewsets`. */
  cpuRatios?: Record<string, number>
}

export interface Target {
  database: DatabaseKind
  scenario: ScenarioId
  ratio: string
  minimum: number
  value: number | null
  met: boolean
}

export interface Machine {
  cpus: number
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
}

export interface Results {
  date: string
  machine: Machine
  settings: Settings
  databases: Partial<Record<DatabaseKind, Partial<Record<ScenarioId, ScenarioResult>>>>
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
    model,
    memoryGiB: Math.round(totalmem() / 1024 ** 3 * 10) / 10,
    platform: `${process.platform}-${process.arch}`,
    kernel: release(),
    node: process.version,
  }
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] as number : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
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
    const ours = result.systems.viewsets
    if (ours?.status !== 'measured') continue
    const others: Array<[string, Cell | undefined]> = [['kysely', result.systems.kysely], ['raw', result.systems.raw], ['platformatic', result.systems.platformatic]]
    if (id === 'eager') others.push(['n+1', scenarios['eager-n1']?.systems.kysely])
    const cpuRatios: Record<string, number> = {}
    for (const [name, theirs] of others) {
      if (theirs?.status !== 'measured') continue
      const paired = ours.rounds.flatMap((sample, round) => {
        const other = theirs.rounds[round]
        return other !== undefined && other.requestsPerSecond > 0 ? [sample.requestsPerSecond / other.requestsPerSecond] : []
      })
      if (paired.length > 0) result.ratios[`viewsets/${name}`] = round2(median(paired))
      if (ours.cpuMicrosPerRequest > 0) cpuRatios[`${name}/viewsets`] = round2(theirs.cpuMicrosPerRequest / ours.cpuMicrosPerRequest)
    }
    result.cpuRatios = cpuRatios
  }
}

/** The targets of the issue, checked against one run. */
export function checkTargets (results: Results): Target[] {
  const targets: Target[] = []
  for (const [database, scenarios] of Object.entries(results.databases) as Array<[DatabaseKind, Partial<Record<ScenarioId, ScenarioResult>>]>) {
    const minimums: Array<[ScenarioId, string, number]> = [
      ['get', 'viewsets/kysely', 1.0], ['get', 'viewsets/raw', database === 'sqlite' ? 0.85 : 0.9], ['get', 'viewsets/platformatic', database === 'sqlite' ? 1.3 : 1.1],
      ['list10', 'viewsets/kysely', 1.0], ['list10', 'viewsets/raw', database === 'sqlite' ? 0.85 : 0.9], ['list10', 'viewsets/platformatic', database === 'sqlite' ? 1.3 : 1.1],
      ['eager', 'viewsets/kysely', 0.9], ['eager', 'viewsets/n+1', 5],
    ]
    for (const [scenario, ratio, minimum] of minimums) {
      if (scenarios[scenario] === undefined) continue
      const value = scenarios[scenario].ratios[ratio] ?? null
      targets.push({ database, scenario, ratio, minimum, value, met: value !== null && value >= minimum })
    }
  }
  return targets
}

export function scenarioTitle (id: ScenarioId): string {
  return scenarioById.get(id)?.title ?? id
}
