import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { ViewsetErrors } from 'fastify-viewsets'
import type { AfterWriteFunction } from 'fastify-viewsets'
import { dialects } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf } from '../helpers/app.js'
import { tenantsApp } from '../helpers/tenants.js'
import type { TenantsApp, TenantsDB } from '../helpers/tenants.js'

// The write hooks. afterWrite (issue 38, item 4): once per row written, on POST, BULK, PUT, PATCH, DELETE and
// both branches of an upsert, inside the write's transaction, with the row before and after as stored; what it
// writes commits and rolls back with the write, and its ViewsetErrors error is the answer. Two tenants: a row
// outside the rule is a 404, and no audit row. beforeWrite in BULK (item 8): its error names the element.

interface AuditDB extends TenantsDB {
  audit: { method: string; who: string; task_id: number; before_title: string | null; after_title: string | null }
}

interface TaskRow { id: number; title: string; owner: string }

/** The README's audit table: one row per row written, in the write's transaction. */
const audit: AfterWriteFunction<AuditDB, TaskRow> = async ({ method, token }, { before, after }, trx) => {
  if (after?.title === 'refused') throw new ViewsetErrors.Conflict('refused by afterWrite')
  const row = after ?? before
  await trx.insertInto('audit').values({
    method,
    who: token?.sub ?? '',
    task_id: Number(row?.id),
    before_title: before?.title ?? null,
    after_title: after?.title ?? null,
  }).execute()
  if (after?.title === 'rolled-back') throw new ViewsetErrors.Forbidden('not this title')
}

async function auditedApp (
  t: TestContext,
  dialect: TestDialect,
  hook = true,
  tasks: Record<string, unknown> = {}
): Promise<TenantsApp> {
  return await tenantsApp(t, dialect, {
    prepare: async (db) => {
      await db.schema.createTable('audit').addColumn('method', 'varchar(16)', (column) => column.notNull())
        .addColumn('who', 'varchar(64)', (column) => column.notNull())
        .addColumn('task_id', 'integer', (column) => column.notNull())
        .addColumn('before_title', 'varchar(64)').addColumn('after_title', 'varchar(64)').execute()
      await db.schema.createIndex('tasks_title').on('tasks').column('title').unique().execute()
    },
    tasks: { conflictFields: ['title'], ...(hook ? { afterWrite: audit } : {}), ...tasks },
  })
}

async function audited (app: TenantsApp) {
  const rows = await app.db.selectFrom('audit').selectAll().orderBy('task_id').orderBy('method').execute()
  return rows.map((row) => ({ ...row, task_id: Number(row.task_id) }))
}

/** One request as alice (or `headers`' caller), with a JSON body when there is one. */
async function send (app: TenantsApp, method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown,
  headers: Record<string, string> = app.alice) {
  const body = payload === undefined ? {} : { payload: payload as object }
  return await app.app.inject({ method, url, headers, ...body })
}

async function titles (app: TenantsApp): Promise<Array<[number, string, string]>> {
  const rows = await app.db.selectFrom('tasks').select(['id', 'title', 'owner']).orderBy('id').execute()
  return rows.map((row) => [Number(row.id), String(row.title), String(row.owner)])
}

const seeded: Array<[number, string, string]> = [
  [1, 'a-task-1', 'alice'], [2, 'a-task-2', 'alice'], [3, 'b-task-3', 'bob'], [4, 'b-task-4', 'bob'],
  [5, 'a-task-5', 'alice'],
]

