import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { Kysely } from 'kysely'
import fastifyJwt from '@fastify/jwt'
import { createViewset, viewsetBatch, viewsetDocs } from 'fastify-viewsets'
import type { AfterWriteFunction } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import type { OpenApiDocument } from '../helpers/contract.js'
import { redoclyProblems, spectralProblems } from '../helpers/openapi-lint.js'
import { owned, secret, seedTenants, Tag, Task, tenantsApp } from '../helpers/tenants.js'
import type { TenantsApp, TenantsDB } from '../helpers/tenants.js'

// Idempotency-Key on the atomic batch (`viewsetBatch({ idempotency })`) and on the bulk updates PATCH_MANY and
// BULK_PATCH (issue 38 items 3 and 5): a retry with the same key answers the stored answer (Idempotent-Replayed: true)
// and writes nothing again (the afterWrite audit rows prove it), another request with the key is a 422, a failed
// batch stores nothing, and two tenants' keys are their own. Every test asserts the rows in the database.

interface AuditDB extends TenantsDB {
  audit: { method: string; who: string; task_id: number }
}

const audit: AfterWriteFunction<AuditDB, { id: number }> = async ({ method, token }, { before, after }, trx) => {
  await trx.insertInto('audit').values({ method, who: token?.sub ?? '', task_id: Number((after ?? before)?.id) })
    .execute()
}

const keys = 'viewset_idempotency_keys'

/** The tenants' app, an audit row per row written, Idempotency-Key on the batch and on the tasks' routes. */
async function keyedApp (t: TestContext, dialect: TestDialect, tasks: Record<string, unknown> = {}) {
  return await tenantsApp(t, dialect, {
    prepare: async (db) => {
      await db.schema.createTable('audit').addColumn('method', 'varchar(16)', (column) => column.notNull())
        .addColumn('who', 'varchar(64)', (column) => column.notNull())
        .addColumn('task_id', 'integer', (column) => column.notNull()).execute()
    },
    tasks: {
      afterWrite: audit,
      requireIfMatch: false,
      filterFields: { title: ['eq', 'contains'], project_id: ['eq'] },
      idempotency: { createTable: true },
      ...tasks,
    },
    extra: async (app) => { await app.register(viewsetBatch({ idempotency: { createTable: true } })) },
  })
}

type Operation = { method: string; path: string; body?: unknown }

async function batch (app: TenantsApp, key: string | undefined, operations: Operation[], who = app.alice) {
  const headers = { ...who, ...(key === undefined ? {} : { 'idempotency-key': key }) }
  return await app.app.inject({ method: 'POST', url: '/batch', headers, payload: { operations } })
}

async function tasksOf (db: Kysely<any>): Promise<Array<[number, string, string]>> {
  const rows = await db.selectFrom('tasks').select(['id', 'title', 'owner']).orderBy('id').execute()
  return rows.map((row) => [Number(row.id), String(row.title), String(row.owner)])
}

async function audited (db: Kysely<any>): Promise<Array<[string, string, number]>> {
  const rows = await db.selectFrom('audit').selectAll().orderBy('task_id').orderBy('method').execute()
  return rows.map((row) => [String(row.method), String(row.who), Number(row.task_id)])
}

async function keyRows (db: Kysely<any>): Promise<Array<[string | null, number | null]>> {
  const rows = await db.selectFrom(keys).select(['owner', 'status']).execute()
  return rows.map((row) => [row.owner ?? null, row.status === null ? null : Number(row.status)])
}

const seeded: Array<[number, string, string]> = [
  [1, 'a-task-1', 'alice'], [2, 'a-task-2', 'alice'], [3, 'b-task-3', 'bob'], [4, 'b-task-4', 'bob'],
  [5, 'a-task-5', 'alice'],
]

const twoWrites: Operation[] = [
  { method: 'POST', path: '/tasks', body: { title: 'new', project_id: 1 } },
  { method: 'PATCH', path: '/tasks/1', body: { title: 'renamed' } },
]

