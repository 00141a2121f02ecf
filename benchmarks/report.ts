import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { baselineSystem } from './scenarios.js'
import type { ScenarioId, SystemName } from './scenarios.js'
import { hasBaseline, memoryAllowanceMiB, minimumFor, minimumRatios, noiseOf, shownSystems, startupLimitMs } from './results.js'
import type { Cell, DatabaseKind, EtagCost, Results, ScenarioResult, Target } from './results.js'

const databaseTitles: Record<DatabaseKind, string> = {
  sqlite: 'SQLite (better-sqlite3, WAL file)',
  postgres: 'PostgreSQL (pg, pool of 10)',
}
const systemTitles: Record<SystemName, string> = {
  raw: 'raw',
  kysely: 'kysely',
  viewsets: 'viewsets',
  platformatic: 'platformatic',
  'viewsets-own-kysely': 'viewsets, own Kysely',
  'viewsets-baseline': 'viewsets, baseline',
}
interface RatioColumn {
  key: string
  title: string
  target?: 'raw' | 'platformatic'
  /** Shown only in a run with `--baseline`. */
  baseline?: true
}

/** The ratio columns: ours against the ceiling, the peer and the hand-written code, and this build against the
 * baseline's. */
const allRatioColumns: RatioColumn[] = [
  { key: 'viewsets/raw', title: 'viewsets ÷ raw', target: 'raw' },
  { key: 'viewsets/platformatic', title: 'viewsets ÷ platformatic', target: 'platformatic' },
  { key: 'viewsets/kysely', title: 'viewsets ÷ kysely' },
  { key: 'viewsets-own-kysely/raw', title: 'own Kysely ÷ raw', target: 'raw' },
  { key: 'viewsets-own-kysely/platformatic', title: 'own Kysely ÷ platformatic', target: 'platformatic' },
  { key: `viewsets/${baselineSystem}`, title: 'viewsets ÷ baseline', baseline: true },
]

/** Server CPU per request, theirs ÷ ours (above 1: ours spends less), as the second table shows it. */
const allCpuColumns: RatioColumn[] = [
  { key: 'raw/viewsets', title: 'CPU: raw ÷ viewsets' },
  { key: 'platformatic/viewsets', title: 'platformatic ÷ viewsets' },
  { key: 'raw/viewsets-own-kysely', title: 'raw ÷ own Kysely' },
  { key: `${baselineSystem}/viewsets`, title: 'baseline ÷ viewsets', baseline: true },
]

/** The columns of a run: the baseline's only when it ran. */
function columnsOf (columns: RatioColumn[], results: Results): RatioColumn[] {
  const baseline = hasBaseline(results)
  return columns.filter((column) => baseline || column.baseline !== true)
}

/** The hand-written analysis that results.md carries after the figures (kept across runs). */
const analysisFile = fileURLToPath(new URL('./analysis.md', import.meta.url))

const integer = (value: number) => Math.round(value).toLocaleString('en-US')
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1))
const ratio = (value: number | undefined) => (value === undefined ? '–' : `${value.toFixed(2)}×`)

function throughputText (cell: Cell | undefined): string {
  if (cell === undefined) return '–'
  if (cell.status !== 'measured') return cell.status
  // † : the system did something different on this scenario; the note under the table says what.
  return `${integer(cell.requestsPerSecond)}${cell.note === undefined ? '' : ' †'}`
}

function scenarioRows (results: Results, database: DatabaseKind): Array<[ScenarioId, ScenarioResult]> {
  return Object.entries(results.databases[database] ?? {}) as Array<[ScenarioId, ScenarioResult]>
}

/** A ratio, marked ✗ when a target column's value is under issue 43's minimum for that scenario. */
function ratioCell (database: DatabaseKind, id: ScenarioId, scenario: ScenarioResult, column: RatioColumn): string {
  const value = scenario.ratios[column.key]
  const minimum = column.target === undefined ? undefined : minimumFor(database, id, column.target)
  return `${ratio(value)}${minimum !== undefined && value !== undefined && value < minimum ? ' ✗' : ''}`
}

