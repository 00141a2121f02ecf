/**
 * A PostgreSQL cluster of the test's own, made with Debian's postgresql-common tools, so that a test
 * can stop and start a server without touching the shared one on 5432 that other suites use.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { createServer } from 'node:net'
import type { TestContext } from 'node:test'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface OwnCluster {
  version: string
  name: string
  port: number
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  url: string
  start (): Promise<void>
  /** `pg_ctlcluster … stop -m fast`: sessions are terminated, as in a failover or a restart. */
  stop (): Promise<void>
}

/** A port that nothing listens on right now. */
async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (typeof address !== 'object' || address === null) throw new Error('no port')
  return address.port
}

/** The newest installed PostgreSQL major version, as `ls /etc/postgresql` lists them. */
function installedVersion (): string {
  const versions = readdirSync('/etc/postgresql').filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(a) - Number(b))
  const version = versions.at(-1)
  if (version === undefined) throw new Error('no PostgreSQL cluster configuration under /etc/postgresql (is postgresql-common installed?)')
  return version
}

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Drops the clusters of earlier runs whose process died before its cleanup ran (a SIGKILL, say). */
async function dropOrphans (version: string): Promise<void> {
  for (const name of readdirSync(`/etc/postgresql/${version}`)) {
    const pid = /^vsfault(\d+)x[0-9a-f]+$/.exec(name)?.[1]
    if (pid !== undefined && !alive(Number(pid))) await run('pg_dropcluster', ['--stop', version, name]).catch(() => {})
  }
}

/**
 * Creates and starts a fresh cluster on a free port. It is always stopped and dropped when the test
 * ends, whatever happened (`pg_dropcluster --stop`).
 */
export async function ownCluster (t: TestContext): Promise<OwnCluster> {
  const version = installedVersion()
  await dropOrphans(version)
  // The creating process's id is in the name, so that a later run can tell an orphan from a live cluster.
  const name = `vsfault${process.pid}x${randomBytes(3).toString('hex')}`
  const port = await freePort()
  const control = async (...args: string[]) => { await run('pg_ctlcluster', ['--skip-systemctl-redirect', version, name, ...args]) }
  // --start-conf=manual: never started at boot; trust: no password on a throwaway cluster.
  await run('pg_createcluster', [version, name, '--port', String(port), '--start-conf', 'manual', '--', '--auth=trust'])
  t.after(async () => {
    await control('stop', '-m', 'immediate').catch(() => {})
    await run('pg_dropcluster', ['--stop', version, name])
  })
  await control('start')
  return {
    version,
    name,
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: async () => { await control('start') },
    stop: async () => { await control('stop', '-m', 'fast') },
  }
}
