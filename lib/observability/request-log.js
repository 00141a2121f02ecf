import fp from 'fastify-plugin';
import { handlerChannel } from './channels.js';
import { countStatements } from './request-statements.js';
/** Binds the handler run's fields to its request's logger, which Fastify's completion line is written with. */
function annotate(context) {
    const { request, reply, problem } = context;
    const bindings = {
        viewset: context.viewset,
        viewsetMethod: context.method,
        statements: context.statements ?? 0,
    };
    // A 5xx says which kind of database fault it was (never the driver's text, which may hold values).
    if (problem !== undefined && problem.status >= 500)
        bindings.dbFault = problem.fault ?? 'none';
    const log = request.log.child(bindings) // Fastify's request and reply both carry `log`
    ;
    request.log = log // the completion line is written with the reply's logger, errors with the request's
    ;
    reply.log = log; // as above
}
const logging = {
    start() { },
    end(context) {
        if (context.pending !== true)
            annotate(context);
    },
    asyncStart() { },
    asyncEnd: annotate,
    error() { },
};
let apps = 0;
/**
 * Adds `viewset`, `viewsetMethod` and `statements` (how many SQL statements it ran) to the log lines of each request a
 * viewset answers, Fastify's `request completed` line included; a request answered 5xx also gets `dbFault`, the kind of
 * database fault (`unavailable`, `timeout`, ..., or `none`), never SQL, values or driver text. Register it once, on
 * the root instance: it annotates every viewset of the process's applications while one of them has it.
 *
 * @example
 * ```ts
 * const app = Fastify({ logger: true })
 * await app.register(viewsetLogs)
 * // {"reqId":"req-1","viewset":"items","viewsetMethod":"LIST","statements":2,"msg":"request completed",...}
 * ```
 */
export const viewsetLogs = fp(async function viewsetLogs(fastify) {
    const stopCounting = countStatements();
    if (apps++ === 0)
        handlerChannel.subscribe(logging);
    fastify.addHook('onClose', async () => {
        stopCounting();
        if (--apps === 0)
            handlerChannel.unsubscribe(logging);
    });
}, { fastify: '5.x', name: 'fastify-viewsets-logs' });
//# sourceMappingURL=request-log.js.map