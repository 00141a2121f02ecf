import Fastify from 'fastify'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type { TestContext } from 'node:test'

/** A Fastify app that the test closes when it ends. */
export function testApp (t: TestContext, options: FastifyServerOptions = {}): FastifyInstance {
  const app = Fastify({ logger: false, ...options })
  t.after(() => app.close())
  return app
}

/** Asserts the parts every problem+json body has, and returns it. */
export function problemOf (response: { headers: Record<string, unknown>; json: () => any }): {
  type: string
  title: string
  status: number
  detail: string
  code: string
  errors?: Array<{ in: string; field: string; message: string }>
} {
  const contentType = String(response.headers['content-type'])
  if (!contentType.startsWith('application/problem+json')) {
    throw new Error(`expected application/problem+json, got ${contentType}`)
  }
  return response.json()
}
