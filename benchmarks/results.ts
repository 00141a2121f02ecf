import { cpus, release, totalmem } from 'node:os'
import { readFileSync } from 'node:fs'
import type { Sample } from './measure.js'
import { scenarioById } from './scenarios.js'
import type { ScenarioId, SystemName } from './scenarios.js'

export type DatabaseKind = 'sqlite' | 'postgres'

/** One system on one scenario: the medians over the rounds, or why it did not run. */
export type Cell =
  | {
    status: 'measured'
    requestsPerSecond: number
    p50: number
    p99: number
    /** Summed over all rounds: any non-zero count means the scenario is broken. */
    errors: number
    non2xx: number
    peakRssMiB: number
    /** Server CPU microseconds per request (median). */
    cpuMicrosPerRequest: number
    rounds: Sample[]
  }
  | { status: 'n/a' | 'failed', reason: string }

export interface ScenarioResult {
  title: string
  systems: Partial<Record<SystemName, Cell>>
  /** Throughput of viewsets divided by another system's; keys such as `viewsets/kysely`. */
  ratios: Record<string, number>
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

/** The ratios of a database's scenarios, computed in place once every scenario is measured. */
export function addRatios (scenarios: Partial<Record<ScenarioId, ScenarioResult>>): void {
  for (const [id, result] of Object.entries(scenarios) as Array<[ScenarioId, ScenarioResult]>) {
    const ours = throughput(result.systems.viewsets)
    if (ours === undefined) continue
    for (const other of ['kysely', 'raw', 'platformatic'] as const) {
      const theirs = throughput(result.systems[other])
      if (theirs !== undefined) result.ratios[`viewsets/${other}`] = round2(ours / theirs)
    }
    if (id === 'eager') {
      const naive = throughput(scenarios['eager-n1']?.systems.kysely)
      if (naive !== undefined) result.ratios['viewsets/n+1'] = round2(ours / naive)
    }
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
