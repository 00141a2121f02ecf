import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import type { Kysely, Transaction, Updateable } from 'kysely'
import { Viewset, ViewsetErrors } from 'fastify-viewsets'
import type { RowContext, WriteMethod } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { ownerRule, secret, seedTenants, Task, taskRelations, tenantsApp, plainMethods } from '../helpers/tenants.js'
import type { TenantsApp, TenantsDB } from '../helpers/tenants.js'

// Issue 38 item 8: beforeWrite(values, context, trx) receives the write's transaction on every write path (POST,
// BULK, PUT, PATCH and both branches of an upsert), so that a check it makes is consistent with the write: what it
// reads through trx sees the write's own state, a quota it counts under a lock holds against a concurrent writer,
// and what it writes through trx commits or rolls back with the write. The viewset's helpers it calls read through
// the same transaction (on SQLite, a read on the pool would wait forever for the connection the write holds).

type Values = Record<string, unknown>
interface Seen { method: string; transaction: boolean }

/** The tenants' app with a unique title (for upserts) and the tasks viewset's `beforeWrite`. */
async function hookedApp (t: TestContext, dialect: TestDialect, beforeWrite: unknown): Promise<TenantsApp> {
  return await tenantsApp(t, dialect, {
    prepare: async (db) => { await db.schema.createIndex('tasks_title').on('tasks').column('title').unique().execute() },
    tasks: { conflictFields: ['title'], beforeWrite },
  })
}

async function send (app: TenantsApp, method: string, url: string, payload: unknown, headers: Values = {}) {
  return await app.app.inject({
    method: method as 'POST', url, headers: { ...app.alice, ...headers } as Record<string, string>, payload: payload as object,
  })
}

async function taskCount (db: Kysely<TenantsDB>, project: number): Promise<number> {
  const row = await db.selectFrom('tasks').select((eb) => eb.fn.countAll().as('n'))
    .where('project_id', '=', project).executeTakeFirst()
  return Number(row?.n ?? 0)
}

