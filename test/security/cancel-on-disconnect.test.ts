// Cancel on client disconnect (PostgreSQL) along every statement of the generated routes, which carry their
// request's scope by hand: in this process no viewset runs user code, so the promise hooks stay off. The
// last test registers an overridden handler, which turns them on.
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { setTimeout } from 'node:timers/promises'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { sql } from 'kysely'
import type { Kysely, SqlBool } from 'kysely'
import pg from 'pg'
import { createViewset, Viewset } from 'fastify-viewsets'
import type { ElementRequest, RelatedConfig, ViewsetToken } from 'fastify-viewsets'
import { currentCancellation, cancellationRidesOnPromises } from '../../lib/execution/cancellation.js'
import { executeNow, PreparedKysely } from '../../lib/execution/prepared-kysely.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { taggedPool, untilSeen } from '../helpers/pg-activity.js'
import { createItemsTable, Item } from '../helpers/items.js'

const Mark = Type.Object({ id: Type.Integer(), label: Type.String() })
const Note = Type.Object({ id: Type.Integer(), body: Type.String() })
const Label = Type.Object({ id: Type.Integer(), name: Type.String() })
const MarkedNote = Type.Composite([Note, Type.Object({ marks: Type.Optional(Type.Array(Mark)) })])
const ItemWithNotes = Type.Composite([
  Item,
  Type.Object({ notes: Type.Optional(Type.Array(MarkedNote)), labels: Type.Optional(Type.Array(Label)) }),
])
/** Two relations, the first with a nested one: notes (and their marks), then labels. */
const relatedConfig: RelatedConfig = {
  prefetchRelated: {
    notes: {
      table: 'notes',
      foreignKey: 'item_id',
      relatedConfig: { prefetchRelated: { marks: { table: 'marks', foreignKey: 'note_id' } } },
    },
    labels: { table: 'labels', foreignKey: 'item_id' },
  },
}

async function createFixture (database: TestDatabase): Promise<void> {
  const { db, dialect } = database
  const [idType, id] = autoIncrement(dialect)
  await createItemsTable(database)
  for (const [table, parent, column] of [
    ['notes', 'item_id', 'body'],
    ['marks', 'note_id', 'label'],
    ['labels', 'item_id', 'name'],
  ] as const) {
    await db.schema
      .createTable(table)
      .addColumn('id', idType as 'integer', id)
      .addColumn(parent, 'integer', (c) => c.notNull())
      .addColumn(column, 'varchar(64)', (c) => c.notNull())
      .execute()
  }
  await db.insertInto('items').values({ name: 'Bread', price: 2 }).execute()
  await db.insertInto('notes').values({ item_id: 1, body: 'fresh' }).execute()
  await db.insertInto('marks').values({ note_id: 1, label: 'checked' }).execute()
  await db.insertInto('labels').values({ item_id: 1, name: 'bakery' }).execute()
}

const postgres = dialects.find((dialect) => dialect.name === 'postgres')

/** A transaction on a connection of its own that holds an ACCESS EXCLUSIVE lock on `table` until released: whatever
 * reads or writes it waits. */
async function lockTable (url: string, table: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('begin')
  await client.query(`lock table ${table} in access exclusive mode`)
  return async () => {
    await client.query('rollback')
    await client.end()
  }
}

interface Served {
  app: FastifyInstance
  database: TestDatabase
  port: number
  waiting: () => Promise<number>
}

/** The app on a port, over a tagged createDatabase pool (helpers/pg-activity.ts); `waiting()` counts its statements
 * waiting for a lock. */
async function serve (
  t: TestContext,
  register: (app: FastifyInstance, db: Kysely<any>) => Promise<void>
): Promise<Served> {
  assert.ok(postgres !== undefined)
  const database = await testDatabase(t, postgres)
  await createFixture(database)
  const { db, active } = taggedPool<any>(t, database, { poolSize: 2 })
  const app = testApp(t)
  await register(app, db)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo // listening on a TCP port: an AddressInfo
  return { app, database, port, waiting: async () => await active(sql<SqlBool>`wait_event_type = 'Lock'`) }
}

/**
 * Sends a request while `table` is locked, hangs up once its statement waits for the lock, and returns how
 * long that statement outlived the hang-up; the lock is released after.
 */
async function hangUpWhileWaiting (
  { database, port, waiting }: Served,
  table: string,
  send: { method: string; path: string; body?: unknown; headers?: Record<string, string> }
): Promise<number> {
  const release = await lockTable(database.url, table)
  try {
    const payload = send.body === undefined ? undefined : JSON.stringify(send.body)
    const request = httpRequest({
      host: '127.0.0.1',
      port,
      method: send.method,
      path: send.path,
      headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...send.headers },
    })
    request.on('error', () => {})
    request.end(payload)
    const seen = await untilSeen(waiting, 100)
    assert.ok(seen > 0, `the request's statement waits for the lock on ${table}`)
    const hungUp = performance.now()
    request.destroy()
    while ((await waiting()) > 0 && performance.now() - hungUp < 5000) await setTimeout(20)
    return performance.now() - hungUp
  } finally {
    await release()
  }
}

