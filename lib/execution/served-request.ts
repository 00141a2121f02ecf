import { AsyncLocalStorage } from 'node:async_hooks'
import type { FastifyRequest } from 'fastify'

// Which request the running user code serves (an overridden handler, `beforeWrite`, a custom route), so that a
// viewset's helpers (`this.query()`, `this.findById()` …) apply that request's row rule without being told. Carried
// by an AsyncLocalStorage, which follows timers and callbacks as well as promises: a helper that lost its request
// would have to refuse, never run open. An active storage slows every promise of the process, so requests are
// recorded only once a viewset with a row rule is mounted (see benchmarks/analysis.md#served-request).

const served = new AsyncLocalStorage<FastifyRequest>()
let recording = false

/** Starts recording which request user code serves: called when a viewset with a row rule is mounted. */
export function recordServedRequests (): void {
  recording = true
}

/**
 * Runs `work` (user code serving `request`) so that the helpers it calls, at once or after any await, find
 * `request`; runs it as it is while no viewset has a row rule.
 *
 * @example
 * ```ts
 * route.handler = (request, reply) => serving(request, () => handler(request, reply))
 * ```
 */
export function serving<T> (request: FastifyRequest, work: () => T): T {
  return recording ? served.run(request, work) : work()
}

/** The request the running code serves, or `undefined` outside any (a script, a job, a hook of the app's). */
export function servedRequest (): FastifyRequest | undefined {
  return served.getStore()
}
