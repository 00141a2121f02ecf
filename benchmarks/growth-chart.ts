import { escape } from './chart.js'
import type { DatabaseKind, Growth, Results } from './results.js'

// The growth figures as an SVG bar chart: per database, the latency of each request on the large table,
// on one scale per database (PostgreSQL's count and deep offset are an order of magnitude above a page).

const databaseTitles: Record<DatabaseKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }

function bars (growth: Growth): Array<{ label: string, ms: number, color: string }> {
  const page = growth.page.toLocaleString('en-US')
  return [
    { label: 'LIST page 1', ms: growth.listMs, color: '#16a34a' },
    { label: 'LIST page 1, count=true', ms: growth.countMs, color: '#a3a3a3' },
    { label: 'cursor page 1', ms: growth.cursorFirstMs, color: '#16a34a' },
    { label: `cursor page ${page}`, ms: growth.cursorDeepMs, color: '#15803d' },
    { label: 'offset page 1', ms: growth.offsetFirstMs, color: '#60a5fa' },
    { label: `offset page ${page}`, ms: growth.offsetDeepMs, color: '#f59e0b' },
  ]
}

export function growthChartSvg (results: Results): string {
  const width = 760
  const labelWidth = 200
  const barWidth = width - labelWidth - 90
  const barHeight = 16
  const parts: string[] = []
  let y = 28
  const entries = Object.entries(results.growth ?? {}) as Array<[DatabaseKind, Growth]>
  const first = entries[0]?.[1]
  parts.push(`<text x="16" y="${y}" font-size="16" font-weight="bold">How cost grows: ${escape(first?.rows.toLocaleString('en-US') ?? '')} rows, ${first?.limit ?? ''} a page (ms, lower is better)</text>`)
  y += 18
  parts.push(`<text x="16" y="${y}" font-size="11" fill="#555">${escape(`${results.date.slice(0, 10)} · ${results.machine.cpus} × ${results.machine.model} · Node ${results.machine.node} · in-process, median of ${first?.requests ?? ''} requests`)}</text>`)
  y += 8
  for (const [database, growth] of entries) {
    y += 26
    const ratio = growth.cursorDeepMs / growth.cursorFirstMs
    parts.push(`<text x="16" y="${y}" font-size="14" font-weight="bold">${databaseTitles[database]}</text>`)
    parts.push(`<text x="${labelWidth}" y="${y}" font-size="11" fill="#15803d">${escape(`cursor page ${growth.page.toLocaleString('en-US')} ÷ page 1: ${ratio.toFixed(2)}× (target ≤ 1.2); offset: ${(growth.offsetDeepMs / growth.offsetFirstMs).toFixed(1)}×`)}</text>`)
    y += 8
    const list = bars(growth)
    const longest = Math.max(...list.map((bar) => bar.ms), 0.001)
    for (const bar of list) {
      const length = Math.max(1, Math.round(bar.ms / longest * barWidth))
      parts.push(`<text x="16" y="${y + barHeight - 4}" font-size="12">${escape(bar.label)}</text>`)
      parts.push(`<rect x="${labelWidth}" y="${y}" width="${length}" height="${barHeight}" fill="${bar.color}"><title>${escape(bar.label)}: ${bar.ms} ms</title></rect>`)
      parts.push(`<text x="${labelWidth + length + 4}" y="${y + barHeight - 4}" font-size="11" fill="#333">${bar.ms} ms</text>`)
      y += barHeight + 4
    }
  }
  const height = y + 16
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif">\n` +
    `<rect width="100%" height="100%" fill="#fff"/>\n${parts.join('\n')}\n</svg>\n`
}
