// Stoplight Prism as a validating proxy in front of a running server (`prism proxy <document> <upstream>`),
// started from the project's own install, and the few ways its answers say what it found.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import type { TestContext } from 'node:test'

const require = createRequire(import.meta.url)
const prismEntry = join(dirname(require.resolve('@stoplight/prism-cli/package.json')), 'dist', 'index.js')

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  server.close()
  await once(server, 'close')
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

/** Ends a child process and waits for it; SIGKILL after 10 s. */
export async function stopChild (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
  await exited
  clearTimeout(timer)
}

/** A running Prism proxy. */
export interface PrismProxy {
  origin: string
  /** `--errors`: a response that breaks the document becomes Prism's 500, an invalid request its 422. */
  errors: boolean
}

/**
 * Starts `prism proxy` on a free port; the test stops it when it ends. Prism prints "Prism is listening"
 * once its routes are built (a second or two); it logs every exchange to stdout, which is drained.
 */
export async function startPrism (
  t: TestContext,
  documentFile: string,
  upstream: string,
  errors: boolean
): Promise<PrismProxy> {
  const port = await freePort()
  const args = ['proxy', documentFile, upstream, '--host', '127.0.0.1', '--port', String(port)]
  const child = spawn(process.execPath, [prismEntry, ...args, ...(errors ? ['--errors'] : [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // Prism's install phones home through @scarf/scarf: off, as in a CI without that network.
    env: { ...process.env, SCARF_ANALYTICS: 'false', FORCE_COLOR: '0' },
  })
  t.after(() => stopChild(child))
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Prism did not listen in 60 s:\n${output}`)), 60_000)
    const read = (chunk: Buffer) => {
      // Only the start is kept: the rest of its log is every exchange, already checked from the answers.
      if (output.length < 20_000) output += chunk.toString()
      if (/Prism is listening/.test(output)) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`Prism exited with ${String(code)}:\n${output}`))
    })
  })
  return { origin: `http://127.0.0.1:${port}`, errors }
}

/** One of Prism's own answers (a problem+json whose type is Prism's), not the upstream's. */
export interface PrismProblem {
  type: string
  status: number
  detail?: string
  validation?: PrismViolation[]
}

/** A violation as Prism reports it, in its problem body or its `sl-violations` header. */
export interface PrismViolation {
  location: string[]
  severity: string
  code?: string | number
  message: string
}

/** Prism's own problem, when the body is one. */
export function prismProblem (body: string): PrismProblem | undefined {
  try {
    const parsed: unknown = JSON.parse(body)
    if (typeof parsed !== 'object' || parsed === null || !('type' in parsed)) return undefined
    const { type } = parsed
    return typeof type === 'string' && type.startsWith('https://stoplight.io/prism/errors#')
      ? (parsed as PrismProblem) // its type says so
      : undefined
  } catch {
    return undefined
  }
}

/** The violations of Prism's `sl-violations` header (a proxy without --errors reports them there). */
export function headerViolations (header: string | null): PrismViolation[] {
  if (header === null) return []
  try {
    const parsed: unknown = JSON.parse(header)
    return Array.isArray(parsed) ? (parsed as PrismViolation[]) : [] // Prism's own JSON array
  } catch {
    // "Too many violations! …", cut at 8 KiB: at least one.
    return [{ location: ['truncated'], severity: 'Error', message: header.slice(0, 300) }]
  }
}
