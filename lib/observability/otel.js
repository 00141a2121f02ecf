import { AsyncLocalStorage } from 'node:async_hooks';
import { context as otelContext, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { handlerChannel, statementChannel } from './channels.js';
const systems = { sqlite: 'sqlite', postgres: 'postgresql', mysql: 'mysql' };
/** A problem `code` (`FST_VIEWSET_CONFLICT`), a driver's error code (`23505`), else the error's class name. */
function errorType(error) {
    if (typeof error === 'object' && error !== null) {
        const { code } = error; // Fastify's errors and the drivers' carry a string code
        if (typeof code === 'string' && code !== '')
            return code;
        return error.constructor.name;
    }
    return 'Error';
}
/** Marks a span failed by `error`: its type only, never its message, which may hold a value (a driver's detail). */
function recordError(span, error) {
    span.setAttribute('error.type', errorType(error));
    span.setStatus({ code: SpanStatusCode.ERROR });
}
/**
 * Subscribes to the `fastify-viewsets:handler` and `fastify-viewsets:statement` channels and turns each event into an
 * OpenTelemetry span: `LIST items` for a handler run (`fastify_viewsets.viewset`, `fastify_viewsets.method`,
 * `http.route`, `error.type` with the problem code), `SELECT items` for a statement (`db.system.name`,
 * `db.collection.name`, `db.operation.name`, `db.query.text` with placeholders, never values,
 * `db.response.returned_rows`, `fastify_viewsets.prepared`). Returns the function that unsubscribes.
 *
 * @example
 * ```ts
 * import FastifyOtelInstrumentation from '@fastify/otel'
 * import { instrumentViewsets } from 'fastify-viewsets/otel'
 * const stop = instrumentViewsets()
 * ```
 */
export function instrumentViewsets(options = {}) {
    const tracer = options.tracer ?? trace.getTracer('fastify-viewsets');
    const handlerSpans = new WeakMap();
    const statementSpans = new WeakMap();
    const parents = new AsyncLocalStorage();
    handlerChannel.start.bindStore(parents, (event) => {
        const context = event; // the handler channel publishes HandlerContext only
        const span = tracer.startSpan(`${context.method} ${context.viewset}`, {
            kind: SpanKind.INTERNAL,
            attributes: {
                'fastify_viewsets.viewset': context.viewset,
                'fastify_viewsets.method': context.method,
                'http.route': context.route,
            },
        }, otelContext.active());
        handlerSpans.set(context, span);
        return trace.setSpan(otelContext.active(), span);
    });
    // The handler's span starts in the store bound above; the channels' `asyncStart` marks nothing spans need.
    const handlers = {
        start() { },
        asyncStart() { },
        error(context) {
            const span = handlerSpans.get(context);
            const { problem } = context;
            if (span !== undefined && problem !== undefined) {
                span.setAttribute('error.type', problem.code);
                if (problem.status >= 500)
                    span.setStatus({ code: SpanStatusCode.ERROR });
            }
        },
        end(context) { endUnlessAsync(handlerSpans, context); },
        asyncEnd(context) { endSpan(handlerSpans, context); },
    };
    const statements = {
        start(context) {
            const span = tracer.startSpan(`${context.operation.toUpperCase()} ${context.table ?? ''}`.trim(), {
                kind: SpanKind.CLIENT,
                startTime: context.startTime,
                attributes: {
                    'db.system.name': systems[context.dialect],
                    'db.operation.name': context.operation.toUpperCase(),
                    'db.query.text': context.sql,
                    'fastify_viewsets.prepared': context.prepared,
                    ...(context.table === undefined ? {} : { 'db.collection.name': context.table }),
                },
            }, parents.getStore() ?? otelContext.active());
            statementSpans.set(context, span);
        },
        error(context) {
            const span = statementSpans.get(context);
            if (span !== undefined)
                recordError(span, context.error);
        },
        asyncStart() { },
        end(context) { endUnlessAsync(statementSpans, context); },
        asyncEnd(context) { endSpan(statementSpans, context); },
    };
    handlerChannel.subscribe(handlers);
    statementChannel.subscribe(statements);
    return () => {
        handlerChannel.start.unbindStore(parents);
        handlerChannel.unsubscribe(handlers);
        statementChannel.unsubscribe(statements);
    };
}
/** At `end`: a synchronous run's span ends now; one that answered a promise ends at `asyncEnd`. */
function endUnlessAsync(spans, context) {
    if (context.pending !== true)
        endSpan(spans, context);
}
function endSpan(spans, context) {
    const span = spans.get(context);
    if (span === undefined)
        return;
    spans.delete(context);
    const { rows } = context; // a statement's context carries its rows at the end
    if (typeof rows === 'number')
        span.setAttribute('db.response.returned_rows', rows);
    span.end();
}
//# sourceMappingURL=otel.js.map