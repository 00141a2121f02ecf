import { promiseHooks } from 'node:v8'

// Which request the running code serves, so that a database can cancel the queries of a client that hung up
// (on PostgreSQL: dialect/postgres/postgres-cancel.ts). A request runs inside its cancellation context
// (runWithCancellation); a query reads the context when it starts (a pooled client's checkout keeps it until the
// client goes back).
//
// The generated routes carry their context by hand: each of their queries starts synchronously inside it, and
// after an await they resume in it (withCancellation). User code in a request (an overridden handler or
// beforeWrite, a custom route) awaits where it likes, so for it the context rides on every promise, from each
// promise to its reactions: what an AsyncLocalStorage does, with V8's promise hooks only. Those hooks are
// process-wide and slow every promise (see benchmarks/analysis.md#cancellation-hooks), so they are
// installed only once both a database can cancel and a viewset runs user code in its requests. How this meets
// answers that come back synchronously: the contract in eventually.ts (4).

/** One request's queries: what to call when its client goes away. */
export interface RequestCancellation {
  gone: boolean
  readonly running: Set<() => void>
}

const cancellationKey = Symbol('fastify-viewsets.cancellation')
/** A promise is a plain object: the context rides on it as an optional property, read by its reactions. */
interface CarryingPromise extends Promise<unknown> { [cancellationKey]?: RequestCancellation }
let current: RequestCancellation | undefined
let cancellable = false
let userCode = false
let hooks = false

function installHooks (): void {
  if (hooks || !cancellable || !userCode) return
  hooks = true
  promiseHooks.createHook({
    init (promise: CarryingPromise) { if (current !== undefined) promise[cancellationKey] = current },
    before (promise: CarryingPromise) { current = promise[cancellationKey] },
    // Reactions never nest (each runs from the microtask queue): whatever runs next starts with no context.
    after () { current = undefined },
  })
}

/** Turns cancellation contexts on: called when createDatabase opens a PostgreSQL pool, whose clients can cancel. */
export function enableCancellation (): void {
  cancellable = true
  installHooks()
}

/**
 * Records that user code runs inside requests (an overridden handler or `beforeWrite`, a custom route): its
 * queries find their request through the promises it awaits, which takes the promise hooks.
 */
export function carryCancellationThroughUserCode (): void {
  userCode = true
  installHooks()
}

/** Whether the cancellation context rides on every promise (user code runs in requests, and a database cancels). */
export function cancellationRidesOnPromises (): boolean {
  return hooks
}

/** The cancellation context of the running code, or `undefined`: kept across an await, see {@link withCancellation}. */
export type CancellationContext = RequestCancellation | undefined

/** The cancellation context of the running code. */
export function currentCancellation (): CancellationContext {
  return current
}

/**
 * Runs `work` in `context`: the queries it starts synchronously belong to that request. The generated path
 * resumes in its context after each await (the promise hooks that would carry it are off unless user code
 * runs), and a query started from a callback (a pooled client's checkout) still belongs to its request.
 *
 * @example
 * ```ts
 * const context = currentCancellation()
 * const rows = await first()
 * await withCancellation(context, () => second(rows))
 * ```
 */
export function withCancellation<T> (context: CancellationContext, work: () => T): T {
  const outer = current
  current = context
  try {
    return work()
  } finally {
    current = outer
  }
}

const responseCancellation = Symbol('fastify-viewsets.responseCancellation')

/** The part of Node's `ServerResponse` read here, and the cancellation of the request it answers. */
export interface ClosableResponse {
  readonly writableEnded: boolean
  on: (event: 'close', listener: () => void) => unknown
  [responseCancellation]?: RequestCancellation
}

// One listener for every response, which finds its cancellation on the response: `once` wrapped a new closure in two
// more objects for every request. A response the server ended was answered: whatever still runs in its context is
// background work (a replica's health check), not the request's, even when the client leaves before the last byte
// (and app.inject closes its responses before they count as finished).
function closed (this: ClosableResponse): void {
  const cancellation = this[responseCancellation]
  if (cancellation === undefined || this.writableEnded) return
  cancellation.gone = true
  for (const cancel of cancellation.running) cancel()
}

/**
 * Runs `work` so that the PostgreSQL queries it starts (on databases opened by createDatabase) are cancelled
 * when `response` closes before it was fully sent: the client hung up.
 *
 * @example
 * ```ts
 * route.handler = async (request, reply) => await runWithCancellation(reply.raw, async () => await list(request))
 * ```
 */
export function runWithCancellation<T> (response: ClosableResponse, work: () => T): T {
  // Only where a pool can cancel: elsewhere a context would only cost a listener.
  if (!cancellable) return work()
  // Nested (a handler that runs another's): one context and one listener per response.
  let context = response[responseCancellation]
  if (context === undefined) {
    context = { gone: false, running: new Set() }
    response[responseCancellation] = context
    response.on('close', closed)
  }
  return withCancellation(context, work)
}
