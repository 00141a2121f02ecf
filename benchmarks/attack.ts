import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

// `npm run bench -- --attack` (issue 36): one client sends GET /books/1 every 50 ms while N anonymous attackers
// loop over the most expensive requests the example allows; the cheap GET's p50/p99 and error rate are reported
// next to the same without attackers, in the same run. A scenario, not a timed test: the figures go to
// benchmarks/analysis.md. The server runs in its own process over the built package (attack-server.ts).

const expensive = [
  '/publishers?limit=100',
  '/publishers/1',
  '/books?tags.name__contains=zzz&count=true',
  '/books?order_by=author.name&limit=100&offset=10000',
  '/books?title__contains=zzz&count=true',
]

interface Phase {
  readonly attackers: number
  readonly readWorkers: string
}

interface PhaseResult extends Phase {
  readonly sent: number
  readonly errors: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly attacks: Record<string, number>
}

function percentile (sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? NaN
}

async function startServer (env: Record<string, string>): Promise<{ child: ChildProcess, base: string }> {
  const child = fork(fileURLToPath(new URL('./attack-server.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { port: number }) => { resolve(message.port) })
    child.once('exit', (code) => { reject(new Error(`the attack server exited with ${String(code)}`)) })
  })
  return { child, base: `http://127.0.0.1:${port}` }
}

/** One phase: the cheap client and `attackers` loops for `seconds`. */
async function phase (base: string, { attackers, readWorkers }: Phase, seconds: number): Promise<PhaseResult> {
  const latencies: number[] = []
  let errors = 0
  const attacks: Record<string, number> = {}
  const state = { running: true }
  const loops = [...Array(attackers).keys()].map(async (attacker) => {
    for (let n = attacker; state.running; n++) {
      const path = expensive[n % expensive.length] ?? '/books'
      const status = await fetch(`${base}${path}`).then(async (response) => {
        await response.arrayBuffer()
        return String(response.status)
      }, () => 'network error')
      attacks[status] = (attacks[status] ?? 0) + 1
    }
  })
  const cheap: Array<Promise<void>> = []
  const end = Date.now() + seconds * 1000
  while (Date.now() < end) {
    const start = performance.now()
    cheap.push(fetch(`${base}/books/1`).then(async (response) => {
      await response.arrayBuffer()
      latencies.push(performance.now() - start)
      if (response.status !== 200) errors++
    }, () => { errors++ }))
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await Promise.all(cheap)
  state.running = false
  await Promise.all(loops)
  latencies.sort((a, b) => a - b)
  return {
    attackers,
    readWorkers,
    sent: cheap.length,
    errors,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: latencies.at(-1) ?? NaN,
    attacks,
  }
}

/** Runs the attack phases and prints a table. */
export async function runAttack (args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    strict: false,
    options: {
      attackers: { type: 'string' },
      'attack-rows': { type: 'string' },
      'attack-seconds': { type: 'string' },
      'attack-workers': { type: 'string' },
      'attack-url': { type: 'string' },
    },
  })
  const text = (value: unknown, fallback: string): string => (typeof value === 'string' ? value : fallback)
  const counts = text(values.attackers, '0,1,8').split(',').map(Number)
  const seconds = Number(text(values['attack-seconds'], '10'))
  const settings = text(values['attack-workers'], 'default,0').split(',')
  const url = text(values['attack-url'], 'sqlite:benchmarks/.data/attack.db')
  const rows = text(values['attack-rows'], '1000000')
  const results: PhaseResult[] = []
  for (const readWorkers of settings) {
    const env: Record<string, string> = { ATTACK_DB_URL: url, ATTACK_ROWS: rows }
    if (readWorkers !== 'default') env.ATTACK_READ_WORKERS = readWorkers
    const { child, base } = await startServer(env)
    try {
      await fetch(`${base}/books/1`).then(async (response) => await response.arrayBuffer())
      for (const attackers of counts) {
        const result = await phase(base, { attackers, readWorkers }, seconds)
        results.push(result)
        process.stdout.write(`${JSON.stringify(result)}\n`)
      }
    } finally {
      child.send('stop')
      await new Promise((resolve) => child.once('exit', resolve))
    }
  }
  process.stdout.write(`\n${url}, ${rows} books, ${seconds} s per phase; GET /books/1 every 50 ms\n\n`)
  process.stdout.write('| readWorkers | attackers | GETs | errors | p50 ms | p99 ms | max ms | attackers\' answers |\n')
  process.stdout.write('|---|---:|---:|---:|---:|---:|---:|---|\n')
  for (const result of results) {
    const answers = Object.entries(result.attacks).map(([status, n]) => `${status}: ${n}`).join(', ')
    process.stdout.write(`| ${result.readWorkers} | ${result.attackers} | ${result.sent} | ${result.errors} | ` +
      `${result.p50.toFixed(1)} | ${result.p99.toFixed(1)} | ${result.max.toFixed(1)} | ${answers} |\n`)
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  runAttack(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exitCode = 1
  })
}
