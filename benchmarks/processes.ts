import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compiled } from './build.js'
import type { ScenarioId, SystemName } from './scenarios.js'
import type { DatabaseTarget } from './seed.js'
import type { RunnerMessage, ServerMessage, ServerRuntime } from './server.js'

/**
 * Plain `node`, no loader and no `source` condition, with the environment's NODE_OPTIONS removed (a test
 * runner's `--import tsx` must not reach the servers): what a user's production process runs.
 */
export function plainNode (module: string, args: string[], execArgv: string[] = [], wrapper?: Wrapper): ChildProcess {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  const launch =
    wrapper === undefined
      ? { execArgv }
      : { execPath: wrapper.command, execArgv: [...wrapper.args, process.execPath, ...execArgv] }
  return fork(compiled(module), args, { ...launch, env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
}

/** A command that runs node itself, given node's path and arguments after its own (valgrind, for instructions.ts). */
export interface Wrapper {
  command: string
  args: string[]
}

/** A system's server process, as the runner sees it. */
export interface RunningServer {
  system: SystemName
  url: string
  pid: number
  unsupported: Partial<Record<ScenarioId, string>>
  /** What it does differently on scenarios it serves (see SystemServer.notes). */
  notes: Partial<Record<ScenarioId, string>>
  runtime: ServerRuntime
  /** Forgets the peak resident set size so far, where the platform allows it. */
  resetPeakMemory(): void
  /** The peak resident set size in bytes since the last reset (or since start). */
  peakMemory(): Promise<number>
  /** CPU time (user + system) the process has used so far, in microseconds. */
  cpuTime(): Promise<number>
  stop(): Promise<void>
}

/**
 * How servers run: `dist`, plain node over the compiled benchmarks and the built package (what users run);
 * `source`, the TypeScript sources through tsx with the `source` condition (how the harness ran before, kept
 * to measure the difference).
 */
export type ServerRuntimeKind = 'dist' | 'source'

/**
 * Starts one system in its own process and waits until it listens; `library` is the baseline's build
 * (`viewsets-baseline`), `execArgv` more node flags, and `wrapper` a command that runs node (over dist/ only).
 */
export async function startServer (
  system: SystemName,
  target: DatabaseTarget,
  options: {
    profileDir?: string | undefined
    runtime?: ServerRuntimeKind
    library?: string | undefined
    execArgv?: string[]
    wrapper?: Wrapper
  } = {}
): Promise<RunningServer> {
  const execArgv: string[] = [...(options.execArgv ?? [])]
  if (options.profileDir !== undefined) {
    execArgv.push('--cpu-prof', `--cpu-prof-dir=${join(options.profileDir, `${system}-${target.kind}`)}`)
  }
  // `library`: the dist/index.js of another build (the baseline's), which the server imports instead of the package.
  const args = [system, JSON.stringify(target), ...(options.library === undefined ? [] : [options.library])]
  const child =
    options.runtime === 'source'
      ? fork(fileURLToPath(new URL('./server.ts', import.meta.url)), args, {
        execArgv: ['--conditions=source', '--import', 'tsx', ...execArgv],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      })
      : plainNode('server.ts', args, execArgv, options.wrapper)
  const ready = await new Promise<Extract<ServerMessage, { type: 'ready' }>>((resolve, reject) => {
    const onExit = (code: number | null) =>
      reject(new Error(`${system} server exited with code ${String(code)} before it was ready`))
    child.once('exit', onExit)
    child.once('error', reject)
    child.on('message', function onMessage (message: ServerMessage) {
      if (message.type === 'ready') resolve(message)
      else if (message.type === 'failed') reject(new Error(`${system} server failed to start: ${message.message}`))
      else return
      child.off('exit', onExit)
      child.off('message', onMessage)
    })
  })
  const pid = child.pid as number
  let canReset = process.platform === 'linux'
  return {
    system,
    url: `http://127.0.0.1:${ready.port}`,
    pid,
    unsupported: ready.unsupported,
    notes: ready.notes,
    runtime: ready.runtime,
    resetPeakMemory () {
      if (!canReset) return
      // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
      try {
        writeFileSync(`/proc/${pid}/clear_refs`, '5')
      } catch {
        canReset = false
      }
    },
    async peakMemory () {
      if (process.platform === 'linux') {
        const kib = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
        if (kib !== undefined) return Number(kib) * 1024
      }
      const answer = await ask(child, 'memory')
      return answer.type === 'memory' ? answer.maxRss : 0
    },
    async cpuTime () {
      const answer = await ask(child, 'cpu')
      return answer.type === 'cpu' ? answer.micros : 0
    },
    async stop () {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.send({ type: 'stop' } satisfies RunnerMessage)
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
    },
  }
}

async function ask (child: ChildProcess, type: 'memory' | 'cpu'): Promise<ServerMessage> {
  return await new Promise((resolve) => {
    child.on('message', function onMessage (message: ServerMessage) {
      if (message.type !== type) return
      child.off('message', onMessage)
      resolve(message)
    })
    child.send({ type } satisfies RunnerMessage)
  })
}

/** Runs a compiled benchmarks/ module in a plain-node child and resolves with the one message it sends. */
export async function runChild<T> (module: string, args: string[]): Promise<T> {
  const child = plainNode(module, args)
  return await new Promise<T>((resolve, reject) => {
    let answer: T | undefined
    child.once('message', (message: T) => {
      answer = message
    })
    child.once('error', reject)
    child.once('exit', (code) => {
      if (answer !== undefined) resolve(answer)
      else reject(new Error(`${module} exited with code ${String(code)} before it answered`))
    })
  })
}
