import { baselineSystem } from './scenarios.js'
import type { ScenarioId, SystemName } from './scenarios.js'
import type { DatabaseKind, Results, ScenarioResult } from './results.js'
import { shownSystems, throughput } from './results.js'

// A hand-made SVG bar chart: one panel per database, one group of bars per scenario. Each group is
// scaled to its own fastest system, since GET and eager loading differ by an order of magnitude.

const colors: Record<SystemName, string> = {
  raw: '#9ca3af',
  kysely: '#60a5fa',
  viewsets: '#16a34a',
  platformatic: '#f59e0b',
  'viewsets-own-kysely': '#86efac',
  'viewsets-baseline': '#14532d',
}
const databaseTitles: Record<DatabaseKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }

export const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

export function chartSvg (results: Results): string {
  const width = 860
  const labelWidth = 250
  const barWidth = width - labelWidth - 90
  const barHeight = 13
  const gap = 2
  const groupGap = 12
  const parts: string[] = []
  let y = 28
  parts.push(
    `<text x="16" y="${y}" font-size="16" font-weight="bold">fastify-viewsets benchmark: requests/s (bars scaled per scenario)</text>`
  )
  y += 18
  const { machine, settings } = results
  parts.push(
    `<text x="16" y="${y}" font-size="11" fill="#555">${escape(`${results.date.slice(0, 10)} · ${machine.cpus} × ${machine.model} · ${machine.memoryGiB} GiB · Node ${machine.node} · ${settings.rounds} round(s) × ${settings.duration} s, ${settings.connections} connections`)}</text>`
  )
  y += 20
  let legendX = 16
  const systems = shownSystems(results)
  for (const system of systems) {
    parts.push(
      `<rect x="${legendX}" y="${y - 10}" width="12" height="12" fill="${colors[system]}"/><text x="${legendX + 16}" y="${y}" font-size="12">${system}</text>`
    )
    legendX += 30 + system.length * 7
  }
  y += 14
  for (const database of Object.keys(results.databases) as DatabaseKind[]) {
    y += 16
    parts.push(`<text x="16" y="${y}" font-size="14" font-weight="bold">${databaseTitles[database]}</text>`)
    y += 10
    for (const [, scenario] of Object.entries(results.databases[database] ?? {}) as Array<
      [ScenarioId, ScenarioResult]
    >) {
      const bars = systems.flatMap((system) => {
        const value = throughput(scenario.systems[system])
        return value === undefined ? [] : [{ system, value }]
      })
      if (bars.length === 0) continue
      const best = Math.max(...bars.map((bar) => bar.value))
      const groupHeight = Math.max(bars.length * (barHeight + gap), 52)
      // Under the title, viewsets' ratios to the others (its throughput divided by theirs).
      const ratios = (['raw', 'platformatic', 'kysely', 'n+1'] as const).flatMap((other) => {
        const ratio = scenario.ratios[`viewsets/${other}`]
        return ratio === undefined ? [] : [`${ratio.toFixed(2)}× ${other}`]
      })
      const own = scenario.ratios['viewsets-own-kysely/raw']
      // Only with --baseline: this build against the baseline's.
      const baseline = scenario.ratios[`viewsets/${baselineSystem}`]
      const lines = [
        ratios.slice(0, 2).join(' · '),
        ratios.slice(2).join(' · '),
        own === undefined ? '' : `own Kysely ${own.toFixed(2)}× raw`,
        baseline === undefined ? '' : `${baseline.toFixed(2)}× baseline`,
      ].filter((line) => line !== '')
      const top = y + Math.max(0, (groupHeight - 14 - 12 * lines.length) / 2)
      parts.push(`<text x="16" y="${top + 11}" font-size="12">${escape(scenario.title)}</text>`)
      lines.forEach((line, index) => {
        parts.push(
          `<text x="16" y="${top + 24 + 12 * index}" font-size="10" fill="#15803d">${escape(line.startsWith('own ') ? line : `viewsets ${line}`)}</text>`
        )
      })
      const groupTop = y
      // Bars centred in the group's height.
      y += (groupHeight - bars.length * (barHeight + gap)) / 2
      for (const bar of bars) {
        const length = Math.max(1, Math.round((bar.value / best) * barWidth))
        parts.push(
          `<rect x="${labelWidth}" y="${y}" width="${length}" height="${barHeight}" fill="${colors[bar.system]}"><title>${bar.system}: ${Math.round(bar.value)} req/s</title></rect>`
        )
        parts.push(
          `<text x="${labelWidth + length + 4}" y="${y + barHeight - 3}" font-size="10" fill="#333">${Math.round(bar.value).toLocaleString('en-US')}</text>`
        )
        y += barHeight + gap
      }
      y = groupTop + groupHeight + groupGap
    }
  }
  const height = y + 8
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif">\n` +
    `<rect width="100%" height="100%" fill="#fff"/>\n${parts.join('\n')}\n</svg>\n`
  )
}
