import { connect, createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import type { TestContext } from 'node:test'

/** A TCP proxy on 127.0.0.1 whose connections can be frozen: half-open, as after a failover or a partition. */
export interface FreezingProxy {
  /** The port it listens on. */
  readonly port: number
  /** Connections accepted so far. */
  readonly opened: () => number
  /** Frozen connections that their client has closed since. */
  readonly closedWhileFrozen: () => number
  /**
   * Freezes every open connection for good: nothing more is forwarded either way, and no socket is closed or
   * reset. Connections accepted later pass, like new connections to a server that came back.
   */
  readonly freeze: () => void
}

/** Starts a proxy to `host:port`, closed when the test ends. */
export async function freezingProxy (t: TestContext, host: string, port: number): Promise<FreezingProxy> {
  const pairs = new Set<{ client: Socket, server: Socket, frozen: boolean }>()
  let opened = 0
  let closedWhileFrozen = 0
  const proxy = createServer((client) => {
    opened++
    const server = connect(port, host)
    const pair = { client, server, frozen: false }
    pairs.add(pair)
    client.on('data', (chunk) => { if (!pair.frozen) server.write(chunk) })
    server.on('data', (chunk) => { if (!pair.frozen) client.write(chunk) })
    client.on('close', () => {
      // A frozen pair's server side stays open until the test ends, as a silent server's would.
      if (pair.frozen) closedWhileFrozen++
      else {
        server.destroy()
        pairs.delete(pair)
      }
    })
    server.on('close', () => { if (!pair.frozen) client.destroy() })
    client.on('error', () => {})
    server.on('error', () => {})
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  t.after(async () => {
    for (const { client, server } of pairs) {
      client.destroy()
      server.destroy()
    }
    await new Promise((resolve) => proxy.close(resolve))
  })
  return {
    port: (proxy.address() as AddressInfo).port, // a TCP server's address is an AddressInfo
    opened: () => opened,
    closedWhileFrozen: () => closedWhileFrozen,
    freeze: () => { for (const pair of pairs) pair.frozen = true },
  }
}
