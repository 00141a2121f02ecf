import { AsyncLocalStorage } from 'node:async_hooks';
import { handlerChannel, statementChannel } from './channels.js';
// The statements of each handler run: counted, and their time summed, on the handler's context (`statements`,
// `statementTime`), for the request log, the metrics and Server-Timing. A statement finds its handler through a store
// bound to the handler channel, so this costs nothing until a consumer asks for it.
const running = new AsyncLocalStorage();
let consumers = 0;
function finished(context) {
    const handler = running.getStore();
    if (handler === undefined)
        return;
    handler.statementTime = (handler.statementTime ?? 0) + performance.now() - context.startTime;
}
const counting = {
    start() {
        const handler = running.getStore();
        if (handler !== undefined)
            handler.statements = (handler.statements ?? 0) + 1;
    },
    end(context) {
        if (context.pending !== true)
            finished(context);
    },
    asyncStart() { },
    asyncEnd: finished,
    error() { },
};
/**
 * Counts the statements of each handler run on its context from now on, until the returned function is called (by
 * each caller: the counting stops after the last one).
 *
 * @example
 * ```ts
 * const stop = countStatements()
 * fastify.addHook('onClose', async () => { stop() })
 * ```
 */
export function countStatements() {
    if (consumers++ === 0) {
        handlerChannel.start.bindStore(running);
        statementChannel.subscribe(counting);
    }
    let stopped = false;
    return () => {
        if (stopped)
            return;
        stopped = true;
        if (--consumers === 0) {
            handlerChannel.start.unbindStore(running);
            statementChannel.unsubscribe(counting);
        }
    };
}
//# sourceMappingURL=request-statements.js.map