import { Agent, request as httpRequest } from 'node:http'
import { readFileSync } from 'node:fs'

/** One answer over real HTTP, with how long it took. A transport failure is `status: 0` and `error`. */
export interface HttpResult {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
  ms: number
  error?: string
}

export interface HttpOptions {
  agent?: Agent
  /** Give up after this many milliseconds (default 15000): a hang is a failure, never a wait. */
  timeout?: number
  headers?: Record<string, string>
}

/** A keep-alive agent; `maxSockets` bounds how many connections a test opens. */
export function keepAlive (maxSockets: number): Agent {
  return new Agent({ keepAlive: true, maxSockets })
}

/** Sends one request to 127.0.0.1 and never rejects: errors and timeouts come back as `status: 0`. */
export function send (
  port: number,
  method: string,
  path: string,
  body?: unknown,
  options: HttpOptions = {}
): Promise<HttpResult> {
  const started = performance.now()
  const payload = body === undefined ? undefined : JSON.stringify(body)
  const headers: Record<string, string> = { ...options.headers }
  if (payload !== undefined) {
    headers['content-type'] ??= 'application/json'
    headers['content-length'] = String(Buffer.byteLength(payload))
  }
  return new Promise((resolve) => {
    let settled = false
    const done = (result: Omit<HttpResult, 'ms'>) => {
      if (settled) return
      settled = true
      resolve({ ...result, ms: performance.now() - started })
    }
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers,
        agent: options.agent ?? false,
        timeout: options.timeout ?? 15000,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () =>
          done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') })
        )
        res.on('error', (error) => done({ status: 0, headers: {}, body: '', error: error.message }))
      }
    )
    req.on('timeout', () => {
      req.destroy(new Error(`timed out after ${options.timeout ?? 15000} ms`))
    })
    req.on('error', (error) => done({ status: 0, headers: {}, body: '', error: error.message }))
    req.end(payload)
  })
}

/** Runs `count` tasks with at most `concurrency` in flight, and returns their results in order. */
export async function bounded<T> (
  count: number,
  concurrency: number,
  task: (index: number) => Promise<T>
): Promise<T[]> {
  const results = new Array<T>(count)
  let next = 0
  const worker = async () => {
    while (next < count) {
      const index = next++
      results[index] = await task(index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  return results
}

/** The resident set size of a process in bytes, from /proc (Linux). */
export function rssOf (pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]
  if (kib === undefined) throw new Error(`no VmRSS for process ${pid}`)
  return Number(kib) * 1024
}

export function median (values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** How many results had each status (0: transport error), as in `{ 201: 998, 503: 2 }`. */
export function statusCounts (results: readonly HttpResult[]): Record<number, number> {
  const counts: Record<number, number> = {}
  for (const result of results) counts[result.status] = (counts[result.status] ?? 0) + 1
  return counts
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
