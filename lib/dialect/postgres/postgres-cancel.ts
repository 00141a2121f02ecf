import { connect } from 'node:net'
import { currentCancellation } from '../../execution/cancellation.js'
import type { CancellationContext, RequestCancellation } from '../../execution/cancellation.js'
import { replaceMethod } from '../shared/replace-method.js'

// Cancelling the PostgreSQL query of a request whose client went away. A request runs inside its cancellation context
// (runWithCancellation, execution/cancellation.ts); each pg client of a pool opened by createDatabase records which
// context's query it is running (queryCancellation): the context its checkout was asked for in
// (carryCancellationToCheckouts), else the one its query starts in. Kysely asks for a checkout synchronously from
// `execute()` or `transaction()`, then awaits: its queries would start with no context unless the promise hooks carried
// it. When the response closes before it was sent, the queries still running for that context get a CancelRequest on a
// separate connection, the way `pg` cancels (Client#cancel, which needs the Query object that pool.query and Kysely
// keep to themselves). The answer is 57014, a 503 FST_VIEWSET_TIMEOUT nobody reads, and the connection goes back to the
// pool healthy.

// The request each checked-out client was asked for in, set at every checkout (so never a past one's), on
// the client itself: a WeakMap cost an ephemeron write barrier per query.
const checkoutCancellation = Symbol('fastify-viewsets.checkoutCancellation')

/** A pg client, with the context of its checkout. */
export interface CheckedOutClient { [checkoutCancellation]?: CancellationContext }

/** The part of a pg `Pool` whose checkouts carry a cancellation context: `connect`, callback and promise forms. */
export interface CheckoutPool {
  connect: (...args: never[]) => unknown
}

/** Sets the context of a checkout on the client pg-pool answered it with, if it is an object. */
function markCheckout (client: unknown, context: CancellationContext): void {
  if (typeof client === 'object' && client !== null) Reflect.set(client, checkoutCancellation, context)
}

/**
 * Makes each client of `pool` belong, until its next checkout, to the cancellation context that asked for it, whoever
 * releases it first and whatever awaits come between (Kysely's driver awaits the checkout, then the query).
 */
export function carryCancellationToCheckouts (pool: CheckoutPool): void {
  replaceMethod(pool, 'connect', (connect) => (callback) => {
    const context = currentCancellation()
    // pg-pool's callback form: (error, client, release)
    if (typeof callback === 'function') {
      connect((error: unknown, client: unknown, release: unknown) => {
        markCheckout(client, context)
        callback(error, client, release)
      })
      return undefined
    }
    return new Promise((resolve, reject) => {
      connect((error: unknown, client: unknown) => {
        if (client === undefined) {
          reject(error ?? new Error('pg-pool answered a checkout without a client'))
          return
        }
        markCheckout(client, context)
        resolve(client)
      })
    })
  })
}

/** How long a CancelRequest may take before the connection stops waiting for it. */
const cancelTimeout = 2000

/** The part of a pg `Client` read here (its backend's `processID` and `secretKey` are read with guards: untyped). */
export interface CancellableClient extends CheckedOutClient {
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

/** A client's queries as cancellation sees them (see {@link queryCancellation}). */
export interface QueryCancellation {
  /** A CancelRequest on its way: the client's next query waits for it. */
  readonly pending: () => Promise<void> | undefined
  /** Records a query starting: the request it belongs to, or `undefined` outside any. */
  readonly start: () => RequestCancellation | undefined
  /** Records that a query of `context` settled. */
  readonly settle: (context: RequestCancellation) => void
  /** Cancels the running query of a request already gone when it started. */
  readonly cancelIfGone: (context: RequestCancellation) => void
}

/** For a pool whose server cannot cancel (or with `cancelOnDisconnect: false`): no query is ever tracked. */
export const noCancellation: QueryCancellation = {
  pending: () => undefined,
  start: () => undefined,
  settle: () => {},
  cancelIfGone: () => {},
}

/**
 * Tracks which cancellation context's queries a pg client runs (the query wrapper of postgres-client-query.ts
 * calls it), so that `runWithCancellation` can cancel them. A CancelRequest stops whatever the backend runs
 * when it arrives, so a client never starts another query while one is on its way: a query of the next
 * request to use the connection waits until the server has taken the cancel (a backend that is idle by then
 * ignores it), and can never be the one cancelled.
 *
 * @example
 * ```ts
 * const cancellation = queryCancellation(client)
 * const context = cancellation.start()
 * client.query(text, values, (error, result) => { if (context) cancellation.settle(context); done(error, result) })
 * ```
 */
export function queryCancellation (client: CancellableClient): QueryCancellation {
  client[checkoutCancellation] = undefined // declared before the first checkout: one shape for the client's life
  let running = 0
  let pending: Promise<void> | undefined
  const cancel = () => {
    const processID = integerProperty(client, 'processID')
    const secretKey = integerProperty(client, 'secretKey')
    if (running === 0 || pending !== undefined || processID === undefined || secretKey === undefined) return
    pending = sendCancel(client.host, client.port, processID, secretKey).finally(() => { pending = undefined })
  }
  return {
    pending: () => pending,
    start: () => {
      // The checkout's first: a checkout answered from another request's release runs in that request's context.
      const context = client[checkoutCancellation] ?? currentCancellation()
      if (context === undefined) return undefined
      running++
      context.running.add(cancel)
      return context
    },
    settle: (context) => {
      running--
      if (running === 0) context.running.delete(cancel)
    },
    cancelIfGone: (context) => {
      if (context.gone) cancel()
    },
  }
}