async function priceOfBread (database: TestDatabase): Promise<number | undefined> {
  const row = await database.db.selectFrom('items').select('price').where('name', '=', 'Bread').executeTakeFirst()
  return row === undefined ? undefined : Number(row.price)
}

async function names (database: TestDatabase): Promise<string[]> {
  return (await database.db.selectFrom('items').select('name').orderBy('name').execute()).map((row) => String(row.name))
}

interface Case {
  what: string
  table: string
  send: { method: string; path: string; body?: unknown; headers?: Record<string, string> }
  /** What the database holds once the lock is gone: nothing the cancelled statement would have written. */
  unchanged?: (database: TestDatabase) => Promise<void>
}

const cases: Case[] = [
  { what: 'LIST', table: 'items', send: { method: 'GET', path: '/items' } },
  { what: 'LIST and its count, side by side', table: 'items', send: { method: 'GET', path: '/items?count=true' } },
  { what: 'the first relation of a GET', table: 'notes', send: { method: 'GET', path: '/items/1' } },
  {
    what: 'a nested relation, loaded after its parent relation',
    table: 'marks',
    send: { method: 'GET', path: '/items/1' },
  },
  {
    what: 'the second relation, loaded after the first',
    table: 'labels',
    send: { method: 'GET', path: '/items?limit=5' },
  },
  {
    what: 'POST',
    table: 'items',
    send: { method: 'POST', path: '/items', body: { name: 'Jam' } },
    unchanged: async (database) => {
      assert.deepEqual(await names(database), ['Bread'])
    },
  },
  {
    what: 'the relations of a POST answer, after its INSERT',
    table: 'labels',
    send: { method: 'POST', path: '/items', body: { name: 'Tea' } },
  },
  {
    what: "POST merging into an existing row (an upsert, after beforeWrite's await)",
    table: 'items',
    send: {
      method: 'POST',
      path: '/items',
      body: { name: 'Bread', price: 9 },
      headers: { prefer: 'resolution=merge-duplicates' },
    },
    unchanged: async (database) => {
      assert.equal(await priceOfBread(database), 2)
    },
  },
  {
    what: "BULK, in its transaction after beforeWrite's awaits",
    table: 'items',
    send: { method: 'POST', path: '/items/bulk', body: [{ name: 'Jam' }, { name: 'Tea' }] },
    unchanged: async (database) => {
      assert.deepEqual(await names(database), ['Bread'])
    },
  },
  {
    what: 'BULK merging into existing rows (upserts, in their transaction)',
    table: 'items',
    send: {
      method: 'POST',
      path: '/items/bulk',
      body: [{ name: 'Bread', price: 9 }, { name: 'Tea' }],
      headers: { prefer: 'resolution=merge-duplicates' },
    },
    unchanged: async (database) => {
      assert.deepEqual(await names(database), ['Bread'])
      assert.equal(await priceOfBread(database), 2)
    },
  },
  {
    what: 'PATCH',
    table: 'items',
    send: { method: 'PATCH', path: '/items/1', body: { price: 9 } },
    unchanged: async (database) => {
      assert.equal(await priceOfBread(database), 2)
    },
  },
  {
    what: 'PATCH with If-Match, in its transaction',
    table: 'items',
    send: { method: 'PATCH', path: '/items/1', body: { price: 9 }, headers: { 'if-match': '*' } },
    unchanged: async (database) => {
      assert.equal(await priceOfBread(database), 2)
    },
  },
  {
    what: 'DELETE (no RETURNING: its affected rows counted)',
    table: 'items',
    send: { method: 'DELETE', path: '/items/1' },
    unchanged: async (database) => {
      assert.deepEqual(await names(database), ['Bread'])
    },
  },
]

