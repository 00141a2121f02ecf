import { request } from 'node:http'
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'

// A Server-Sent Events client for the tests, over a real socket: the WHATWG parsing rules that matter here (events
// split by a blank line, `event:`, `id:`, `data:` fields, comments ignored, an `id:` without data still moves the
// last event id).

export interface SseEvent {
  event: string
  id: string | undefined
  data: string
}

export interface SseStream {
  status: number
  headers: IncomingHttpHeaders
  /** The problem body of a refused stream. */
  body: string
  /** The id a reconnection would send as Last-Event-ID. */
  lastEventId: string
  /** The next event (waits for it); rejects when the stream ends first. */
  next(): Promise<SseEvent>
  /** Resolves when the server ends the stream (or the socket closes). */
  ended: Promise<void>
  /** Stops reading (the socket stays open: a slow client). */
  pause(): void
  /** Reads again. */
  resume(): void
  close(): void
}

export function openSse (url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false })
    outgoing.on('error', reject)
    outgoing.on('response', (response: IncomingMessage) => {
      response.setEncoding('utf8')
      const queue: SseEvent[] = []
      const waiting: Array<{ resolve: (event: SseEvent) => void, reject: (error: Error) => void }> = []
      let buffer = ''
      let body = ''
      let finished = false
      let endedResolve: () => void = () => {}
      const ended = new Promise<void>((resolve) => { endedResolve = resolve })
      const stream: SseStream = {
        status: response.statusCode ?? 0,
        headers: response.headers,
        body: '',
        lastEventId: '',
        next () {
          const event = queue.shift()
          if (event !== undefined) return Promise.resolve(event)
          if (finished) return Promise.reject(new Error('the stream ended'))
          return new Promise((resolve, reject) => { waiting.push({ resolve, reject }) })
        },
        ended,
        pause () { response.pause() },
        resume () { response.resume() },
        close () { outgoing.destroy() },
      }
      const dispatch = (text: string) => {
        let event = 'message'
        let data: string[] | undefined
        let id: string | undefined
        for (const line of text.split('\n')) {
          if (line === '' || line.startsWith(':')) continue
          const colon = line.indexOf(':')
          const field = colon === -1 ? line : line.slice(0, colon)
          const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
          if (field === 'event') event = value
          else if (field === 'data') (data ??= []).push(value)
          else if (field === 'id') id = value
        }
        if (id !== undefined) stream.lastEventId = id
        if (data === undefined) return
        const parsed = { event, id: id ?? stream.lastEventId, data: data.join('\n') }
        const waiter = waiting.shift()
        if (waiter === undefined) queue.push(parsed)
        else waiter.resolve(parsed)
      }
      const finish = () => {
        if (finished) return
        finished = true
        for (const waiter of waiting.splice(0)) waiter.reject(new Error('the stream ended'))
        endedResolve()
      }
      response.on('data', (chunk: string) => {
        if (stream.status !== 200) {
          body += chunk
          stream.body = body
          return
        }
        buffer += chunk
        let at = buffer.indexOf('\n\n')
        while (at !== -1) {
          dispatch(buffer.slice(0, at))
          buffer = buffer.slice(at + 2)
          at = buffer.indexOf('\n\n')
        }
      })
      response.on('end', finish)
      response.on('close', finish)
      response.on('error', finish)
      if (stream.status !== 200) response.on('end', () => { resolve(stream) })
      else resolve(stream)
    })
    outgoing.end()
  })
}
