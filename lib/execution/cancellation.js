import { promiseHooks } from 'node:v8';
const cancellationKey = Symbol('fastify-viewsets.cancellation');
let current;
let cancellable = false;
let userCode = false;
let hooks = false;
function installHooks() {
    if (hooks || !cancellable || !userCode)
        return;
    hooks = true;
    promiseHooks.createHook({
        // A promise is a plain object: the context rides on it, read by its reactions.
        init(promise) { if (current !== undefined)
            promise[cancellationKey] = current; },
        before(promise) { current = promise[cancellationKey]; },
        // Reactions never nest (each runs from the microtask queue): whatever runs next starts with no context.
        after() { current = undefined; },
    });
}
/** Turns cancellation contexts on: called when createDatabase opens a PostgreSQL pool, whose clients can cancel. */
export function enableCancellation() {
    cancellable = true;
    installHooks();
}
/**
 * Records that user code runs inside requests (an overridden handler or `beforeWrite`, a custom route): its
 * queries find their request through the promises it awaits, which takes the promise hooks.
 */
export function carryCancellationThroughUserCode() {
    userCode = true;
    installHooks();
}
/** Whether the cancellation context rides on every promise (user code runs in requests, and a database cancels). */
export function cancellationRidesOnPromises() {
    return hooks;
}
/** The cancellation context of the running code. */
export function currentCancellation() {
    return current;
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
export function withCancellation(context, work) {
    const outer = current;
    current = context;
    try {
        return work();
    }
    finally {
        current = outer;
    }
}
const responseCancellation = Symbol('fastify-viewsets.responseCancellation');
// One listener for every response, which finds its cancellation on the response: `once` wrapped a new closure in two
// more objects for every request.
function closed() {
    const cancellation = this[responseCancellation];
    if (cancellation === undefined || this.writableFinished)
        return;
    cancellation.gone = true;
    for (const cancel of cancellation.running)
        cancel();
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
export function runWithCancellation(response, work) {
    // Only where a pool can cancel: elsewhere a context would only cost a listener.
    if (!cancellable)
        return work();
    // Nested (a handler that runs another's): one context and one listener per response.
    let context = response[responseCancellation];
    if (context === undefined) {
        context = { gone: false, running: new Set() };
        response[responseCancellation] = context;
        response.on('close', closed);
    }
    return withCancellation(context, work);
}
//# sourceMappingURL=cancellation.js.map