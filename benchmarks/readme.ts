import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { extraMarkdown, machineLine, throughputTable } from './report.js'
import type { DatabaseKind, Results } from './results.js'

// A full run (`npm run bench` writing to benchmarks/) refreshes the figures of the README's benchmark
// section, between two markers, so that the README never shows another run than results.md.

const readmeFile = fileURLToPath(new URL('../README.md', import.meta.url))
const start = '<!-- bench:results:start (written by npm run bench) -->'
const end = '<!-- bench:results:end -->'
const titles: Record<DatabaseKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }

/** The README's part of one run's results. */
export function readmeSection (results: Results): string {
  const missed = results.targets.filter((target) => !target.met).length
  const out = [
    `Run on ${machineLine(results)}; ${results.settings.rounds} interleaved rounds of ${results.settings.duration} s per system and scenario.`,
    'Absolute numbers are noisy on a shared VM; the ratios are what to read. All figures, latencies, CPU per request and',
    'the analysis of each missed target are in [benchmarks/results.md](benchmarks/results.md).',
    '',
    '![requests per second, viewsets against the peers](benchmarks/chart.svg)',
  ]
  for (const database of Object.keys(results.databases) as DatabaseKind[]) {
    out.push('', `**${titles[database]}** (requests/s; ✗ marks a ratio under its target)`, '', ...throughputTable(results, database))
  }
  out.push(...extraMarkdown(results, '####', 'benchmarks/'))
  out.push('', '#### Targets (issue 43)', '', `${results.targets.length - missed} met, ${missed} missed: each target, its CPU-per-request counterpart and what we found about each miss are in [benchmarks/results.md](benchmarks/results.md#targets-issue-43).`)
  return out.join('\n').trimEnd()
}

/** Replaces the README's figures with this run's. */
export function updateReadme (results: Results): void {
  const readme = readFileSync(readmeFile, 'utf8')
  const from = readme.indexOf(start)
  const to = readme.indexOf(end)
  if (from === -1 || to < from) throw new Error(`README.md has no ${start} … ${end} markers`)
  writeFileSync(readmeFile, `${readme.slice(0, from + start.length)}\n${readmeSection(results)}\n${readme.slice(to)}`)
}