for (const dialect of dialects) {
  describe(`beforeWrite's transaction (${dialect.name})`, () => {
    test('every write path hands beforeWrite its transaction, and the method', async (t) => {
      const seen: Seen[] = []
      const beforeWrite = (values: Values, { token, method }: RowContext<WriteMethod>, trx: Transaction<TenantsDB>) => {
        seen.push({ method, transaction: trx.isTransaction })
        return { ...values, owner: token?.sub ?? '' }
      }
      const app = await hookedApp(t, dialect, beforeWrite)
      const merge = { prefer: 'resolution=merge-duplicates' }
      assert.equal((await send(app, 'POST', '/tasks', { title: 'p', project_id: 1 })).statusCode, 201)
      assert.equal((await send(app, 'POST', '/tasks/bulk', [{ title: 'b1', project_id: 1 }])).statusCode, 201)
      assert.equal((await send(app, 'PUT', '/tasks/1', { title: 'put', project_id: 1 })).statusCode, 200)
      assert.equal((await send(app, 'PATCH', '/tasks/1', { title: 'patched' })).statusCode, 200)
      assert.equal((await send(app, 'POST', '/tasks', { title: 'patched', project_id: 3 }, merge)).statusCode, 200)
      const bulk = await send(app, 'POST', '/tasks/bulk', [{ title: 'p', project_id: 3 }, { title: 'new', project_id: 1 }],
        merge)
      assert.equal(bulk.statusCode, 201)
      assert.deepEqual(seen, [
        { method: 'POST', transaction: true }, { method: 'BULK', transaction: true },
        { method: 'PUT', transaction: true }, { method: 'PATCH', transaction: true },
        { method: 'PATCH', transaction: true },
        { method: 'PATCH', transaction: true }, { method: 'BULK', transaction: true },
      ])
    })

    test('a check read through trx is consistent with the write; its error in BULK names the element', async (t) => {
      // A task may go only into a project whose tasks (alice's and bob's) number fewer than 2.
      const beforeWrite = async (values: Values, { token }: RowContext<WriteMethod>, trx: Transaction<TenantsDB>) => {
        const project = Number(values.project_id)
        if (Number.isInteger(project) && await taskCount(trx, project) >= 2) {
          throw new ViewsetErrors.Validation('the project is full', [
            { in: 'body', field: 'project_id', message: 'is full' },
          ])
        }
        return { ...values, owner: token?.sub ?? '' }
      }
      const app = await hookedApp(t, dialect, beforeWrite)
      // Project 3 holds one task: one more fits, then it is full.
      assert.equal((await send(app, 'POST', '/tasks', { title: 'fits', project_id: 3 })).statusCode, 201)
      const full = await send(app, 'POST', '/tasks', { title: 'full', project_id: 3 })
      assert.equal(full.statusCode, 400)
      assert.deepEqual(problemOf(full).errors, [{ in: 'body', field: 'project_id', message: 'is full' }])
      const bulk = await send(app, 'POST', '/tasks/bulk', [
        { title: 'b0', project_id: null }, { title: 'b1', project_id: null }, { title: 'b2', project_id: 3 },
      ])
      assert.equal(bulk.statusCode, 400)
      assert.deepEqual(problemOf(bulk).errors, [{ in: 'body', field: '/2/project_id', message: 'is full' }])
      // A unique conflict in the write's transaction still names its element, on every dialect.
      const duplicate = await send(app, 'POST', '/tasks/bulk', [
        { title: 'u0', project_id: null }, { title: 'a-task-1', project_id: null },
      ])
      assert.equal(duplicate.statusCode, 409)
      assert.deepEqual(problemOf(duplicate).errors?.map((error) => error.field), ['/1/title'])
      // Nothing of the refused writes is stored.
      assert.equal(await taskCount(app.db as Kysely<TenantsDB>, 3), 2)
      const titles = await app.db.selectFrom('tasks').select('title').where('title', 'in', ['full', 'b0']).execute()
      assert.deepEqual(titles, [])
    })

    test('what beforeWrite writes through trx commits or rolls back with the write', async (t) => {
      const beforeWrite = async (values: Values, { token }: RowContext<WriteMethod>, trx: Transaction<TenantsDB>) => {
        await trx.insertInto('tags').values({ name: `tag-of-${String(values.title)}`, owner: token?.sub ?? '' }).execute()
        if (values.title === 'refused') throw new ViewsetErrors.Forbidden('not this one')
        return { ...values, owner: token?.sub ?? '' }
      }
      const app = await hookedApp(t, dialect, beforeWrite)
      assert.equal((await send(app, 'POST', '/tasks', { title: 'kept', project_id: 1 })).statusCode, 201)
      assert.equal((await send(app, 'POST', '/tasks', { title: 'refused', project_id: 1 })).statusCode, 403)
      assert.equal((await send(app, 'PATCH', '/tasks/1', { title: 'refused' })).statusCode, 403)
      const tags = await app.db.selectFrom('tags').select('name').where('name', 'like', 'tag-of-%').execute()
      assert.deepEqual(tags.map((tag) => tag.name), ['tag-of-kept'])
      const task = await app.db.selectFrom('tasks').select('title').where('id', '=', 1).executeTakeFirst()
      assert.equal(task?.title, 'a-task-1')
    })

    test("the viewset's helpers inside beforeWrite read through the write's transaction", async (t) => {
      const database = await testDatabase(t, dialect)
      await seedTenants(database, dialect)
      const db = database.db as Kysely<TenantsDB>
      class Tasks extends Viewset<TenantsDB, 'tasks', typeof Task> {
        override async beforeWrite (
          values: Updateable<TenantsDB['tasks']>, { token }: RowContext<WriteMethod>, trx: Transaction<TenantsDB>
        ) {
          const owner = token?.sub ?? ''
          await trx.insertInto('tasks').values({ title: `shadow-${String(values.title)}`, owner, secret: '' }).execute()
          // Only the write's transaction holds the shadow row yet: a helper reading elsewhere would not see it.
          const shadows = await this.query().where('title', 'like', 'shadow-%').execute()
          const first = await this.findById(1)
          const counted = await this.transaction(async (inner) =>
            await inner.selectFrom('tasks').select('id').where('title', 'like', 'shadow-%').execute())
          // Another viewset over the same database (its own request-transaction wrapper) reads through it too.
          const seen = await everyTask.unscoped.query().where('title', 'like', 'shadow-%').execute()
          assert.equal(seen.length, counted.length)
          return { ...values, owner, secret: `${shadows.length}/${counted.length}/${first?.title ?? 'none'}` }
        }
      }
      const everyTask = new Viewset<TenantsDB, 'tasks', typeof Task>({ db, table: 'tasks', schema: Task, methods: ['LIST'], relatedConfig: taskRelations })
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      const tasks = new Tasks({
        db,
        table: 'tasks',
        schema: Task,
        relatedConfig: taskRelations,
        methods: plainMethods,
        protectedMethods: plainMethods,
        scope: ownerRule as never,
      })
      await app.register(tasks.register(), { prefix: '/tasks' })
      await app.register(everyTask.register(), { prefix: '/every-task' })
      await app.ready()
      const alice = { authorization: `Bearer ${app.jwt.sign({ sub: 'alice' })}` }
      const created = await app.inject({ method: 'POST', url: '/tasks', headers: alice, payload: { title: 'x', project_id: 1 } })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json().secret, '1/1/a-task-1')
      const patched = await app.inject({ method: 'PATCH', url: '/tasks/2', headers: alice, payload: { title: 'y' } })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(patched.json().secret, '2/2/a-task-1')
      // bob's rule applies to the helpers as well: alice's task 1 is none of his.
      const bob = { authorization: `Bearer ${app.jwt.sign({ sub: 'bob' })}` }
      const his = await app.inject({ method: 'POST', url: '/tasks', headers: bob, payload: { title: 'z', project_id: 2 } })
      assert.equal(his.json().secret, '1/3/none')
    })

    // SQLite has one writer: its writes are one after the other, and the second one counts the first.
    test('two concurrent writes cannot both pass a quota counted under a lock', { skip: dialect.name === 'sqlite' },
      async (t) => {
        let entered = 0
        let bothIn = () => {}
        const together = new Promise<void>((resolve) => { bothIn = resolve })
        const beforeWrite = async (values: Values, { token }: RowContext<WriteMethod>, trx: Transaction<TenantsDB>) => {
          entered++
          if (entered === 2) bothIn()
          // The project's row locked, then its tasks counted: the second writer waits here for the first's commit.
          await trx.selectFrom('projects').select('id').where('id', '=', 3).forUpdate().execute()
          await together
          if (await taskCount(trx, 3) >= 2) throw new ViewsetErrors.Forbidden('project 3 is full')
          return { ...values, owner: token?.sub ?? '' }
        }
        const app = await hookedApp(t, dialect, beforeWrite)
        const [first, second] = await Promise.all([
          send(app, 'POST', '/tasks', { title: 'one', project_id: 3 }),
          send(app, 'POST', '/tasks', { title: 'two', project_id: 3 }),
        ])
        assert.deepEqual([first.statusCode, second.statusCode].sort(), [201, 403])
        assert.equal(await taskCount(app.db as Kysely<TenantsDB>, 3), 2)
      })
  })
}
