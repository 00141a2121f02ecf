import { AsyncLocalStorage } from 'node:async_hooks'
import { context as otelContext, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import type { Context, Span, Tracer } from '@opentelemetry/api'
import { handlerChannel, statementChannel } from './channels.js'
import type { HandlerContext, StatementContext, StatementDialect } from './channels.js'

// fastify-viewsets/otel: the library's tracing channels (channels.ts) as OpenTelemetry spans, per the database
// semantic conventions. A handler span is a child of the span active when the handler runs (@fastify/otel's request
// span); a statement span is a child of its handler's span, found through a store bound to the handler channel, or of
// the active span outside handlers (a custom route's queries).

/**
 * What {@link instrumentViewsets} makes spans with.
 *
 * @example
 * ```ts
 * instrumentViewsets({ tracer: trace.getTracer('shop-api') })
 * ```
 */
export interface InstrumentViewsetsOptions {
  /** Default: `trace.getTracer('fastify-viewsets')` of the global tracer provider. */
  readonly tracer?: Tracer
}

const systems: Readonly<Record<StatementDialect, string>> = { sqlite: 'sqlite', postgres: 'postgresql', mysql: 'mysql' }

/** A problem `code` (`FST_VIEWSET_CONFLICT`), a driver's error code (`23505`), else the error's class name. */
function errorType (error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = 'code' in error ? error.code : undefined // Fastify's errors and the drivers' carry a string code
    if (typeof code === 'string' && code !== '') return code
    return error.constructor.name
  }
  return 'Error'
}

/** Marks a span failed by `error`: its type only, never its message, which may hold a value (a driver's detail). */
function recordError (span: Span, error: unknown): void {
  span.setAttribute('error.type', errorType(error))
  span.setStatus({ code: SpanStatusCode.ERROR })
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
export function instrumentViewsets (options: InstrumentViewsetsOptions = {}): () => void {
  const tracer = options.tracer ?? trace.getTracer('fastify-viewsets')
  const handlerSpans = new WeakMap<HandlerContext, Span>()
  const statementSpans = new WeakMap<StatementContext, Span>()
  const parents = new AsyncLocalStorage<Context>()

  handlerChannel.start.bindStore(parents, (event) => startHandlerSpan(tracer, handlerSpans, event))
  // The handler's span starts in the store bound above; the channels' `asyncStart` marks nothing spans need.
  const handlers = {
    start () {},
    asyncStart () {},
    error (context: HandlerContext) {
      const span = handlerSpans.get(context)
      const { problem } = context
      if (span !== undefined && problem !== undefined) {
        span.setAttribute('error.type', problem.code)
        if (problem.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
      }
    },
    end (context: HandlerContext) { endUnlessAsync(handlerSpans, context) },
    asyncEnd (context: HandlerContext) { endSpan(handlerSpans, context) },
  }
  const statements = {
    start (context: StatementContext) {
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
      }, parents.getStore() ?? otelContext.active())
      statementSpans.set(context, span)
    },
    error (context: StatementContext) {
      const span = statementSpans.get(context)
      if (span !== undefined) recordError(span, context.error)
    },
    asyncStart () {},
    end (context: StatementContext) { endUnlessAsync(statementSpans, context) },
    asyncEnd (context: StatementContext) { endSpan(statementSpans, context) },
  }
  handlerChannel.subscribe(handlers)
  statementChannel.subscribe(statements)
  return () => {
    handlerChannel.start.unbindStore(parents)
    handlerChannel.unsubscribe(handlers)
    statementChannel.unsubscribe(statements)
  }
}

/** The span of a handler run, started as its channel's `start` fires: the context its statements' spans nest in. */
function startHandlerSpan (
  tracer: Tracer,
  handlerSpans: WeakMap<HandlerContext, Span>,
  context: HandlerContext
): Context {
  const span = tracer.startSpan(`${context.method} ${context.viewset}`, {
    kind: SpanKind.INTERNAL,
    attributes: {
      'fastify_viewsets.viewset': context.viewset,
      'fastify_viewsets.method': context.method,
      'http.route': context.route,
    },
  }, otelContext.active())
  handlerSpans.set(context, span)
  return trace.setSpan(otelContext.active(), span)
}

/** At `end`: a synchronous run's span ends now; one that answered a promise ends at `asyncEnd`. */
function endUnlessAsync<C extends { pending?: boolean }> (spans: WeakMap<C, Span>, context: C): void {
  if (context.pending !== true) endSpan(spans, context)
}

function endSpan<C extends object> (spans: WeakMap<C, Span>, context: C): void {
  const span = spans.get(context)
  if (span === undefined) return
  spans.delete(context)
  const rows = 'rows' in context ? context.rows : undefined // a statement's context carries its rows at the end
  if (typeof rows === 'number') span.setAttribute('db.response.returned_rows', rows)
  span.end()
}
