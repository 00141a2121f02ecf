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

// idempotency: as the viewset option, true or { table, createTable, retention, lease }; nothing else
void viewsetBatch({ idempotency: true })
void viewsetBatch({ idempotency: { table: 'keys', createTable: true, retention: 60_000, lease: 5_000 } })
// @ts-expect-error an unknown key of the idempotency options
void viewsetBatch({ idempotency: { tabel: 'keys' } })
// @ts-expect-error lease is milliseconds, a number
void viewsetBatch({ idempotency: { lease: '1m' } })
// @ts-expect-error maxOperations is a number
void viewsetBatch({ maxOperations: '50' })