if (postgres !== undefined) {
  describe('client disconnect on postgres: every statement of the generated routes', () => {
    for (const { what, table, send, unchanged } of cases) {
      test(
        `${what}: the statement of a client that hung up is cancelled, nothing is written, and the pool serves the next request`,
        { timeout: 20_000 },
        async (t) => {
          const served = await serve(t, async (app, db) => {
            await app.register(
              createViewset({
                db,
                table: 'items',
                schema: ItemWithNotes,
                relatedConfig,
                methods: ['LIST', 'GET', 'POST', 'BULK', 'PATCH', 'DELETE'],
                conflictFields: ['name'],
              }),
              { prefix: '/items' }
            )
          })
          assert.equal(
            cancellationRidesOnPromises(),
            false,
            'no user code: the promise hooks are off, the routes carry their scope by hand'
          )
          const outlived = await hangUpWhileWaiting(served, table, send)
          t.diagnostic(`statement stopped ${Math.round(outlived)} ms after the hang-up`)
          assert.ok(
            outlived < 1500,
            `the statement waited ${Math.round(outlived)} ms after the client hung up: not cancelled`
          )
          await unchanged?.(served.database)
          const next = await served.app.inject('/items/1')
          assert.equal(next.statusCode, 200)
          assert.deepEqual(next.json(), {
            id: 1,
            name: 'Bread',
            description: null,
            price: 2,
            in_stock: true,
            notes: [{ id: 1, body: 'fresh', marks: [{ id: 1, label: 'checked' }] }],
            labels: [{ id: 1, name: 'bakery' }],
          })
        }
      )
    }

    test(
      "a relation's later statements (the next batch of 1,024 keys of a limited relation) start in the request's scope",
      { timeout: 30_000 },
      async (t) => {
        const limited: RelatedConfig = {
          prefetchRelated: { notes: { table: 'notes', foreignKey: 'item_id', limit: 1 } },
        }
        const WithNotes = Type.Composite([Item, Type.Object({ notes: Type.Optional(Type.Array(Note)) })])
        let viewsetDb: Kysely<any> | undefined
        const served = await serve(t, async (app, db) => {
          viewsetDb = db
          await app.register(
            createViewset({
              db,
              table: 'items',
              schema: WithNotes,
              relatedConfig: limited,
              maxLimit: 2000,
              orderingFields: ['id'],
            }),
            { prefix: '/items' }
          )
        })
        const { db } = served.database
        const items = Array.from({ length: 1100 }, (_, i) => ({ name: `Item ${i + 2}` }))
        for (let i = 0; i < items.length; i += 500) {
          await db
            .insertInto('items')
            .values(items.slice(i, i + 500))
            .execute()
        }
        // Two notes per item, of which a limit-1 relation keeps one.
        const notes = Array.from({ length: 2202 }, (_, i) => ({ item_id: Math.floor(i / 2) + 1, body: `note ${i}` }))
        for (let i = 0; i < notes.length; i += 500) {
          await db
            .insertInto('notes')
            .values(notes.slice(i, i + 500))
            .execute()
        }
        assert.ok(viewsetDb !== undefined)
        const scopes: unknown[] = []
        // The data layer's statements run through the shortcut's own method (runCompiled), the relation batches through
        // this database's executeQuery (the viewset's request-transaction database hands them to it, for its
        // bulkhead), anything else through the executor's connections.
        const executor = viewsetDb.getExecutor()
        const provide = executor.provideConnection.bind(executor)
        executor.provideConnection = ((consumer) => {
          scopes.push(currentCancellation())
          return provide(consumer)
        }) as typeof provide // the same method, spied on
        assert.ok(viewsetDb instanceof PreparedKysely)
        const prepared: PreparedKysely<unknown> = viewsetDb
        const now = prepared[executeNow].bind(prepared)
        prepared[executeNow] = (compiled) => {
          scopes.push(currentCancellation())
          return now(compiled)
        }
        const execute = prepared.executeQuery.bind(prepared)
        prepared.executeQuery = ((query, options) => {
          scopes.push(currentCancellation())
          return execute(query, options)
        }) as typeof execute // the same method, spied on
        const response = await served.app.inject('/items?limit=2000&order_by=id')
        assert.equal(response.statusCode, 200)
        const body = response.json()
        assert.equal(body.length, 1101)
        assert.deepEqual(body[1100].notes, [{ id: 2202, body: 'note 2200' }])
        // The page, then one statement per batch of keys: PostgreSQL reads each item's first note by a LATERAL join
        // (the capped and exact statements of the window fallback run on MariaDB only).
        assert.equal(scopes.length, 3)
        assert.ok(
          scopes.every((scope) => scope !== undefined && scope === scopes[0]),
          'every statement of the request starts in its scope'
        )
        assert.equal(cancellationRidesOnPromises(), false)
      }
    )

    // Last: the hooks stay on for the rest of the process.
    test(
      'an overridden handler turns the promise hooks on: its statement after an await of its own is cancelled',
      { timeout: 20_000 },
      async (t) => {
        class LateItems extends Viewset<any, 'items', typeof ItemWithNotes> {
          override async getElement (request: ElementRequest, reply: FastifyReply, token: ViewsetToken | null) {
            await setTimeout(1)
            return await super.getElement(request, reply, token)
          }
        }
        assert.equal(cancellationRidesOnPromises(), false)
        const served = await serve(t, async (app, db) => {
          await app.register(new LateItems({ db, table: 'items', schema: ItemWithNotes, relatedConfig }).register(), {
            prefix: '/items',
          })
        })
        assert.equal(cancellationRidesOnPromises(), true)
        const outlived = await hangUpWhileWaiting(served, 'items', { method: 'GET', path: '/items/1' })
        assert.ok(
          outlived < 1500,
          `the statement waited ${Math.round(outlived)} ms after the client hung up: not cancelled`
        )
        assert.equal((await served.app.inject('/items/1')).statusCode, 200)
      }
    )
  })
}