/** Broken measurements (errors or non-2xx), and why some cells did not run. */
function notes (results: Results, database: DatabaseKind): string[] {
  const lines: string[] = []
  for (const [, scenario] of scenarioRows(results, database)) {
    for (const system of shownSystems(results)) {
      const cell = scenario.systems[system]
      if (cell === undefined) continue
      if (cell.status === 'measured' && (cell.errors > 0 || cell.non2xx > 0)) {
        lines.push(`BROKEN ${scenario.title} / ${system}: ${cell.errors} errors, ${cell.non2xx} non-2xx`)
      }
      if (cell.status === 'failed') lines.push(`FAILED ${scenario.title} / ${system}: ${cell.reason}`)
    }
  }
  return lines
}

/** The notes of measured cells (†): what a system did differently, such as a baseline's GET without an ETag. */
function cellNotes (results: Results, database: DatabaseKind): string[] {
  return scenarioRows(results, database).flatMap(([, scenario]) =>
    shownSystems(results).flatMap((system) => {
      const cell = scenario.systems[system]
      return cell?.status === 'measured' && cell.note !== undefined
        ? [`† ${systemTitles[system]}, ${scenario.title}: ${cell.note}`]
        : []
    })
  )
}

function targetText (target: Target): string {
  const bound = target.minimum !== undefined ? `≥ ${target.minimum}` : `≤ ${target.maximum ?? ''}`
  const value =
    target.value === null
      ? '–'
      : target.ratio.includes('/') && !target.ratio.includes('(')
        ? ratio(target.value)
        : String(target.value)
  return `${target.database} ${target.scenario} ${target.ratio}: ${value} (${bound})`
}

/** The ETag, memory, startup and growth figures as lines of text. */
function extraLines (results: Results): string[] {
  const out: string[] = []
  for (const [database, costs] of Object.entries(results.etagCost ?? {}) as Array<[DatabaseKind, EtagCost[]]>) {
    for (const cost of costs) {
      out.push(
        `ETag on GET, ${database}, ${cost.system}: ${cost.taggedMicros} µs CPU/request (get) vs ${cost.untaggedMicros} (${cost.untagged}) → ${cost.micros} µs, ${cost.percent}% of the request; req/s ratio ${ratio(cost.throughputRatio ?? undefined)}`
      )
    }
  }
  for (const [database, peaks] of Object.entries(results.memory ?? {})) {
    out.push(
      `Peak RSS under load, ${database}: ${Object.entries(peaks)
        .map(([system, peak]) => `${system} ${peak} MiB`)
        .join(', ')}`
    )
  }
  const startup = results.startup
  if (startup !== undefined) {
    out.push(
      `Startup, ${startup.viewsets} viewsets on ${startup.database}, plain node over dist/: ${startup.totalMs} ms from process start to app.ready() (imports ${startup.importMs} ms, createDatabase + register + ready ${startup.readyMs} ms; median of ${startup.runs})`
    )
    for (const docs of startup.docs ?? []) {
      out.push(`First GET /docs/json with viewsetDocs and ${docs.viewsets} viewsets: ${docs.firstDocsMs} ms (ready ${docs.readyMs} ms; median of ${docs.runs})`)
    }
  }
  for (const [database, growth] of Object.entries(results.growth ?? {})) {
    out.push(
      `Growth, ${database}, ${growth.rows.toLocaleString('en-US')} rows, limit ${growth.limit}: LIST ${growth.listMs} ms, with count=true ${growth.countMs} ms (${ratio(growth.countMs / growth.listMs)}); cursor page 1 ${growth.cursorFirstMs} ms, page ${growth.page.toLocaleString('en-US')} ${growth.cursorDeepMs} ms (${ratio(growth.cursorDeepMs / growth.cursorFirstMs)}); offset page 1 ${growth.offsetFirstMs} ms, page ${growth.page.toLocaleString('en-US')} ${growth.offsetDeepMs} ms (${ratio(growth.offsetDeepMs / growth.offsetFirstMs)})`
    )
  }
  return out
}

