import { connect } from 'node:net'
import { promiseHooks } from 'node:v8'

// Cancelling the PostgreSQL query of a request whose client went away. A request runs inside a scope
// (runCancellable); each pg client of a pool opened by createDatabase records which scope's query it is
// running (cancelOnClientGone). When the response closes before it was sent, the queries still running
// for that scope get a CancelRequest on a separate connection, the way `pg` cancels (Client#cancel, which
// needs the Query object that pool.query and Kysely keep to themselves). The answer is 57014, a 503
// FST_VIEWSET_TIMEOUT nobody reads, and the connection goes back to the pool healthy.

/** One request's queries. */
interface Scope {
  gone: boolean
  readonly running: Set<() => void>
}

// Which scope the running code belongs to, carried from each promise to its reactions: what an
// AsyncLocalStorage does, with V8's promise hooks only. On Node 20 an AsyncLocalStorage runs async_hooks'
// machinery (async ids, the resource stack, every hook of every storage) for each promise of the process:
// 38 µs of CPU per GET by id over PostgreSQL (108 against 70 without it); these three hooks cost half as
// much per promise. Promises are tracked as an AsyncLocalStorage tracks them (the same V8 hooks); a query
// started from a timer or event callback rather than a promise continuation has no scope: it is not
// cancelled, and never taken for another request's.
const scopeKey = Symbol('fastify-viewsets.scope')
interface ScopedPromise { [scopeKey]?: Scope }
let current: Scope | undefined
let cancellation = false

/** Turns request scopes on: called when createDatabase opens a PostgreSQL pool, whose clients can cancel. */
export function enableCancellation (): void {
  if (cancellation) return
  cancellation = true
  promiseHooks.createHook({
    // A promise is a plain object: the scope rides on it, read by its reactions.
    init (promise) { if (current !== undefined) (promise as ScopedPromise)[scopeKey] = current },
    before (promise) { current = (promise as ScopedPromise)[scopeKey] },
    // Reactions never nest (each runs from the microtask queue): whatever runs next starts with no scope.
    after () { current = undefined },
  })
}

/** The request scope of the running code, or `undefined`: kept by code that resumes from a callback, see {@link inScope}. */
export type RequestScope = Scope | undefined

/** The request scope of the running code. */
export function currentScope (): RequestScope {
  return current
}

/**
 * Runs `work` in `scope`: a query started from a callback that no promise carries the scope to (a pooled
 * client's checkout, called from pg-pool's own queue) still belongs to the request that asked for it.
 */
export function inScope<T> (scope: RequestScope, work: () => T): T {
  const outer = current
  current = scope
  try {
    return work()
  } finally {
    current = outer
  }
}

/** How long a CancelRequest may take before the connection stops waiting for it. */
const cancelTimeout = 2000

/** The part of Node's `ServerResponse` read here. */
export interface ClosableResponse {
  readonly writableFinished: boolean
  once: (event: 'close', listener: () => void) => unknown
}

/**
 * Runs `work` so that the PostgreSQL queries it starts (on databases opened by createDatabase) are cancelled
 * when `response` closes before it was fully sent: the client hung up.
 *
 * @example
 * ```ts
 * route.handler = async (request, reply) => await runCancellable(reply.raw, async () => await list(request))
 * ```
 */
export function runCancellable<T> (response: ClosableResponse, work: () => T): T {
  // Promise hooks slow every promise of the process: only where a pool can cancel.
  if (!cancellation) return work()
  const scope: Scope = { gone: false, running: new Set() }
  response.once('close', () => {
    if (response.writableFinished) return
    scope.gone = true
    for (const cancel of scope.running) cancel()
  })
  return inScope(scope, work)
}

/** The part of a pg `Client` read here (its backend's `processID` and `secretKey` are read with guards: untyped). */
export interface CancellableClient {
  query: (...args: never[]) => unknown
  readonly host: string
  readonly port: number
}

function integerProperty (client: object, key: string): number | undefined {
  const value: unknown = Reflect.get(client, key)
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined
}

/**
 * Sends a CancelRequest (the 16-byte message of the PostgreSQL protocol: length, 80877102, backend process id,
 * secret key) and resolves once the server has closed that connection, which it does after signalling the
 * backend, or after a bound. Hand-written: pg does the same in Client#cancel, which takes the Query object
 * that pool.query and Kysely keep to themselves, through pg's untyped Connection class.
 */
async function sendCancel (host: string, port: number, processID: number, secretKey: number): Promise<void> {
  await new Promise<void>((resolve) => {
    const packet = Buffer.alloc(16)
    packet.writeInt32BE(16, 0)
    packet.writeInt32BE(80877102, 4)
    packet.writeInt32BE(processID, 8)
    packet.writeInt32BE(secretKey, 12)
    const socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host)
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      resolve()
    }
    const timer = setTimeout(done, cancelTimeout)
    socket.once('connect', () => socket.write(packet))
    socket.once('close', done)
    socket.once('error', done)
  })
}

/**
 * Makes a pg client record which request scope's queries it runs, so that {@link runCancellable} can cancel
 * them. A CancelRequest stops whatever the backend runs when it arrives, so a client never starts another
 * query while one is on its way: a query of the next request to use the connection waits until the server
 * has taken the cancel (a backend that is idle by then ignores it), and can never be the one cancelled.
 */
export function cancelOnClientGone (client: CancellableClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown // pg's overloads, forwarded as they come
  let running = 0
  let pending: Promise<void> | undefined
  const cancel = () => {
    const processID = integerProperty(client, 'processID')
    const secretKey = integerProperty(client, 'secretKey')
    if (running === 0 || pending !== undefined || processID === undefined || secretKey === undefined) return
    pending = sendCancel(client.host, client.port, processID, secretKey).finally(() => { pending = undefined })
  }
  const run = (args: unknown[]): unknown => {
    const scope = current
    if (scope === undefined) return query(...args)
    running++
    scope.running.add(cancel)
    const settle = () => {
      running--
      if (running === 0) scope.running.delete(cancel)
    }
    const last = args[args.length - 1]
    if (typeof last === 'function') {
      const callback = last as (...results: unknown[]) => unknown // pg's callback form: (error, result)
      return query(...args.slice(0, -1), (...results: unknown[]) => {
        settle()
        return callback(...results)
      })
    }
    const result = query(...args)
    if (result instanceof Promise) result.then(settle, settle)
    else settle()
    // A request gone before its query started: cancel it as soon as it runs.
    if (scope.gone) cancel()
    return result
  }
  client.query = ((...args: unknown[]) => {
    // A submittable (a pg Query or Cursor) is returned as it is, never wrapped: pass it through.
    const submittable = typeof args[0] === 'object' && args[0] !== null && 'submit' in args[0]
    if (pending === undefined || submittable) return run(args)
    const waited = pending.then(() => run(args))
    return typeof args[args.length - 1] === 'function' ? undefined : waited
  }) as CancellableClient['query'] // the same overloads as the method it replaces
}
