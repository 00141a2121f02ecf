import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import type { DoomedRows } from './doomed-rows.js'
import type { RunningServer } from './processes.js'
import type { Draw, Scenario, ScenarioRequest } from './scenarios.js'

/** One measurement of one system on one scenario. */
export interface Sample {
  requestsPerSecond: number
  /** Latency percentiles in milliseconds. */
  p50: number
  p99: number
  errors: number
  non2xx: number
  peakRssMiB: number
  /** Server CPU time (user + system) per completed request, in microseconds: less sensitive to a busy machine than
   * req/s. */
  cpuMicrosPerRequest: number
  /** Share of the machine's CPU time that was busy (all processes) or stolen by the hypervisor during the measurement,
   * in % (Linux). */
  machineBusyPercent: number
  stealPercent: number
}

export interface LoadSettings {
  connections: number
  warmup: number
  duration: number
  /** Requests per measurement instead of `duration` (autocannon's `amount`): see `BenchOptions.amount`. */
  amount?: number | undefined
  progress: boolean
  seed: number
  /** The rows a deleting scenario deletes (refilled by the runner before the measurement). */
  doomed?: DoomedRows | undefined
}

const noRows = () => {
  throw new Error('this scenario was given no rows to delete')
}

function drawOf (seed: number, doomed: DoomedRows | undefined): Draw {
  return { next: generator(seed), doomed: doomed === undefined ? noRows : () => doomed.take() }
}

/** A small deterministic generator per measurement, so that each system gets the same sequence of requests. */
function generator (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state / 4294967296
  }
}

function requestsOf (server: RunningServer, scenario: Scenario, draw: Draw): autocannon.Request[] {
  return [
    {
      setupRequest (request) {
        const built = scenario.request(server.system, draw)
        request.method = built.method
        request.path = built.path
        if (built.body !== undefined) {
          request.body = JSON.stringify(built.body)
          request.headers = { ...request.headers, 'content-type': 'application/json' }
        }
        return request
      },
    },
  ]
}

function percentile (sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] as number
}

/** Sends one request and checks its answer; the message says what is wrong. */
export async function probe (
  server: RunningServer,
  scenario: Scenario,
  doomed?: DoomedRows
): Promise<string | undefined> {
  const request: ScenarioRequest = scenario.request(server.system, drawOf(7, doomed))
  try {
    const response = await fetch(server.url + request.path, {
      method: request.method,
      headers: request.body === undefined ? {} : { 'content-type': 'application/json' },
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
    })
    const text = await response.text()
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      body = text
    }
    const problem = scenario.check(server.system, request, response.status, body, response.headers)
    return problem === undefined ? undefined : `${request.method} ${request.path}: ${problem} (${text.slice(0, 160)})`
  } catch (error) {
    return `${request.method} ${request.path}: ${(error as Error).message}`
  }
}

/** Busy (everything but idle and iowait) and steal ticks of all CPUs so far, from /proc/stat; zeros elsewhere. */
function cpuTicks (): { busy: number; steal: number; total: number } {
  try {
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '').trim().split(/\s+/).slice(1).map(Number)
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields
    return {
      busy: user + nice + system + irq + softirq,
      steal,
      total: user + nice + system + idle + iowait + irq + softirq + steal,
    }
  } catch {
    return { busy: 0, steal: 0, total: 0 }
  }
}

/** autocannon ends a run on a sample tick (1 s by default): short runs need shorter ticks. */
function sampleInterval (seconds: number): number {
  return Math.min(1000, Math.max(50, Math.round(seconds * 250)))
}

/** Load that is not measured: warms a server's code paths up (for scenarios that delete nothing). */
export async function warmUp (
  server: RunningServer,
  scenario: Scenario,
  settings: Pick<LoadSettings, 'connections' | 'seed'>,
  seconds: number
): Promise<void> {
  await autocannon({
    url: server.url,
    connections: settings.connections,
    pipelining: 1,
    duration: seconds,
    sampleInt: sampleInterval(seconds),
    requests: requestsOf(server, scenario, drawOf(settings.seed, undefined)),
  })
}

/** Warms a server up on a scenario, then measures it under load. */
export async function measure (
  server: RunningServer,
  scenario: Scenario,
  settings: LoadSettings,
  title: string
): Promise<Sample> {
  const base = { url: server.url, connections: settings.connections, pipelining: 1 }
  if (settings.warmup > 0) {
    await autocannon({
      ...base,
      duration: settings.warmup,
      sampleInt: sampleInterval(settings.warmup),
      requests: requestsOf(server, scenario, drawOf(settings.seed + 1, settings.doomed)),
    })
  }
  server.resetPeakMemory()
  const cpuBefore = await server.cpuTime()
  const ticksBefore = cpuTicks()
  const latencies: number[] = []
  // A time window, or a number of requests that ends only when every one has been answered (autocannon needs at
  // least one request per connection; it ends a run on a sample tick, so the ticks are short).
  const length =
    settings.amount === undefined
      ? { duration: settings.duration, sampleInt: sampleInterval(settings.duration) }
      : { amount: settings.amount, connections: Math.min(settings.connections, settings.amount), sampleInt: 50 }
  // Without a callback autocannon returns its instance, which is also a promise of the result.
  const instance = autocannon({
    ...base,
    ...length,
    title,
    requests: requestsOf(server, scenario, drawOf(settings.seed, settings.doomed)),
  }) as unknown as autocannon.Instance & Promise<autocannon.Result>
  instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
    latencies.push(responseTime)
  })
  if (settings.progress) {
    autocannon.track(instance, {
      renderProgressBar: true,
      renderResultsTable: false,
      renderLatencyTable: false,
      progressBarString: `${title.padEnd(44)} [:bar] :percent`,
    })
  }
  const result = await instance
  const cpu = (await server.cpuTime()) - cpuBefore
  const ticks = cpuTicks()
  const elapsed = ticks.total - ticksBefore.total
  const share = (value: number) => (elapsed > 0 ? Math.round((value / elapsed) * 1000) / 10 : 0)
  const sorted = Float64Array.from(latencies).sort()
  return {
    requestsPerSecond: result.duration > 0 ? result.requests.total / result.duration : 0,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    peakRssMiB: (await server.peakMemory()) / 1024 / 1024,
    cpuMicrosPerRequest: result.requests.total > 0 ? cpu / result.requests.total : 0,
    machineBusyPercent: share(ticks.busy - ticksBefore.busy),
    stealPercent: share(ticks.steal - ticksBefore.steal),
  }
}
