import { systemNames } from './scenarios.js'
import type { ScenarioId } from './scenarios.js'
import type { Cell, DatabaseKind, Results, ScenarioResult } from './results.js'

const databaseTitles: Record<DatabaseKind, string> = { sqlite: 'SQLite (better-sqlite3, WAL file)', postgres: 'PostgreSQL (pg, pool of 10)' }
const ratioKeys = ['viewsets/kysely', 'viewsets/raw', 'viewsets/platformatic'] as const

const integer = (value: number) => Math.round(value).toLocaleString('en-US')
const ms = (value: number) => value < 10 ? value.toFixed(2) : value.toFixed(1)
const ratio = (value: number | undefined) => value === undefined ? '–' : `${value.toFixed(2)}×`

function throughputText (cell: Cell | undefined): string {
  if (cell === undefined) return '–'
  if (cell.status !== 'measured') return cell.status
  return integer(cell.requestsPerSecond)
}

function scenarioRows (results: Results, database: DatabaseKind): Array<[ScenarioId, ScenarioResult]> {
  return Object.entries(results.databases[database] ?? {}) as Array<[ScenarioId, ScenarioResult]>
}

/** Broken measurements (errors or non-2xx), and why some cells did not run. */
function notes (results: Results, database: DatabaseKind): string[] {
  const lines: string[] = []
  for (const [, scenario] of scenarioRows(results, database)) {
    for (const system of systemNames) {
      const cell = scenario.systems[system]
      if (cell === undefined) continue
      if (cell.status === 'measured' && (cell.errors > 0 || cell.non2xx > 0)) lines.push(`BROKEN ${scenario.title} / ${system}: ${cell.errors} errors, ${cell.non2xx} non-2xx`)
      if (cell.status === 'failed') lines.push(`FAILED ${scenario.title} / ${system}: ${cell.reason}`)
    }
  }
  return lines
}

/** The console table of one run. */
export function consoleReport (results: Results): string {
  const out: string[] = []
  for (const database of Object.keys(results.databases) as DatabaseKind[]) {
    out.push('', `${databaseTitles[database]}: requests/s (p50 / p99 ms), peak RSS MiB, server CPU µs per request`)
    const header = ['scenario'.padEnd(36), ...systemNames.map((system) => system.padStart(32)), ...ratioKeys.map((key) => key.replace('viewsets/', 'vs ').padStart(16))]
    out.push(header.join(''))
    for (const [, scenario] of scenarioRows(results, database)) {
      const cells = systemNames.map((system) => {
        const cell = scenario.systems[system]
        const text = cell?.status === 'measured'
          ? `${integer(cell.requestsPerSecond)} (${ms(cell.p50)}/${ms(cell.p99)}) ${Math.round(cell.peakRssMiB)}M ${Math.round(cell.cpuMicrosPerRequest)}µs`
          : throughputText(cell)
        return text.padStart(32)
      })
      const ratios = ratioKeys.map((key) => ratio(scenario.ratios[key]).padStart(16))
      out.push([scenario.title.padEnd(36), ...cells, ...ratios].join(''))
      if (scenario.ratios['viewsets/n+1'] !== undefined) out.push(`${''.padEnd(36)}viewsets vs naive N+1: ${ratio(scenario.ratios['viewsets/n+1'])}`)
    }
    for (const line of notes(results, database)) out.push(line)
  }
  if (results.targets.length > 0) {
    out.push('', 'Targets')
    for (const target of results.targets) {
      out.push(`  ${target.met ? 'met   ' : 'MISSED'} ${target.database} ${target.scenario} ${target.ratio} ${ratio(target.value ?? undefined)} (≥ ${target.minimum})`)
    }
  }
  return out.join('\n')
}

/** How much CPU the hypervisor took during the measurements (a virtual machine's main source of noise). */
function stealNote (results: Results): string {
  const steals: number[] = []
  for (const scenarios of Object.values(results.databases)) {
    for (const scenario of Object.values(scenarios ?? {})) {
      for (const cell of Object.values(scenario.systems)) {
        if (cell.status === 'measured') steals.push(...cell.rounds.map((sample) => sample.stealPercent))
      }
    }
  }
  if (steals.length === 0 || steals.every((steal) => steal === 0)) return ''
  steals.sort((a, b) => a - b)
  const at = (fraction: number) => steals[Math.min(steals.length - 1, Math.floor(fraction * steals.length))] as number
  return `CPU time stolen by the hypervisor during the measurements: median ${at(0.5)}%, 90th percentile ${at(0.9)}%, max ${at(1)}% (a measurement above ${results.settings.stealLimit}% was taken again, within a budget).`
}