for (const dialect of dialects) {
  describe(`afterWrite on ${dialect.name}`, () => {
    test('POST, BULK, PUT, PATCH and DELETE each write one audit row per row, with before and after', async (t) => {
      const app = await auditedApp(t, dialect)
      const post = await send(app, 'POST', '/tasks', { title: 'new', project_id: 1 })
      assert.equal(post.statusCode, 201)
      const elements = [{ title: 'bulk-1', project_id: 1 }, { title: 'bulk-2', project_id: null }]
      const bulk = await send(app, 'POST', '/tasks/bulk', elements)
      assert.equal(bulk.statusCode, 201)
      const put = await send(app, 'PUT', '/tasks/1', { title: 'put-1', project_id: 1 })
      assert.equal(put.statusCode, 200)
      const patch = await send(app, 'PATCH', '/tasks/2', { title: 'patched' })
      assert.equal(patch.statusCode, 200)
      const remove = await send(app, 'DELETE', '/tasks/5')
      assert.equal(remove.statusCode, 204)
      assert.deepEqual(await audited(app), [
        { method: 'PUT', who: 'alice', task_id: 1, before_title: 'a-task-1', after_title: 'put-1' },
        { method: 'PATCH', who: 'alice', task_id: 2, before_title: 'a-task-2', after_title: 'patched' },
        { method: 'DELETE', who: 'alice', task_id: 5, before_title: 'a-task-5', after_title: null },
        { method: 'POST', who: 'alice', task_id: 6, before_title: null, after_title: 'new' },
        { method: 'BULK', who: 'alice', task_id: 7, before_title: null, after_title: 'bulk-1' },
        { method: 'BULK', who: 'alice', task_id: 8, before_title: null, after_title: 'bulk-2' },
      ])
    })

    test("another tenant's row is a 404 on PUT, PATCH and DELETE: nothing written, no audit row", async (t) => {
      const app = await auditedApp(t, dialect)
      for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
        const payload = method === 'DELETE' ? undefined : { title: 'stolen', project_id: 1 }
        const response = await send(app, method, '/tasks/3', payload)
        assert.equal(response.statusCode, 404, method)
      }
      assert.deepEqual(await titles(app), seeded)
      assert.deepEqual(await audited(app), [])
    })

    test('an upsert tells each branch: PATCH with the row before on update, POST with null on create', async (t) => {
      const app = await auditedApp(t, dialect)
      const headers = { ...app.alice, prefer: 'resolution=merge-duplicates' }
      const updated = await send(app, 'POST', '/tasks', { title: 'a-task-1', secret: 'changed', project_id: 3 }, headers)
      assert.equal(updated.statusCode, 200)
      const elements = [{ title: 'a-task-2', project_id: 1 }, { title: 'fresh', project_id: null }]
      const bulk = await send(app, 'POST', '/tasks/bulk', elements, headers)
      assert.equal(bulk.statusCode, 201)
      assert.deepEqual(await audited(app), [
        { method: 'PATCH', who: 'alice', task_id: 1, before_title: 'a-task-1', after_title: 'a-task-1' },
        { method: 'PATCH', who: 'alice', task_id: 2, before_title: 'a-task-2', after_title: 'a-task-2' },
        { method: 'BULK', who: 'alice', task_id: 6, before_title: null, after_title: 'fresh' },
      ])
      // bob's conflicting row stays a 409 (outside the rule), and nothing is audited.
      const bob = await send(app, 'POST', '/tasks', { title: 'b-task-3', project_id: null }, headers)
      assert.equal(bob.statusCode, 409)
      assert.equal((await audited(app)).length, 3)
    })

    test('an error thrown by afterWrite is the answer, and the write and its audit rows roll back', async (t) => {
      const app = await auditedApp(t, dialect)
      const cases = [
        { method: 'POST', url: '/tasks', payload: { title: 'refused', project_id: 1 }, status: 409 },
        {
          method: 'POST',
          url: '/tasks/bulk',
          status: 403,
          payload: [{ title: 'kept?', project_id: 1 }, { title: 'rolled-back', project_id: 1 }]
        },
        { method: 'PATCH', url: '/tasks/1', payload: { title: 'rolled-back' }, status: 403 },
        { method: 'PUT', url: '/tasks/2', payload: { title: 'refused', project_id: 1 }, status: 409 },
      ] as const
      for (const { method, url, payload, status } of cases) {
        const response = await send(app, method, url, payload)
        assert.equal(response.statusCode, status, `${method} ${url}`)
        const problem = problemOf(response)
        assert.equal(problem.code, status === 409 ? 'FST_VIEWSET_CONFLICT' : 'FST_VIEWSET_FORBIDDEN')
      }
      assert.deepEqual(await titles(app), seeded)
      assert.deepEqual(await audited(app), [])
    })

    test('without afterWrite, a write runs no statement more than before (no read of the row before)', async (t) => {
      const counts = async (hook: boolean) => {
        const app = await auditedApp(t, dialect, hook)
        const statements: number[] = []
        for (const [method, url, payload] of [
          ['POST', '/tasks', { title: 'x', project_id: null }],
          ['PATCH', '/tasks/1', { title: 'y' }],
          ['DELETE', '/tasks/2', undefined],
        ] as const) {
          app.queries.length = 0
          const response = await send(app, method, url, payload)
          assert.ok(response.statusCode < 300, `${method}: ${response.statusCode}`)
          statements.push(app.queries.filter((query) => !/^\s*(begin|commit|start|savepoint|release)/i.test(query))
            .length)
        }
        return statements
      }
      const without = await counts(false)
      const withHook = await counts(true)
      // As on main before afterWrite existed (POST: foreign-key check, insert, write check; MySQL reads back).
      assert.deepEqual(without, dialect.name === 'mysql' ? [4, 6, 2] : [3, 4, 1])
      for (const [index, count] of without.entries()) assert.ok((withHook[index] ?? 0) > count)
      t.diagnostic(`statements without afterWrite ${without.join(',')}, with ${withHook.join(',')}`)
    })

    test("beforeWrite's error in BULK names the failing element by JSON pointer; nothing is written", async (t) => {
      const beforeWrite = (values: Record<string, unknown>, { token }: { token: { sub?: string } | null }) => {
        if (values.project_id === 2) {
          throw new ViewsetErrors.Validation('project 2 is closed',
            [{ in: 'body', field: 'project_id', message: 'is closed' }])
        }
        if (values.title === 'nope') throw new ViewsetErrors.Forbidden('no such title')
        return { ...values, owner: token?.sub ?? '' }
      }
      const app = await auditedApp(t, dialect, true, { beforeWrite })
      const elements = [0, 1, 2].map((index) => ({ title: `t${index}`, project_id: 1 }))
      const listed = await send(app, 'POST', '/tasks/bulk', [...elements, { title: 't3', project_id: 2 }])
      assert.equal(listed.statusCode, 400)
      const problem = problemOf(listed)
      assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(problem.errors, [{ in: 'body', field: '/3/project_id', message: 'is closed' }])
      assert.match(problem.detail, /\(element 3\)$/)
      const upsert = await send(app, 'POST', '/tasks/bulk', [elements[0], { title: 'nope', project_id: 1 }],
        { ...app.alice, prefer: 'resolution=merge-duplicates' })
      assert.equal(upsert.statusCode, 403)
      assert.equal(problemOf(upsert).detail, 'no such title (element 1)')
      // A single POST keeps the field as it is.
      const single = await send(app, 'POST', '/tasks', { title: 'x', project_id: 2 })
      assert.deepEqual(problemOf(single).errors, [{ in: 'body', field: 'project_id', message: 'is closed' }])
      assert.deepEqual(await titles(app), seeded)
      assert.deepEqual(await audited(app), [])
    })
  })
}
