import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyReply } from 'fastify'
import { Viewset } from 'fastify-viewsets'
import type { ElementRequest, ViewsetToken } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

// A request never hangs behind a transaction: it is served from committed data within connectionTimeout,
// or answers 503 FST_VIEWSET_UNAVAILABLE with Retry-After after about connectionTimeout. SQLite has one
// connection, which a transaction holds; the servers read committed rows beside it.

const connectionTimeout = 500

/** GET runs a transaction that updates the row and then, by mistake, reads it without `trx`. */
class ForgetfulItems extends Viewset<ItemsDB, 'items', typeof Item> {
  override async getElement (request: ElementRequest<typeof Item>, _reply: FastifyReply, _token: ViewsetToken | null) {
    return await this.transaction(async (trx) => {
      await this.update(request.params.id, { description: 'uncommitted' }, trx)
      return (await this.findById(request.params.id)) ?? this.notFound(request.params.id)
    })
  }
}

async function lockingApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect, { connectionTimeout })
  await createItemsTable(database)
  await database.db.insertInto('items').values({ name: 'Bread', description: 'committed' }).execute()
  const app = testApp(t)
  await app.register(new ForgetfulItems({ db: database.db, table: 'items', schema: Item }).register(), {
    prefix: '/items',
  })
  return { app, ...database }
}

/** Asserts the answer is committed data or a 503 with Retry-After, and that it came within the bound. */
function servedOrUnavailable (
  t: TestContext,
  response: { statusCode: number; headers: Record<string, unknown>; json: () => any },
  elapsed: number
) {
  t.diagnostic(`${response.statusCode} after ${Math.round(elapsed)} ms`)
  assert.ok(elapsed < connectionTimeout + 1500, `answered after ${Math.round(elapsed)} ms`)
  if (response.statusCode === 503) {
    assert.equal(problemOf(response).code, 'FST_VIEWSET_UNAVAILABLE')
    assert.equal(response.headers['retry-after'], '1')
    return
  }
  assert.equal(response.statusCode, 200)
  return response.json()
}

for (const dialect of dialects) {
  describe(`a request beside an open transaction on ${dialect.name}`, () => {
    test(
      'a read while a 3 s write transaction is open answers within connectionTimeout, never with its rows',
      { timeout: 20_000 },
      async (t) => {
        const { app, db } = await lockingApp(t, dialect)
        let release = () => {}
        const held = new Promise<void>((resolve) => {
          release = resolve
        })
        const transaction = db.transaction().execute(async (trx) => {
          await trx.insertInto('items').values({ name: 'Uncommitted' }).execute()
          await Promise.race([held, sleep(3000)])
        })
        await sleep(50) // the transaction has begun and written
        for (const url of ['/items', '/items?limit=5']) {
          const start = performance.now()
          const body = servedOrUnavailable(t, await app.inject(url), performance.now() - start)
          if (body !== undefined) {
            assert.deepEqual(
              body.map((item: { name: string }) => item.name),
              ['Bread'],
              url
            )
          }
        }
        release()
        await transaction
        const after = await app.inject('/items')
        assert.equal(after.statusCode, 200)
        assert.deepEqual(
          after
            .json()
            .map((item: { name: string }) => item.name)
            .sort(),
          ['Bread', 'Uncommitted']
        )
      }
    )

    test(
      'findById without trx inside this.transaction() does not hang that request or later ones',
      { timeout: 20_000 },
      async (t) => {
        const { app } = await lockingApp(t, dialect)
        const start = performance.now()
        const body = servedOrUnavailable(t, await app.inject('/items/1'), performance.now() - start)
        if (body !== undefined) {
          assert.equal(body.description, 'committed', 'the read outside the transaction sees committed data only')
        }
        for (let i = 0; i < 3; i++) {
          const later = await app.inject('/items')
          assert.equal(later.statusCode, 200)
          assert.equal(later.json().length, 1)
        }
      }
    )
  })
}
