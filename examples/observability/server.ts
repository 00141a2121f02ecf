import { ConsoleSpanExporter } from '@opentelemetry/sdk-trace-base'
import { serve } from '../shared.js'
import { build } from './app.js'

// Spans print to the console as they finish; scrape /metrics, probe /ready.
await serve(
  async (options) => await build({ ...options, spanExporter: new ConsoleSpanExporter() }),
  (origin) => `metrics: ${origin}/metrics, readiness: ${origin}/ready`
)
