import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import type { DatabaseTarget } from './seed.js'
import type { ScenarioId, SystemName } from './scenarios.js'

// The entry of one system's server process: the runner forks it (compiled, with plain `node`, over the
// package's built dist/, as users run it), it listens on an ephemeral port of 127.0.0.1 and reports the
// port over IPC. It exits when told to, so that `--cpu-prof` is written.

/** A system's app, and the scenarios it cannot serve (with the reason shown as n/a). */
export interface SystemServer {
  app: FastifyInstance
  unsupported: Partial<Record<ScenarioId, string>>
  /** What it does differently on a scenario it still serves (a baseline's GET without an ETag), shown beside its
   * figure. */
  notes?: Partial<Record<ScenarioId, string>>
  /** The fastify-viewsets build it loaded, when not the package's own (`viewsets-baseline`). */
  library?: string
}

/** What the server process says to the runner. */
export type ServerMessage =
  | {
    type: 'ready'
    port: number
    unsupported: Partial<Record<ScenarioId, string>>
    notes: Partial<Record<ScenarioId, string>>
    runtime: ServerRuntime
  }
  | { type: 'failed'; message: string }
  | { type: 'memory'; maxRss: number }
  | { type: 'cpu'; micros: number }

/** How the server process runs: the proof that it is plain node over the built package. */
export interface ServerRuntime {
  /** `process.execArgv`: empty unless profiling (no loader, no `--conditions`). */
  execArgv: string[]
  /** The fastify-viewsets build this process serves: where `import 'fastify-viewsets'` resolves (dist/index.js), or the
   * baseline's dist/index.js. */
  library: string
}

/** What the runner says to the server process. */
export type RunnerMessage = { type: 'stop' } | { type: 'memory' } | { type: 'cpu' }

/** Builds a system's app; `library` is the baseline's dist/index.js, which only `viewsets-baseline` reads. */
type Build = (target: DatabaseTarget, library: string | undefined) => Promise<SystemServer>

const builders: Record<SystemName, () => Promise<{ build: Build }>> = {
  raw: async () => await import('./systems/raw.js'),
  kysely: async () => await import('./systems/kysely.js'),
  viewsets: async () => await import('./systems/viewsets.js'),
  platformatic: async () => await import('./systems/platformatic.js'),
  'viewsets-own-kysely': async () => await import('./systems/viewsets-own-kysely.js'),
  'viewsets-baseline': async () => await import('./systems/viewsets-baseline.js'),
}

function send (message: ServerMessage): void {
  process.send?.(message)
}

async function main (): Promise<void> {
  const [system, targetJson, library] = process.argv.slice(2) as [SystemName, string, string | undefined]
  const target = JSON.parse(targetJson) as DatabaseTarget
  const builder = builders[system]
  if (builder === undefined) throw new Error(`unknown system ${system}`)
  const server = await (await builder()).build(target, library)
  const { app, unsupported, notes = {} } = server
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no TCP address')
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await app.close().catch(() => {})
    process.exit(0)
  }
  process.on('message', (message: RunnerMessage) => {
    if (message.type === 'stop') void stop()
    // Off Linux the runner cannot read /proc: it asks for the peak resident set size instead.
    if (message.type === 'memory') send({ type: 'memory', maxRss: process.resourceUsage().maxRSS * 1024 })
    if (message.type === 'cpu') {
      const { user, system } = process.cpuUsage()
      send({ type: 'cpu', micros: user + system })
    }
  })
  process.on('disconnect', () => {
    void stop()
  })
  send({
    type: 'ready',
    port: address.port,
    unsupported,
    notes,
    runtime: {
      execArgv: process.execArgv,
      library: server.library ?? fileURLToPath(import.meta.resolve('fastify-viewsets')),
    },
  })
}

main().catch((error: unknown) => {
  send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) })
  process.exitCode = 1
  setTimeout(() => process.exit(1), 100).unref()
})
