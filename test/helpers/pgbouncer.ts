import { spawn } from 'node:child_process'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/** Where Debian's package puts PgBouncer; `undefined` when it is not installed. */
export const pgbouncerBinary = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path))

/** A PgBouncer the test started, in transaction mode, in front of one PostgreSQL server. */
export interface PgBouncer {
  readonly port: number
  readonly stop: () => Promise<void>
}

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo // a TCP server's address is an AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

async function listening (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(false) })
  })
}

/**
 * Starts PgBouncer (transaction mode, trust, `serverPoolSize` server connections per database) in front of
 * `server`, with its own ini in a temporary folder. It drops `statement_timeout` from the startup parameters
 * (`ignore_startup_parameters`), as a PgBouncer set up to accept pg's clients does. As root it runs as postgres.
 */
export async function startPgBouncer (server: URL, serverPoolSize: number): Promise<PgBouncer> {
  if (pgbouncerBinary === undefined) throw new Error('PgBouncer is not installed (apt-get install pgbouncer)')
  const folder = await mkdtemp(join(tmpdir(), 'pgbouncer-'))
  await chmod(folder, 0o755)
  const port = await freePort()
  const user = decodeURIComponent(server.username) || 'postgres'
  await writeFile(join(folder, 'userlist.txt'), `"${user}" ""\n`)
  await writeFile(join(folder, 'pgbouncer.ini'), [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || '5432'}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(folder, 'userlist.txt')}`,
    `admin_users = ${user}`,
    'pool_mode = transaction',
    `default_pool_size = ${serverPoolSize}`,
    'max_client_conn = 200',
    'ignore_startup_parameters = extra_float_digits,options,statement_timeout',
    '',
  ].join('\n'))
  const asRoot = process.getuid?.() === 0
  const child = spawn(pgbouncerBinary, [...(asRoot ? ['-u', 'postgres'] : []), join(folder, 'pgbouncer.ini')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let output = ''
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  for (let attempt = 0; !(await listening(port)); attempt++) {
    if (attempt === 100 || child.exitCode !== null) throw new Error(`PgBouncer did not start:\n${output}`)
    await sleep(100)
  }
  return {
    port,
    stop: async () => {
      child.kill('SIGTERM')
      await exited
      await rm(folder, { recursive: true, force: true })
    },
  }
}
