import assert from 'node:assert/strict'
import { get } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import { setTimeout } from 'node:timers/promises'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { ExpressionBuilder, SqlBool } from 'kysely'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { createDatabase, Viewset } from 'fastify-viewsets'
import type { CreateDatabaseOptions, ListRequest, RowContext, ScopedMethod, ViewsetToken } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { taggedPool, untilSeen } from '../helpers/pg-activity.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

/** A statement that runs for `seconds`, in each server's spelling (raw SQL: the timeout bounds it too). */
function sleep (dialect: TestDialect['name'], seconds: number) {
  return dialect === 'postgres' ? sql`select pg_sleep(${seconds})` : sql`select sleep(${seconds})`
}

/**
 * A viewset whose LIST with `?slow=1`, and whose custom route `/slow`, run a 3 s statement before answering;
 * with `?sleepy=1` the LIST's own statement (precompiled, run on the pool directly) takes 3 s.
 */
function slowItems (dialect: TestDialect['name']) {
  return class SlowItems extends Viewset<ItemsDB, 'items', typeof Item> {
    static override listQuery = Type.Object({
      slow: Type.Optional(Type.String()),
      sleepy: Type.Optional(Type.String()),
    })

    override async list (request: ListRequest<{ slow?: string }>, reply: FastifyReply, token: ViewsetToken | null) {
      if (request.query.slow !== undefined) await sleep(dialect, 3).execute(this.db)
      return await super.list(request, reply, token)
    }

    override scope (_eb: ExpressionBuilder<ItemsDB, 'items'>, { request, method }: RowContext<ScopedMethod>) {
      const query = request.query as { sleepy?: string } // LIST's validated query string (listQuery above)
      if (method !== 'LIST' || query.sleepy === undefined) return undefined
      return dialect === 'postgres' ? sql<SqlBool>`(select true from pg_sleep(3))` : sql<SqlBool>`(select sleep(3) = 0)`
    }

    override customRoutes (fastify: FastifyInstance) {
      fastify.get('/slow', async () => {
        await sleep(dialect, 3).execute(this.db)
        return { slept: true }
      })
    }
  }
}

async function slowApp (t: TestContext, dialect: TestDialect, options: CreateDatabaseOptions) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  await database.db.insertInto('items').values({ name: 'Bread' }).execute()
  const db = createDatabase<ItemsDB>(database.url, options)
  t.after(() => db.destroy())
  const app = testApp(t)
  await app.register(new (slowItems(dialect.name))({ db, table: 'items', schema: Item, withoutTokens: true }).register(), {
    prefix: '/items',
  })
  return { app, db }
}

for (const dialect of dialects.filter((candidate) => candidate.name !== 'sqlite')) {
  describe(`statementTimeout on ${dialect.name}`, () => {
    test('a statement past the bound answers 503 FST_VIEWSET_TIMEOUT with Retry-After, and the pool stays healthy', async (t) => {
      const { app } = await slowApp(t, dialect, { statementTimeout: 300, poolSize: 1 })
      const start = performance.now()
      const slow = await app.inject('/items?slow=1')
      const elapsed = performance.now() - start
      assert.equal(slow.statusCode, 503)
      assert.equal(slow.headers['retry-after'], '1')
      assert.equal(problemOf(slow).code, 'FST_VIEWSET_TIMEOUT')
      assert.ok(elapsed < 2000, `answered after ${Math.round(elapsed)} ms, not after the 3 s statement`)
      t.diagnostic(`503 after ${Math.round(elapsed)} ms with statementTimeout 300`)
      // One connection only: the next request reuses the one whose statement was stopped.
      const next = await app.inject('/items')
      assert.equal(next.statusCode, 200)
      assert.deepEqual(
        next.json().map((item: { name: string }) => item.name),
        ['Bread']
      )
    })

    test('the bound covers raw SQL on the instance, and 0 leaves statements unbounded by it', async (t) => {
      const { db } = await slowApp(t, dialect, { statementTimeout: 200 })
      await assert.rejects(sleep(dialect.name, 1).execute(db))
      const database = await testDatabase(t, dialect)
      const unbounded = createDatabase<ItemsDB>(database.url, { statementTimeout: 0 })
      t.after(() => unbounded.destroy())
      await sleep(dialect.name, 0.4).execute(unbounded)
    })
  })
}

