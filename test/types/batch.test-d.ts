// Type tests of the atomic batch (issue 38 item 3): `npm run test:types` compiles this file. Each @ts-expect-error
// must be an error.
import { expectTypeOf } from 'expect-type'
import type { FastifyPluginAsync } from 'fastify'
import { viewsetBatch } from 'fastify-viewsets'
import type { ViewsetBatchOptions } from 'fastify-viewsets'

// a plugin the app registers; its options are optional
expectTypeOf(viewsetBatch()).toEqualTypeOf<FastifyPluginAsync>()
expectTypeOf(viewsetBatch({ maxOperations: 50 })).toEqualTypeOf<FastifyPluginAsync>()
expectTypeOf<ViewsetBatchOptions['maxOperations']>().toEqualTypeOf<number | undefined>()

// @ts-expect-error an unknown key: idempotency is the next option, not one yet
void viewsetBatch({ idempotency: true })
// @ts-expect-error maxOperations is a number
void viewsetBatch({ maxOperations: '50' })
