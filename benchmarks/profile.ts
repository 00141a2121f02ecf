import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

// Summarises a V8 CPU profile (from `npm run bench -- --profile viewsets`): the functions with the most
// self time, and self time per package, so that the cost of each layer (Fastify, Kysely, the driver,
// this library) reads at a glance.
//
//   node --import tsx benchmarks/profile.ts benchmarks/.data/profiles/viewsets-sqlite/*.cpuprofile [--top 30]
// (servers run the compiled benchmarks over dist/, so this library's frames are `dist/…`)

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

export interface ProfileSummary {
  totalMs: number
  functions: Array<{ name: string; where: string; ms: number; share: number }>
  packages: Array<{ name: string; ms: number; share: number }>
}

/** The package (or `lib/…`, `node:…`, `(program)`) a frame belongs to. */
export function packageOf (url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (modules !== null) return modules[1] as string
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0]
  // The servers' own modules: dist/… (this library), benchmarks/… (compiled to benchmarks/.data/build).
  const local = /\/(lib|dist|benchmarks)\/(?:\.data\/build\/)?(.+)$/.exec(url)
  if (local !== null) return `${local[1]}/${(local[2] as string).split('/')[0]}`
  return url
}

export function summarise (profile: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map<number, ProfileNode>(profile.nodes.map((node) => [node.id, node]))
  const self = new Map<number, number>()
  let total = 0
  profile.samples.forEach((id, index) => {
    const delta = (profile.timeDeltas[index] ?? 0) / 1000
    self.set(id, (self.get(id) ?? 0) + delta)
    total += delta
  })
  const functions = new Map<string, { name: string; where: string; ms: number }>()
  const packages = new Map<string, number>()
  for (const [id, ms] of self) {
    const frame = byId.get(id)?.callFrame
    if (frame === undefined) continue
    const where =
      frame.url === ''
        ? ''
        : `${frame.url.replace(/^.*?\/(node_modules|lib|dist|benchmarks)\/(?:\.data\/build\/)?/, '$1/')}:${frame.lineNumber + 1}`
    const name = frame.functionName === '' ? '(anonymous)' : frame.functionName
    const key = `${name} ${where}`
    const entry = functions.get(key) ?? { name, where, ms: 0 }
    entry.ms += ms
    functions.set(key, entry)
    const pkg = packageOf(frame.url, frame.functionName)
    packages.set(pkg, (packages.get(pkg) ?? 0) + ms)
  }
  const share = (ms: number) => Math.round((ms / total) * 1000) / 10
  return {
    totalMs: Math.round(total),
    functions: [...functions.values()]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top)
      .map((entry) => ({ ...entry, ms: Math.round(entry.ms), share: share(entry.ms) })),
    packages: [...packages.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([name, ms]) => ({ name, ms: Math.round(ms), share: share(ms) })),
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const topIndex = args.indexOf('--top')
  const top = topIndex === -1 ? 25 : Number(args.splice(topIndex, 2)[1])
  for (const file of args) {
    const summary = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, top)
    process.stdout.write(`\n${file}: ${summary.totalMs} ms sampled\n\nSelf time by package\n`)
    for (const entry of summary.packages.slice(0, 20)) {
      process.stdout.write(`  ${String(entry.share).padStart(5)}%  ${entry.name}\n`)
    }
    process.stdout.write('\nTop functions by self time\n')
    for (const entry of summary.functions) {
      process.stdout.write(`  ${String(entry.share).padStart(5)}%  ${entry.name}  ${entry.where}\n`)
    }
  }
}