/** The console table of one run. */
export function consoleReport (results: Results): string {
  const out: string[] = [`Machine: ${machineLine(results)}`]
  for (const database of Object.keys(results.databases) as DatabaseKind[]) {
    out.push('', `${databaseTitles[database]}: requests/s (p50 / p99 ms), peak RSS MiB, server CPU µs per request`)
    const systems = shownSystems(results)
    const ratioColumns = columnsOf(allRatioColumns, results)
    const header = [
      'scenario'.padEnd(40),
      ...systems.map((system) => systemTitles[system].padStart(32)),
      ...ratioColumns.map((column) =>
        column.title.replace('viewsets ', 'vs ').replace('platformatic', 'plat.').padStart(20)
      ),
    ]
    out.push(header.join(''))
    for (const [id, scenario] of scenarioRows(results, database)) {
      const cells = systems.map((system) => {
        const cell = scenario.systems[system]
        const text =
          cell?.status === 'measured'
            ? `${integer(cell.requestsPerSecond)} (${ms(cell.p50)}/${ms(cell.p99)}) ${Math.round(cell.peakRssMiB)}M ${Math.round(cell.cpuMicrosPerRequest)}µs${cell.note === undefined ? '' : ' †'}`
            : throughputText(cell)
        return text.padStart(32)
      })
      const ratios = ratioColumns.map((column) => ratioCell(database, id, scenario, column).padStart(20))
      out.push([scenario.title.slice(0, 39).padEnd(40), ...cells, ...ratios].join(''))
      if (scenario.ratios['viewsets/n+1'] !== undefined) {
        out.push(`${''.padEnd(40)}viewsets vs naive N+1: ${ratio(scenario.ratios['viewsets/n+1'])}`)
      }
    }
    for (const line of [...notes(results, database), ...cellNotes(results, database)]) out.push(line)
  }
  const extra = extraLines(results)
  if (extra.length > 0) out.push('', ...extra)
  if (results.targets.length > 0) {
    const missed = results.targets.filter((target) => !target.met).length
    out.push('', `Targets (issue 43): ${results.targets.length - missed} met, ${missed} missed`)
    for (const target of results.targets) {
      const spread = target.spread === undefined ? '' : `; rounds ${ratio(target.spread[0])}–${ratio(target.spread[1])}`
      out.push(
        `  ${target.met ? 'met   ' : 'MISSED'} ${targetText(target)}${target.cpuValue === undefined ? '' : `; by CPU/request ${ratio(target.cpuValue ?? undefined)}`}${spread}`
      )
    }
    out.push(`  ${noiseText(results)}`)
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

/** The requests/s table of one database (also what the README shows). */
export function throughputTable (results: Results, database: DatabaseKind): string[] {
  const systems = shownSystems(results)
  const ratioColumns = columnsOf(allRatioColumns, results)
  const out = [
    `| scenario | ${systems.map((system) => systemTitles[system]).join(' | ')} | ${ratioColumns.map((column) => column.title).join(' | ')} |`,
    `|---|${systems.map(() => '---:').join('|')}|${ratioColumns.map(() => '---:').join('|')}|`,
  ]
  for (const [id, scenario] of scenarioRows(results, database)) {
    const cells = systems.map((system) => throughputText(scenario.systems[system]))
    const ratios = ratioColumns.map((column) => ratioCell(database, id, scenario, column))
    const title =
      scenario.ratios['viewsets/n+1'] === undefined
        ? scenario.title
        : `${scenario.title} (viewsets ÷ N+1: ${ratio(scenario.ratios['viewsets/n+1'])})`
    out.push(`| ${title} | ${cells.join(' | ')} | ${ratios.join(' | ')} |`)
  }
  return out
}

/** The ETag, memory, startup and growth tables, under headings of the given level. */
export function extraMarkdown (results: Results, heading = '##', chartDir = ''): string[] {
  const out: string[] = []
  const costs = Object.entries(results.etagCost ?? {}).flatMap(([database, list]) =>
    (list ?? []).map((cost) => ({ database, ...cost }))
  )
  if (costs.length > 0) {
    out.push(
      '',
      `${heading} The ETag on GET (issue 17)`,
      '',
      "GET sends a strong ETag: without `versionField`, a SHA-1 of the body it sends; with it, the version column's value. Server CPU",
      "per request of the GET that hashes, against the same system's GET that hashes nothing, measured side by side (same rounds):",
      '',
      '| database | system | GET (hash) µs | compared with | its µs | ETag costs µs | share of the GET | req/s ratio |',
      '|---|---|---:|---|---:|---:|---:|---:|'
    )
    const compared = { 'get-untagged': 'GET without ETag', 'get-versioned': 'GET, versionField tag' } as Record<
      string,
      string
    >
    for (const cost of costs) {
      out.push(
        `| ${cost.database} | ${cost.system} | ${cost.taggedMicros} | ${compared[cost.untagged] ?? cost.untagged} | ${cost.untaggedMicros} | ${cost.micros} | ${cost.percent}% | ${ratio(cost.throughputRatio ?? undefined)} |`
      )
    }
    out.push(
      '',
      "A negative difference is noise: on this shared machine the same GET measured in two slots of one round differs by several µs, and on PostgreSQL by tens. SHA-1 over a body of about 80 bytes costs a few µs at most. The versionField row is one integer longer, and raw's versionField GET reads the same table as viewsets'."
    )
  }
  if (results.memory !== undefined) {
    const systems = shownSystems(results)
    out.push(
      '',
      `${heading} Peak memory under the load`,
      '',
      `Peak RSS (VmHWM) of each server process, the highest over all its measurements. Target: ours ≤ raw + ${memoryAllowanceMiB} MiB.`,
      '',
      `| database | ${systems.map((system) => systemTitles[system]).join(' | ')} |`,
      `|---|${systems.map(() => '---:').join('|')}|`
    )
    for (const [database, peaks] of Object.entries(results.memory)) {
      out.push(
        `| ${database} | ${systems.map((system) => (peaks?.[system] === undefined ? '–' : `${peaks[system]} MiB`)).join(' | ')} |`
      )
    }
  }
  const startup = results.startup
  if (startup !== undefined) {
    out.push(
      '',
      `${heading} Startup`,
      '',
      `An app with ${startup.viewsets} viewsets (${startup.viewsets} tables, each with filters and ordering) on a ${startup.database === 'sqlite' ? 'SQLite file' : 'PostgreSQL database'}, in a fresh plain-node process over dist/, median of ${startup.runs} processes:`,
      `**${startup.totalMs} ms** from the process's start to \`app.ready()\` (loading fastify and fastify-viewsets ${startup.importMs} ms; createDatabase, ${startup.viewsets} registrations and \`ready()\` ${startup.readyMs} ms). Target: under ${startupLimitMs} ms.`
    )
    for (const docs of startup.docs ?? []) {
      out.push('', `With viewsetDocs and ${docs.viewsets} viewsets: the first \`GET /docs/json\` (the document is built then, once) **${docs.firstDocsMs} ms**; \`ready()\` ${docs.readyMs} ms (median of ${docs.runs} processes). Target for 200: under 1 s.`)
    }
  }
  const growth = Object.entries(results.growth ?? {})
  if (growth.length > 0) {
    const first = growth[0]?.[1]
    out.push(
      '',
      `${heading} How cost grows`,
      '',
      `A table of ${first?.rows.toLocaleString('en-US')} rows ordered by a NOT NULL indexed column (\`order_by=score\`, ties by key), ${first?.limit} rows a page. In-process latencies (\`app.inject\`, plain node over dist/), medians of ${first?.requests} requests after a warm-up: the statements' cost, not the network's.`,
      '',
      `![how cost grows](${chartDir}growth.svg)`,
      '',
      `| database | LIST page 1 | with \`count=true\` | ÷ without | cursor page 1 | cursor page ${first?.page.toLocaleString('en-US')} | ÷ page 1 (target ≤ 1.2) | offset page 1 | offset page ${first?.page.toLocaleString('en-US')} | ÷ page 1 |`,
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
    )
    for (const [database, g] of growth) {
      out.push(
        `| ${database} | ${g.listMs} ms | ${g.countMs} ms | ${ratio(g.countMs / g.listMs)} | ${g.cursorFirstMs} ms | ${g.cursorDeepMs} ms | ${ratio(g.cursorDeepMs / g.cursorFirstMs)} | ${g.offsetFirstMs} ms | ${g.offsetDeepMs} ms | ${ratio(g.offsetDeepMs / g.offsetFirstMs)} |`
      )
    }
  }
  return out
}

/** The run's noise in one sentence: the spread of the per-round ratios of the target pairs. */
export function noiseText (results: Results): string {
  const noise = noiseOf(results.targets)
  if (noise === undefined) {
    return `Noise: ${results.settings.rounds} round(s), so no spread of per-round ratios to state; a full run (7 or more rounds) states it.`
  }
  return `Noise: the per-round ratios of a target pair spread by ${noise.medianPercent}% of their median (highest − lowest, median over the pairs); widest ${noise.widestPercent}% (${noise.widest}).`
}

/** The table of issue 43's targets, met or missed. */
export function targetsMarkdown (results: Results, heading: string): string[] {
  if (results.targets.length === 0) return []
  const missed = results.targets.filter((target) => !target.met).length
  const out = [
    '',
    `${heading} Targets (issue 43)`,
    '',
    `${results.targets.length - missed} met, ${missed} missed (by requests/s, as the issue sets them; the CPU column compares server CPU time per request, theirs ÷ ours, for the same pair; rounds: the lowest and highest per-round ratio).`,
    noiseText(results),
    '',
    '| database | scenario | measure | measured | by CPU/request | rounds | target | |',
    '|---|---|---|---:|---:|---:|---:|---|',
  ]
  for (const target of results.targets) {
    const isRatio = target.minimum !== undefined
    const value = target.value === null ? '–' : isRatio ? ratio(target.value) : String(target.value)
    const cpu = target.cpuValue === undefined ? '' : ratio(target.cpuValue ?? undefined)
    const spread = target.spread === undefined ? '' : `${ratio(target.spread[0])}–${ratio(target.spread[1])}`
    out.push(
      `| ${target.database} | ${target.scenario} | ${target.ratio} | ${value} | ${cpu} | ${spread} | ${isRatio ? `≥ ${target.minimum}` : `≤ ${target.maximum ?? ''}`} | ${target.met ? 'met' : '**missed**'} |`
    )
  }
  return out
}

/** The one-line description of the machine and the run. */
export function machineLine (results: Results): string {
  const { machine } = results
  const load = machine.loadAverage === undefined ? '' : `, load average ${machine.loadAverage.join(' / ')} (1/5/15 min) at the start`
  return `${results.date.slice(0, 10)}: ${machine.cpus} × ${machine.model}, ${machine.memoryGiB} GiB RAM, ${machine.platform} (kernel ${machine.kernel}), Node ${machine.node}${load}`
}

/** With `--baseline`: which build the baseline column ran, and how to read its ratios. */
function baselineNote (results: Results): string[] {
  const baseline = results.settings.baseline
  if (baseline === undefined || !hasBaseline(results)) return []
  return [
    `**viewsets, baseline** = the same viewsets as **viewsets**, over the library built at \`${baseline.ref}\` (${baseline.commit.slice(0, 12)}, \`--baseline\`),`,
    'in the same interleaved rounds: "viewsets ÷ baseline" (requests/s) and "baseline ÷ viewsets" (CPU per request) above 1 mean this build is faster.',
  ]
}

/** The Markdown of one run (benchmarks/results.md). */
export function markdownReport (results: Results): string {
  const { settings } = results
  const out: string[] = [
    '# Benchmark results',
    '',
    `Run on ${machineLine(results)}.`,
    `Each system is its own server process, ${settings.runtime === 'source' ? 'run through tsx over the TypeScript sources (`--runtime source`)' : 'run with plain `node` over the built package (dist/, no TypeScript loader)'}; autocannon with ${settings.connections} connections; ${settings.rounds} interleaved round(s) of ${settings.duration} s after a ${settings.warmup} s warm-up; medians shown${settings.quick ? ' (quick run: indicative only)' : ''}.`,
    'Reproduce: `npm run bench` (builds dist/ and the benchmarks first; set `BENCH_POSTGRES_URL` for the PostgreSQL half; `npm run bench -- --help` lists the options).',
    '',
    'Systems: **raw** = Fastify + prepared statements (better-sqlite3 / pg named statements) with response schemas, the ceiling; its GET,',
    'POST and PATCH compute the same strong ETag as ours (SHA-1 of the body each sends), and its eager LIST batches children per parent;',
    '**kysely** = hand-written Fastify + Kysely routes with the same schemas; **viewsets** = this library over `createDatabase`;',
    '**viewsets, own Kysely** = the same viewsets over a Kysely the user built (`new Kysely({ dialect: new SqliteDialect(...) })`, `PostgresDialect`);',
    '**platformatic** = `@platformatic/sql-mapper` + `@platformatic/sql-openapi` 2.61.0 (no ETag, no eager LIST).',
    ...baselineNote(results),
    'In the eager-loading rows, raw and kysely are hand-written batched versions (3 queries); the N+1 row is a naive hand-written Kysely version.',
    'DELETE: before each measurement the runner inserts a batch of rows (more than the fastest system can delete in that time, outside the timed window);',
    'each request deletes the next one, so every request deletes a row that exists; the leftovers are removed afterwards.',
    "On SQLite each server has its own copy of the seeded file: one server's writes (its WAL, the checkpoints its commits run) never land in another's measurements.",
    "Ratios are medians of per-round ratios (systems measured seconds apart in the same round); ✗ marks a ratio under issue 43's target",
    `(≥ ${minimumRatios.sqlite.raw}× raw on the core paths, ≥ ${minimumRatios.sqlite.ruled}× raw with the same rules by hand on the rule rows, ≥ ${minimumRatios.sqlite.equivalent}× the hand-written equivalent on OR, aggregate, bulk PATCH and nested POST; ≥ ${minimumRatios.sqlite.platformatic}× Platformatic on SQLite, ≥ ${minimumRatios.postgres.platformatic}× on PostgreSQL). Server CPU per request`,
    '(user + system time of the server process) is steadier than requests/s on a shared machine; its ratios are in the second table.',
    stealNote(results),
    '',
    '![requests per second, viewsets against the peers](chart.svg)',
  ]
  for (const database of Object.keys(results.databases) as DatabaseKind[]) {
    out.push('', `## ${databaseTitles[database]}`, '', '### Requests per second (higher is better)', '')
    out.push(...throughputTable(results, database))
    out.push('', '### Latency p50 / p99 (ms), peak RSS (MiB), server CPU per request (µs)', '')
    const systems = shownSystems(results)
    const cpuColumns = columnsOf(allCpuColumns, results)
    out.push(
      `| scenario | ${systems.map((system) => systemTitles[system]).join(' | ')} | ${cpuColumns.map((column) => column.title).join(' | ')} |`
    )
    out.push(`|---|${systems.map(() => '---:').join('|')}|${cpuColumns.map(() => '---:').join('|')}|`)
    for (const [, scenario] of scenarioRows(results, database)) {
      const cells = systems.map((system) => {
        const cell = scenario.systems[system]
        return cell?.status === 'measured'
          ? `${ms(cell.p50)} / ${ms(cell.p99)} · ${Math.round(cell.peakRssMiB)} · ${Math.round(cell.cpuMicrosPerRequest)}`
          : throughputText(cell)
      })
      const cpu = cpuColumns.map((column) => ratio(scenario.cpuRatios?.[column.key]))
      out.push(`| ${scenario.title} | ${cells.join(' | ')} | ${cpu.join(' | ')} |`)
    }
    const problems = notes(results, database)
    out.push(
      '',
      problems.length === 0
        ? 'Errors and non-2xx answers: 0 in every measurement.'
        : problems.map((line) => `- ${line}`).join('\n')
    )
    const marked = cellNotes(results, database)
    if (marked.length > 0) out.push('', ...marked.map((line) => `- ${line}`))
    const reasons = new Set<string>()
    for (const [, scenario] of scenarioRows(results, database)) {
      for (const system of systems) {
        const cell = scenario.systems[system]
        if (cell?.status === 'n/a') reasons.add(`${systemTitles[system]}, ${scenario.title}: ${cell.reason}`)
      }
    }
    if (reasons.size > 0) {
      out.push(
        '',
        '<details><summary>n/a cells</summary>',
        '',
        ...[...reasons].map((reason) => `- ${reason}`),
        '',
        '</details>'
      )
    }
  }
  out.push(...extraMarkdown(results))
  out.push(...targetsMarkdown(results, '##'))
  if (existsSync(analysisFile)) out.push('', readFileSync(analysisFile, 'utf8').trimEnd())
  return out.join('\n') + '\n'
}