/** The Markdown of one run: what the README shows. */
export function markdownReport (results: Results): string {
  const { machine, settings } = results
  const out: string[] = [
    '# Benchmark results',
    '',
    `Run on ${results.date.slice(0, 10)}: ${machine.cpus} × ${machine.model}, ${machine.memoryGiB} GiB RAM, ${machine.platform} (kernel ${machine.kernel}), Node ${machine.node}.`,
    `Each system is its own server process; autocannon with ${settings.connections} connections; ${settings.rounds} interleaved round(s) of ${settings.duration} s after a ${settings.warmup} s warm-up; medians shown${settings.quick ? ' (quick run: indicative only)' : ''}.`,
    '',
    'Systems: **raw** = Fastify + prepared statements (better-sqlite3 / pg named statements) with response schemas, the ceiling;',
    '**kysely** = hand-written Fastify + Kysely routes with the same schemas; **viewsets** = this library;',
    '**platformatic** = `@platformatic/sql-mapper` + `@platformatic/sql-openapi` 2.61.0.',
    'In the eager-loading rows, raw and kysely are hand-written batched versions (3 queries); the N+1 row is a naive hand-written Kysely version.',
    'Ratios are medians of per-round ratios (systems measured seconds apart in the same round). Server CPU per request',
    '(user + system time of the server process) is steadier than requests/s on a shared machine; its ratios are in the second table.',
    stealNote(results),
  ]
  for (const database of Object.keys(results.databases) as DatabaseKind[]) {
    out.push('', `## ${databaseTitles[database]}`, '', '### Requests per second (higher is better)', '')
    out.push(`| scenario | ${systemNames.join(' | ')} | viewsets ÷ kysely | viewsets ÷ raw | viewsets ÷ platformatic |`)
    out.push(`|---|${systemNames.map(() => '---:').join('|')}|---:|---:|---:|`)
    for (const [, scenario] of scenarioRows(results, database)) {
      const cells = systemNames.map((system) => throughputText(scenario.systems[system]))
      const ratios = ratioKeys.map((key) => ratio(scenario.ratios[key]))
      const title = scenario.ratios['viewsets/n+1'] === undefined ? scenario.title : `${scenario.title} (viewsets ÷ N+1: ${ratio(scenario.ratios['viewsets/n+1'])})`
      out.push(`| ${title} | ${cells.join(' | ')} | ${ratios.join(' | ')} |`)
    }
    out.push('', '### Latency p50 / p99 (ms), peak RSS (MiB), server CPU per request (µs)', '')
    out.push(`| scenario | ${systemNames.join(' | ')} | CPU: kysely ÷ viewsets | raw ÷ viewsets | platformatic ÷ viewsets |`)
    out.push(`|---|${systemNames.map(() => '---:').join('|')}|---:|---:|---:|`)
    for (const [, scenario] of scenarioRows(results, database)) {
      const cells = systemNames.map((system) => {
        const cell = scenario.systems[system]
        return cell?.status === 'measured' ? `${ms(cell.p50)} / ${ms(cell.p99)} · ${Math.round(cell.peakRssMiB)} · ${Math.round(cell.cpuMicrosPerRequest)}` : throughputText(cell)
      })
      const cpu = ['kysely', 'raw', 'platformatic'].map((other) => ratio(scenario.cpuRatios?.[`${other}/viewsets`]))
      out.push(`| ${scenario.title} | ${cells.join(' | ')} | ${cpu.join(' | ')} |`)
    }
    const problems = notes(results, database)
    out.push('', problems.length === 0 ? 'Errors and non-2xx answers: 0 in every measurement.' : problems.map((line) => `- ${line}`).join('\n'))
    const reasons = new Set<string>()
    for (const [, scenario] of scenarioRows(results, database)) {
      for (const system of systemNames) {
        const cell = scenario.systems[system]
        if (cell?.status === 'n/a') reasons.add(`${system}, ${scenario.title}: ${cell.reason}`)
      }
    }
    if (reasons.size > 0) out.push('', 'n/a:', ...[...reasons].map((reason) => `- ${reason}`))
  }
  if (results.targets.length > 0) {
    out.push('', '## Targets', '', '| database | scenario | ratio | measured | target | |', '|---|---|---|---:|---:|---|')
    for (const target of results.targets) {
      out.push(`| ${target.database} | ${target.scenario} | ${target.ratio} | ${ratio(target.value ?? undefined)} | ≥ ${target.minimum} | ${target.met ? 'met' : '**missed**'} |`)
    }
  }
  return out.join('\n') + '\n'
}
