import { connect, createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import type { TestContext } from 'node:test'

/** A TCP proxy on 127.0.0.1 the test turns off and on: a database that goes away and comes back, on the same port. */
export interface SwitchProxy {
  readonly port: number
  /** `url` with its host and port replaced by the proxy's. */
  readonly through: (url: string) => string
  /** Stops listening and resets every open connection: new connections are refused, as by a stopped server. */
  readonly down: () => Promise<void>
  /** Listens again on the same port. */
  readonly up: () => Promise<void>
}

/** Starts a proxy to `host:port`, closed when the test ends. */
export async function switchProxy (t: TestContext, host: string, port: number): Promise<SwitchProxy> {
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(port, host)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('close', () => { sockets.delete(socket) })
      socket.on('error', () => {})
    }
    client.pipe(upstream)
    upstream.pipe(client)
    client.on('close', () => { upstream.destroy() })
    upstream.on('close', () => { client.destroy() })
  })
  const listen = async (at: number) => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(at, '127.0.0.1', () => {
        server.off('error', reject)
        resolve()
      })
    })
  }
  const down = async () => {
    const closed = new Promise<void>((resolve) => { server.close(() => { resolve() }) })
    for (const socket of sockets) socket.resetAndDestroy()
    await closed
  }
  await listen(0)
  const own = (server.address() as AddressInfo).port
  t.after(async () => { if (server.listening) await down() })
  return {
    port: own,
    through: (url) => {
      const parsed = new URL(url)
      parsed.hostname = '127.0.0.1'
      parsed.port = String(own)
      return parsed.toString()
    },
    down,
    up: async () => { await listen(own) },
  }
}