const postgres = dialects.find((dialect) => dialect.name === 'postgres')
if (postgres !== undefined) {
  /**
   * A server over its own pool of one connection, tagged with an application name, and a client whose
   * request to `path` is running a 3 s statement; `sleeping()` counts that statement in pg_stat_activity.
   */
  const slowRequest = async (t: TestContext, path: string, options: { cancelOnDisconnect?: boolean } = {}) => {
    const database = await testDatabase(t, postgres)
    await createItemsTable(database)
    await database.db.insertInto('items').values({ name: 'Bread' }).execute()
    const { db, active } = taggedPool<ItemsDB>(t, database, { poolSize: 1, ...options })
    const app = testApp(t)
    await app.register(new (slowItems('postgres'))({ db, table: 'items', schema: Item, withoutTokens: true }).register(), {
      prefix: '/items',
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const sleeping = async () => await active(sql<SqlBool>`query like '%pg_sleep%'`)
    const request = get({ host: '127.0.0.1', port, path })
    request.on('error', () => {})
    assert.equal(await untilSeen(sleeping, 50), 1, 'the 3 s statement is running')
    return { app, request, sleeping }
  }

  describe('client disconnect on postgres', () => {
    for (const [what, path] of [
      ['LIST', '/items?slow=1'],
      ['a custom route', '/items/slow'],
      ['a LIST statement run on the pool directly', '/items?sleepy=1'],
    ] as const) {
      test(
        `the query serving a client that hung up is cancelled (${what}), and the connection serves the next request`,
        { timeout: 20_000 },
        async (t) => {
          const { app, request, sleeping } = await slowRequest(t, path)
          const hungUp = performance.now()
          request.destroy()
          while ((await sleeping()) > 0 && performance.now() - hungUp < 5000) await setTimeout(20)
          const cancelledAfter = performance.now() - hungUp
          t.diagnostic(`statement gone from pg_stat_activity ${Math.round(cancelledAfter)} ms after the hang-up`)
          assert.ok(
            cancelledAfter < 1500,
            `the statement stopped ${Math.round(cancelledAfter)} ms after the client hung up, not after its 3 s`
          )
          const next = await app.inject('/items')
          assert.equal(next.statusCode, 200)
          assert.deepEqual(
            next.json().map((item: { name: string }) => item.name),
            ['Bread']
          )
        }
      )
    }

    test(
      "a request waiting for the connection of one that hung up keeps its own query: it is not cancelled as the other's",
      { timeout: 20_000 },
      async (t) => {
        const { app, request, sleeping } = await slowRequest(t, '/items/slow')
        const { port } = app.server.address() as AddressInfo
        // Queued behind the hung-up request on the pool's one connection: its checkout is answered by that release.
        const waiting = new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
          get({ host: '127.0.0.1', port, path: '/items?sleepy=1' }, (response) => {
            let body = ''
            response
              .setEncoding('utf8')
              .on('data', (chunk: string) => {
                body += chunk
              })
              .on('end', () => {
                resolve({ status: response.statusCode, body })
              })
          }).on('error', reject)
        })
        await setTimeout(100)
        const hungUp = performance.now()
        request.destroy()
        const answer = await waiting
        const answeredAfter = performance.now() - hungUp
        assert.equal(answer.status, 200, answer.body)
        assert.deepEqual(
          JSON.parse(answer.body).map((item: { name: string }) => item.name),
          ['Bread']
        )
        assert.ok(
          answeredAfter > 2500,
          `the waiting request's 3 s statement ran to its end (${Math.round(answeredAfter)} ms after the hang-up)`
        )
        assert.equal(await sleeping(), 0)
      }
    )

    test(
      'cancelOnDisconnect: false leaves the query of a client that hung up running',
      { timeout: 20_000 },
      async (t) => {
        const { request, sleeping } = await slowRequest(t, '/items/slow', { cancelOnDisconnect: false })
        request.destroy()
        await setTimeout(700)
        assert.equal(await sleeping(), 1, 'the statement still runs after the hang-up')
      }
    )
  })
}

describe('statementTimeout option', () => {
  test('a negative or non-numeric timeout fails at createDatabase', () => {
    assert.throws(() => createDatabase('sqlite::memory:', { statementTimeout: -1 }), {
      code: 'FST_VIEWSET_INVALID_OPTION',
    })
    assert.throws(() => createDatabase('sqlite::memory:', { statementTimeout: Number.NaN }), {
      code: 'FST_VIEWSET_INVALID_OPTION',
    })
  })

  test('SQLite ignores it (a statement cannot be interrupted there)', async (t) => {
    const db = createDatabase<ItemsDB>('sqlite::memory:', { statementTimeout: 1 })
    t.after(() => db.destroy())
    const { rows } = await sql<{
      n: number
    }>`with recursive r(n) as (select 1 union all select n + 1 from r where n < 200000) select count(*) as n from r`.execute(
      db
    )
    assert.equal(rows[0]?.n, 200000)
  })
})
