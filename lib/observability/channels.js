import diagnosticsChannel from 'node:diagnostics_channel';
/** The channel of each SQL statement a viewset runs. */
export const statementChannel = diagnosticsChannel.tracingChannel('fastify-viewsets:statement');
/** The channel of each viewset handler run. */
export const handlerChannel = diagnosticsChannel.tracingChannel('fastify-viewsets:handler');
/**
 * Publishes `work`'s run on `channel`: `start`, then `end` (and `error` when it throws); for a promise, `asyncStart`
 * and `asyncEnd` when it settles (after `error` when it rejects). Answers at once where `work` did (eventually.ts),
 * which TracingChannel's traceSync/tracePromise cannot both do. `settled` is called with the value before the end.
 */
export function traceEventually(channel, context, work, settled, failed) {
    // runStores publishes `start`, and runs `work` in the stores subscribers bound to it (a parent span).
    return channel.start.runStores(context, () => {
        let result;
        try {
            result = work();
        }
        catch (error) {
            context.error = error;
            failed?.(error);
            channel.error.publish(context);
            channel.end.publish(context);
            throw error;
        }
        if (!(result instanceof Promise)) {
            settled?.(result);
            channel.end.publish(context);
            return result;
        }
        context.pending = true;
        channel.end.publish(context);
        return result.then((value) => {
            settled?.(value);
            channel.asyncStart.publish(context);
            channel.asyncEnd.publish(context);
            return value;
        }, (error) => {
            context.error = error;
            failed?.(error);
            channel.error.publish(context);
            channel.asyncStart.publish(context);
            channel.asyncEnd.publish(context);
            throw error;
        });
    });
}
//# sourceMappingURL=channels.js.map