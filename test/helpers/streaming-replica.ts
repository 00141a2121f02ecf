/**
 * A PostgreSQL streaming replica of a cluster of the test's own (hostile-cluster.ts), made with pg_basebackup into a
 * temporary folder and run by pg_ctl as the user postgres on a port of its own; stopped and removed when the test
 * ends, whatever happened.
 */
import { execFile } from 'node:child_process'
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { promisify } from 'node:util'
import type { OwnCluster } from './hostile-cluster.js'

const run = promisify(execFile)

export interface StreamingReplica {
  port: number
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, read only). */
  url: string
  start (): Promise<void>
  /** `pg_ctl stop -m fast`: its sessions end, as when a replica host goes down. */
  stop (): Promise<void>
}

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (typeof address !== 'object' || address === null) throw new Error('no port')
  return address.port
}

/**
 * Makes a hot standby of `primary` that applies each commit `applyDelay` after it (`recovery_min_apply_delay`), so
 * that its lag is known in advance, and starts it.
 */
export async function streamingReplica (
  t: TestContext,
  primary: OwnCluster,
  applyDelay: string
): Promise<StreamingReplica> {
  const bin = `/usr/lib/postgresql/${primary.version}/bin`
  const directory = mkdtempSync(join(tmpdir(), 'viewset-replica-'))
  const data = join(directory, 'data')
  const { stdout } = await run('id', ['-u', 'postgres'])
  const { stdout: group } = await run('id', ['-g', 'postgres'])
  chownSync(directory, Number(stdout), Number(group))
  const asPostgres = async (command: string, ...args: string[]) => {
    await run('runuser', ['-u', 'postgres', '--', `${bin}/${command}`, ...args])
  }
  const control = async (...args: string[]) => { await asPostgres('pg_ctl', '-D', data, '-w', '-t', '30', ...args) }
  t.after(async () => {
    await control('stop', '-m', 'immediate').catch(() => {})
    rmSync(directory, { recursive: true, force: true })
  })
  // -R writes standby.signal and primary_conninfo; -X stream copies the WAL written meanwhile.
  await asPostgres('pg_basebackup', '-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', data,
    '-R', '-X', 'stream')
  const port = await freePort()
  // Debian keeps a cluster's configuration outside its data folder: the copy gets its own.
  writeFileSync(join(data, 'postgresql.conf'), [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${directory}'`,
    'hot_standby = on',
    `recovery_min_apply_delay = '${applyDelay}'`,
    "log_min_messages = 'warning'",
  ].join('\n') + '\n')
  writeFileSync(join(data, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\n')
  for (const file of ['postgresql.conf', 'pg_hba.conf']) chownSync(join(data, file), Number(stdout), Number(group))
  const start = async () => { await control('start', '-l', join(directory, 'log')) }
  await start()
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop: async () => { await control('stop', '-m', 'fast') },
  }
}
