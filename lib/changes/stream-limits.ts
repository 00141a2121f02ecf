import { ViewsetErrors } from '../errors.js'

// The bounds on open change streams, per process (every viewset's streams together) and per caller: a stream holds a
// socket and a subscriber slot for as long as it lasts, so their number is bounded before the stream opens.

let open = 0
const byCaller = new Map<string, number>()

/**
 * Counts a new stream of `caller`, or throws the 503 (process full) or the 429 (caller full); returns what uncounts
 * it (idempotent).
 *
 * @example
 * ```ts
 * const release = admitStream('alice', { maxStreams: 1000, maxStreamsPerCaller: 10 })
 * reply.raw.on('close', release)
 * ```
 */
export function admitStream (
  caller: string,
  { maxStreams, maxStreamsPerCaller }: { readonly maxStreams: number, readonly maxStreamsPerCaller: number }
): () => void {
  if (open >= maxStreams) throw new ViewsetErrors.TooManyStreams()
  const callers = byCaller.get(caller) ?? 0
  if (callers >= maxStreamsPerCaller) throw new ViewsetErrors.TooManyCallerStreams()
  open += 1
  byCaller.set(caller, callers + 1)
  let released = false
  return () => {
    if (released) return
    released = true
    open -= 1
    const left = (byCaller.get(caller) ?? 1) - 1
    if (left === 0) byCaller.delete(caller)
    else byCaller.set(caller, left)
  }
}

/**
 * The streams open in the process.
 *
 * @example
 * ```ts
 * openStreams() // 0
 * ```
 */
export function openStreams (): number {
  return open
}
