import { promiseHooks } from 'node:v8'

// Which request the running code serves, so that a database can cancel the queries of a client that hung up
// (on PostgreSQL: dialect/postgres-cancel.ts). A request runs inside a scope (runCancellable); a query reads
// the scope when it starts (a pooled client's checkout keeps it until the client goes back).
//
// The generated routes carry their scope by hand: each of their queries starts synchronously inside the
// scope, and after an await they resume in it (inScope). User code in a request (an overridden handler or
// beforeWrite, a custom route) awaits where it likes, so for it the scope rides on every promise, from each
// promise to its reactions: what an AsyncLocalStorage does, with V8's promise hooks only. Those hooks are
// process-wide and slow every promise (on PostgreSQL, 2% of a LIST 10's CPU and 8% of a PATCH's), so they are
// installed only once both a database can cancel and a viewset runs user code in its requests.

/** One request's queries: what to call when its client goes away. */
export interface Scope {
  gone: boolean
  readonly running: Set<() => void>
}

const scopeKey = Symbol('fastify-viewsets.scope')
interface ScopedPromise { [scopeKey]?: Scope }
let current: Scope | undefined
let cancellation = false
let userCode = false
let hooks = false

function installHooks (): void {
  if (hooks || !cancellation || !userCode) return
  hooks = true
  promiseHooks.createHook({
    // A promise is a plain object: the scope rides on it, read by its reactions.
    init (promise) { if (current !== undefined) (promise as ScopedPromise)[scopeKey] = current },
    before (promise) { current = (promise as ScopedPromise)[scopeKey] },
    // Reactions never nest (each runs from the microtask queue): whatever runs next starts with no scope.
    after () { current = undefined },
  })
}

/** Turns request scopes on: called when createDatabase opens a PostgreSQL pool, whose clients can cancel. */
export function enableCancellation (): void {
  cancellation = true
  installHooks()
}

/**
 * Records that user code runs inside requests (an overridden handler or `beforeWrite`, a custom route): its
 * queries find their request through the promises it awaits, which takes the promise hooks.
 */
export function carryScopeThroughUserCode (): void {
  userCode = true
  installHooks()
}

/** Whether the scope rides on every promise (user code runs in requests over a database that cancels). */
export function scopeRidesOnPromises (): boolean {
  return hooks
}

/** The request scope of the running code, or `undefined`: kept across an await, see {@link inScope}. */
export type RequestScope = Scope | undefined

/** The request scope of the running code. */
export function currentScope (): RequestScope {
  return current
}

/**
 * Runs `work` in `scope`: the queries it starts synchronously belong to that request. The generated path
 * resumes in its scope after each await (the promise hooks that would carry it are off unless user code
 * runs), and a query started from a callback (a pooled client's checkout) still belongs to its request.
 *
 * @example
 * ```ts
 * const scope = currentScope()
 * const rows = await first()
 * await inScope(scope, () => second(rows))
 * ```
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

const responseScope = Symbol('fastify-viewsets.responseScope')

/** The part of Node's `ServerResponse` read here, and the scope of the request it answers. */
export interface ClosableResponse {
  readonly writableFinished: boolean
  on: (event: 'close', listener: () => void) => unknown
  [responseScope]?: Scope
}

// One listener for every response, which finds its scope on the response: `once` wrapped a new closure in two
// more objects for every request.
function closed (this: ClosableResponse): void {
  const scope = this[responseScope]
  if (scope === undefined || this.writableFinished) return
  scope.gone = true
  for (const cancel of scope.running) cancel()
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
  // Only where a pool can cancel: elsewhere a scope would only cost a listener.
  if (!cancellation) return work()
  // Nested (a handler that runs another's): one scope and one listener per response.
  let scope = response[responseScope]
  if (scope === undefined) {
    scope = { gone: false, running: new Set() }
    response[responseScope] = scope
    response.on('close', closed)
  }
  return inScope(scope, work)
}
