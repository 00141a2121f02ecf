import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { test } from 'node:test'
import { currentCancellation, enableCancellation, runWithCancellation } from '../../lib/execution/cancellation.js'
import type { ClosableResponse, RequestCancellation } from '../../lib/execution/cancellation.js'

// A response that closes is a client that hung up only while the server has not ended it (execution/cancellation.ts).
// app.inject closes its responses before they count as finished, and a real client may leave before the last byte:
// a query still running then is background work the request started (a replica's health check,
// data/read-routing.ts), which a cancel would turn into a replica marked down (read-replica.test.ts failed so, now
// and then).

class FakeResponse extends EventEmitter implements ClosableResponse {
  writableEnded = false
}

function serve (response: FakeResponse): { context: RequestCancellation, cancels: () => number } {
  let cancelled = 0
  const context = runWithCancellation(response, () => currentCancellation())
  assert.ok(context !== undefined)
  context.running.add(() => { cancelled++ })
  return { context, cancels: () => cancelled }
}

enableCancellation()

test('a response closed after the server ended it cancels nothing', () => {
  const response = new FakeResponse()
  const { context, cancels } = serve(response)
  response.writableEnded = true
  response.emit('close')
  assert.equal(context.gone, false)
  assert.equal(cancels(), 0)
})

test('a response closed before the server ended it cancels what its request runs', () => {
  const response = new FakeResponse()
  const { context, cancels } = serve(response)
  response.emit('close')
  assert.equal(context.gone, true)
  assert.equal(cancels(), 1)
})
