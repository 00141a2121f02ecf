import { strict as assert } from 'node:assert'
import diagnosticsChannel from 'node:diagnostics_channel'
import type { TestContext } from 'node:test'
import type { BulkheadEvent } from '../../lib/observability/channels.js'

/** The bulkhead's events published while the test runs (`fastify-viewsets:bulkhead`), in order. */
export function bulkheadEvents (t: TestContext): BulkheadEvent[] {
  const events: BulkheadEvent[] = []
  const listener = (message: unknown) => { events.push(message as BulkheadEvent) } // the channel's one message type
  diagnosticsChannel.subscribe('fastify-viewsets:bulkhead', listener)
  t.after(() => diagnosticsChannel.unsubscribe('fastify-viewsets:bulkhead', listener))
  return events
}

/** Waits until the bulkhead published `count` events of a kind; fails after 10 s (a request that never queued). */
export async function published (events: BulkheadEvent[], kind: BulkheadEvent['event'], count: number): Promise<void> {
  const start = Date.now()
  while (events.filter((event) => event.event === kind).length < count) {
    assert.ok(Date.now() - start < 10_000, `no ${kind} event: ${JSON.stringify(events)}`)
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
}