for (const dialect of dialects) {
  describe(`Idempotency-Key on the batch and the bulk updates on ${dialect.name}`, () => {
    test('a batch retried with the same key writes once and replays the same results', async (t) => {
      const app = await keyedApp(t, dialect)
      const first = await batch(app, 'b1', twoWrites)
      assert.equal(first.statusCode, 200, first.body)
      assert.equal(first.headers['idempotent-replayed'], undefined)
      assert.deepEqual(first.json().results.map((result: { status: number }) => result.status), [201, 200])
      const written: Array<[number, string, string]> = [[1, 'renamed', 'alice'], ...seeded.slice(1), [6, 'new', 'alice']]
      assert.deepEqual(await tasksOf(app.db), written)
      assert.deepEqual(await audited(app.db), [['PATCH', 'alice', 1], ['POST', 'alice', 6]])
      assert.deepEqual(await keyRows(app.db), [[null, 200]])
      const retry = await batch(app, 'b1', twoWrites)
      assert.equal(retry.statusCode, 200)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
      assert.equal(retry.headers['content-type'], first.headers['content-type'])
      assert.equal(retry.body, first.body)
      assert.deepEqual(await tasksOf(app.db), written)
      assert.deepEqual(await audited(app.db), [['PATCH', 'alice', 1], ['POST', 'alice', 6]])
      // Without a key the batch runs again, as before.
      const unkeyed = await batch(app, undefined, [twoWrites[0] as Operation])
      assert.equal(unkeyed.statusCode, 200)
      assert.equal(unkeyed.headers['idempotent-replayed'], undefined)
      assert.deepEqual((await tasksOf(app.db)).slice(5), [[6, 'new', 'alice'], [7, 'new', 'alice']])
    })

    test('the same key with a different batch is a 422, nothing written; a malformed key is a 400', async (t) => {
      const app = await keyedApp(t, dialect)
      assert.equal((await batch(app, 'b2', twoWrites)).statusCode, 200)
      const other = await batch(app, 'b2', [{ method: 'PATCH', path: '/tasks/2', body: { title: 'other' } }])
      assert.equal(other.statusCode, 422)
      assert.equal(problemOf(other).code, 'FST_VIEWSET_IDEMPOTENCY_KEY_REUSED')
      const bad = await batch(app, 'é', twoWrites)
      assert.equal(bad.statusCode, 400)
      assert.equal(problemOf(bad).code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(await tasksOf(app.db), [[1, 'renamed', 'alice'], ...seeded.slice(1), [6, 'new', 'alice']])
      assert.equal((await audited(app.db)).length, 2)
      assert.deepEqual(await keyRows(app.db), [[null, 200]])
    })

    test('a failed batch stores nothing and frees its key: a retry runs again', async (t) => {
      const app = await keyedApp(t, dialect)
      // Task 3 is bob's: a 404 for alice, and the whole batch rolls back.
      const failing: Operation[] = [twoWrites[0] as Operation, { method: 'PATCH', path: '/tasks/3', body: { title: 'x' } }]
      const failed = await batch(app, 'b3', failing)
      assert.equal(failed.statusCode, 404)
      assert.deepEqual(await keyRows(app.db), [])
      assert.deepEqual(await tasksOf(app.db), seeded)
      const again = await batch(app, 'b3', failing)
      assert.equal(again.statusCode, 404)
      assert.equal(again.headers['idempotent-replayed'], undefined)
      const fixed = await batch(app, 'b3', [twoWrites[0] as Operation])
      assert.equal(fixed.statusCode, 200)
      // PostgreSQL and MariaDB do not roll their sequences back: the new row's id is whatever it got.
      const id = Number(fixed.json().results[0].body.id)
      assert.deepEqual((await tasksOf(app.db)).slice(5), [[id, 'new', 'alice']])
      assert.deepEqual(await audited(app.db), [['POST', 'alice', id]])
    })

    test('two tenants with the same key are independent: each writes once, each replays its own', async (t) => {
      const app = await keyedApp(t, dialect)
      const mine: Operation[] = [{ method: 'POST', path: '/tasks', body: { title: 'mine', project_id: null } }]
      const alice = await batch(app, 'same', mine)
      const bob = await batch(app, 'same', mine, app.bob)
      assert.equal(alice.statusCode, 200)
      assert.equal(bob.statusCode, 200)
      assert.equal(bob.headers['idempotent-replayed'], undefined)
      assert.equal(alice.json().results[0].body.owner, 'alice')
      assert.equal(bob.json().results[0].body.owner, 'bob')
      const bobAgain = await batch(app, 'same', mine, app.bob)
      assert.equal(bobAgain.headers['idempotent-replayed'], 'true')
      assert.equal(bobAgain.body, bob.body)
      // bob's other batch under alice's key is his own first use of it, not a 422 that would reveal alice's key.
      const bobOther = await batch(app, 'only-alice', mine, app.bob)
      assert.equal((await batch(app, 'only-alice', twoWrites)).statusCode, 200)
      assert.equal(bobOther.statusCode, 200)
      assert.deepEqual((await tasksOf(app.db)).slice(5).map(([, title, owner]) => [title, owner]),
        [['mine', 'alice'], ['mine', 'bob'], ['mine', 'bob'], ['new', 'alice']])
      assert.equal((await keyRows(app.db)).length, 4)
      // An invalid token is a 401 before any key is reserved.
      const forged = await batch(app, 'same', mine, { authorization: 'Bearer not-a-token' })
      assert.equal(forged.statusCode, 401)
      assert.equal((await keyRows(app.db)).length, 4)
    })

    test('PATCH_MANY retried replays {"affected":N} without writing again; two tenants are independent', async (t) => {
      const app = await keyedApp(t, dialect)
      const send = async (who: { authorization: string }, title: string) => await app.app.inject({
        method: 'PATCH',
        url: '/tasks?title__contains=task',
        headers: { ...who, 'idempotency-key': 'm1' },
        payload: { title },
      })
      const first = await send(app.alice, 'bulk')
      assert.equal(first.statusCode, 200, first.body)
      assert.deepEqual(first.json(), { affected: 3 })
      const retry = await send(app.alice, 'bulk')
      assert.equal(retry.headers['idempotent-replayed'], 'true')
      assert.deepEqual(retry.json(), { affected: 3 })
      assert.deepEqual(await audited(app.db), [['PATCH_MANY', 'alice', 1], ['PATCH_MANY', 'alice', 2],
        ['PATCH_MANY', 'alice', 5]])
      assert.equal((await send(app.alice, 'other')).statusCode, 422)
      // bob's first use of the key: his two rows, and not alice's answer.
      const bob = await send(app.bob, 'bulk')
      assert.equal(bob.headers['idempotent-replayed'], undefined)
      assert.deepEqual(bob.json(), { affected: 2 })
      assert.deepEqual(await tasksOf(app.db), seeded.map(([id, , owner]) => [id, 'bulk', owner]))
      assert.equal((await audited(app.db)).length, 5)
    })

    test('BULK_PATCH retried replays its rows without writing again', async (t) => {
      const app = await keyedApp(t, dialect)
      const send = async (title: string) => await app.app.inject({
        method: 'PATCH',
        url: '/tasks/bulk',
        headers: { ...app.alice, 'idempotency-key': 'p1' },
        payload: [{ id: 1, title }, { id: 5, title }],
      })
      const first = await send('bulk')
      assert.equal(first.statusCode, 200, first.body)
      assert.deepEqual(first.json().map((row: { id: number; title: string }) => [row.id, row.title]),
        [[1, 'bulk'], [5, 'bulk']])
      const retry = await send('bulk')
      assert.equal(retry.headers['idempotent-replayed'], 'true')
      assert.equal(retry.body, first.body)
      assert.equal((await send('other')).statusCode, 422)
      assert.deepEqual(await tasksOf(app.db), [[1, 'bulk', 'alice'], ...seeded.slice(1, 4), [5, 'bulk', 'alice']])
      assert.deepEqual(await audited(app.db), [['BULK_PATCH', 'alice', 1], ['BULK_PATCH', 'alice', 5]])
    })

    test('a retry while the batch is in flight is a 409 with Retry-After; then it replays', {
      // SQLite's one connection is the batch's until it ends: a second request waits for it instead of being refused.
      skip: dialect.name === 'sqlite',
    }, async (t) => {
      let release = () => {}
      let entered = () => {}
      const opened = new Promise<void>((resolve) => { release = resolve })
      const reached = new Promise<void>((resolve) => { entered = resolve })
      const stamp = owned('tasks', Task).beforeWrite as (values: object, context: object) => object
      const app = await keyedApp(t, dialect, {
        beforeWrite: async (values: { title?: string }, context: object) => {
          if (values.title === 'slow') {
            entered()
            await opened
          }
          return stamp(values, context)
        },
      })
      const slow: Operation[] = [{ method: 'POST', path: '/tasks', body: { title: 'slow', project_id: 1 } }]
      const first = batch(app, 'b4', slow)
      await reached
      const busy = await batch(app, 'b4', slow)
      assert.equal(busy.statusCode, 409)
      assert.equal(problemOf(busy).code, 'FST_VIEWSET_IDEMPOTENCY_KEY_IN_USE')
      assert.match(String(busy.headers['retry-after']), /^[1-9][0-9]*$/)
      release()
      const done = await first
      assert.equal(done.statusCode, 200)
      const replayed = await batch(app, 'b4', slow)
      assert.equal(replayed.headers['idempotent-replayed'], 'true')
      assert.equal(replayed.body, done.body)
      assert.deepEqual((await tasksOf(app.db)).slice(5).map(([, title]) => title), ['slow'])
    })

    test('a missing table fails ready(); OpenAPI documents the header, the 409 and the 422 of POST /batch',
      async (t) => {
        await assert.rejects(tenantsApp(t, dialect, {
          extra: async (app) => { await app.register(viewsetBatch({ idempotency: true })) },
        }), /viewsetBatch\.idempotency\.table.*viewset_idempotency_keys.*viewsetBatch\.idempotency: \{ createTable/s)
        assert.throws(() => viewsetBatch({ idempotency: { lease: 0 } }), /viewsetBatch\.idempotency\.lease/)
        assert.throws(() => viewsetBatch({ idempotency: 'yes' as unknown as true }), /viewsetBatch\.idempotency:/)
        const database = await testDatabase(t, dialect)
        await seedTenants(database, dialect)
        const app = testApp(t)
        await app.register(fastifyJwt, { secret })
        await app.register(viewsetDocs, { title: 'Batch', version: '1.0.0' })
        await app.register(createViewset({ db: database.db, table: 'tags', schema: Tag }), { prefix: '/tags' })
        await app.register(viewsetBatch({ idempotency: { createTable: true, table: 'batch_keys' } }))
        await app.ready()
        const operation = (app.swagger() as any).paths['/batch'].post
        assert.ok(operation.parameters.some((p: any) => p.in === 'header' && p.name === 'idempotency-key'))
        assert.ok(operation.responses[409].headers['Retry-After'])
        assert.match(operation.responses[422].description, /FST_VIEWSET_IDEMPOTENCY_KEY_REUSED/)
        assert.ok(operation.responses[200].headers['Idempotent-Replayed'])
        const document = app.swagger() as unknown as OpenApiDocument
        const errors = [...await redoclyProblems(document), ...await spectralProblems(document)]
          .filter((problem) => problem.severity === 'error')
        assert.deepEqual(errors, [])
        const created = await app.inject({
          method: 'POST',
          url: '/batch',
          headers: { 'idempotency-key': 'anonymous' },
          payload: { operations: [{ method: 'POST', path: '/tags', body: { name: 'n', owner: 'o' } }] },
        })
        assert.equal(created.statusCode, 200, created.body)
        const stored = await database.db.selectFrom('batch_keys').select(['status']).execute()
        assert.deepEqual(stored.map((row) => Number(row.status)), [200])
      })
  })
}
