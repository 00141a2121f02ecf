import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import type { Kysely } from 'kysely'
import { createViewset, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import {
  owned, Project, projectRelations, secret, seedTenants, Tag, Task, taskRelations, plainMethods,
} from '../helpers/tenants.js'
import type { TenantsDB } from '../helpers/tenants.js'

// Nested resources (issue 42, item 3): /projects/:projectId/tasks binds :projectId to tasks.project_id. Every route
// reads and writes the tasks of that project only, writes set it, a body that moves a task to another project is a
// 400, and a project that does not exist or that the caller's rules hide is a 404 on the collection (and on its
// elements). alice owns projects 1 and 3, bob project 2; task 4 (bob's) sits in alice's project 1, task 2 (alice's)
// in bob's project 2.

type Options = ViewsetOptions<TenantsDB, 'tasks', typeof Task>

/** A nested viewset whose custom route reads through the helpers: they keep to the request's parent. */
class NestedTasks extends Viewset<TenantsDB, 'tasks', typeof Task> {
  override customRoutes (fastify: FastifyInstance) {
    const schema = this.routeSchema('GET', { operationId: 'taskTitles', element: false, answer: 'none', status: 200 })
    fastify.get('/titles', { config: { protected: true }, schema: { ...schema, response: undefined } }, async () =>
      (await this.query().orderBy('id').execute()).map((row) => row.title))
  }
}

async function nestedApp (
  t: TestContext,
  dialect: TestDialect,
  { docs = false, tasks = {}, prepare }: {
    docs?: boolean
    tasks?: Record<string, unknown>
    prepare?: (db: Kysely<TenantsDB>) => Promise<void>
  } = {}
) {
  const database = await testDatabase(t, dialect)
  await seedTenants(database, dialect)
  const db = database.db as unknown as Kysely<TenantsDB>
  await prepare?.(db)
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  if (docs) await app.register(viewsetDocs, {})
  const create = (given: object) => createViewset({ db, ...given } as Options)
  await app.register(create({ ...owned('projects', Project), relatedConfig: projectRelations }), { prefix: '/projects' })
  await app.register(create(owned('tags', Tag)), { prefix: '/tags' })
  const options = {
    db, ...owned('tasks', Task), relatedConfig: taskRelations, parent: { projectId: 'project_id' }, ...tasks,
  }
  const methods = (tasks.methods ?? plainMethods) as typeof plainMethods
  await app.register(new NestedTasks(options as unknown as Options).register(methods),
    { prefix: '/projects/:projectId/tasks' })
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { ...database, db, app, alice: bearer('alice'), bob: bearer('bob') }
}

async function tasksOf (db: Kysely<TenantsDB>) {
  const rows = await db.selectFrom('tasks').select(['id', 'title', 'project_id', 'owner']).orderBy('id').execute()
  const key = (value: number | null) => (value === null ? null : Number(value))
  return rows.map((row) => ({ ...row, id: Number(row.id), project_id: key(row.project_id) }))
}

const ids = (body: Array<{ id: number }>) => body.map((row) => row.id)

for (const dialect of dialects) {
  describe(`nested resources: /projects/:projectId/tasks (${dialect.name})`, () => {
    test('LIST, GET and the count read the tasks of the path\'s project only, under the caller\'s rules', async (t) => {
      const { app, alice, bob } = await nestedApp(t, dialect)
      const one = await app.inject({ method: 'GET', url: '/projects/1/tasks?count=true', headers: alice })
      assert.equal(one.statusCode, 200)
      assert.deepEqual(ids(one.json()), [1], "task 4 is in project 1 but bob's")
      assert.equal(one.headers['x-total-count'], '1')
      assert.deepEqual(one.json()[0].project, { id: 1, name: 'a-proj', owner: 'alice' })
      assert.deepEqual(ids((await app.inject({ method: 'GET', url: '/projects/3/tasks', headers: alice })).json()), [5])
      assert.deepEqual(ids((await app.inject({ method: 'GET', url: '/projects/2/tasks', headers: bob })).json()), [3])
      const selected = await app.inject({ method: 'GET', url: '/projects/1/tasks?fields=id,title', headers: alice })
      assert.deepEqual(selected.json(), [{ id: 1, title: 'a-task-1' }])
      const element = await app.inject({ method: 'GET', url: '/projects/1/tasks/1', headers: alice })
      assert.equal(element.statusCode, 200)
      assert.equal(element.json().id, 1)
      assert.ok(element.headers.etag)
      const elsewhere = await app.inject({ method: 'GET', url: '/projects/3/tasks/1', headers: alice })
      assert.equal(elsewhere.statusCode, 404)
      assert.equal(problemOf(elsewhere).code, 'FST_VIEWSET_NOT_FOUND')
      // The helpers of a custom route keep to the parent too.
      const titles = await app.inject({ method: 'GET', url: '/projects/1/tasks/titles', headers: alice })
      assert.deepEqual(titles.json(), ['a-task-1'])
    })

    test("a project that does not exist or that the caller's rules hide is a 404 on every route; nothing changes",
      async (t) => {
        const { app, db, alice, bob } = await nestedApp(t, dialect)
        const before = await tasksOf(db)
        const requests = [
          { method: 'GET', url: '/projects/1/tasks' },
          { method: 'POST', url: '/projects/1/tasks', payload: { title: 'spy' } },
          { method: 'POST', url: '/projects/1/tasks/bulk', payload: [{ title: 'spy' }] },
          // bob's own task 4, in alice's project 1: the hidden parent hides it too
          { method: 'GET', url: '/projects/1/tasks/4' },
          { method: 'PATCH', url: '/projects/1/tasks/4', payload: { title: 'moved' } },
          { method: 'PUT', url: '/projects/1/tasks/4', payload: { title: 'moved' } },
          { method: 'DELETE', url: '/projects/1/tasks/4' },
          { method: 'GET', url: '/projects/1/tasks/titles' },
        ] as const
        for (const request of requests) {
          const response = await app.inject({ ...request, headers: bob })
          assert.equal(response.statusCode, 404, `${request.method} ${request.url}`)
          assert.equal(problemOf(response).code, 'FST_VIEWSET_NOT_FOUND')
          assert.doesNotMatch(response.body, /a-proj|alice/)
        }
        const missing = await app.inject({ method: 'GET', url: '/projects/999/tasks', headers: alice })
        assert.equal(missing.statusCode, 404)
        const created = await app.inject({ method: 'POST', url: '/projects/999/tasks', payload: { title: 'x' }, headers: alice })
        assert.equal(created.statusCode, 404)
        assert.deepEqual(await tasksOf(db), before)
      })

    test('POST and BULK set the parent; Location includes the parent path; the same value is accepted', async (t) => {
      const { app, db, alice } = await nestedApp(t, dialect)
      const created = await app.inject({ method: 'POST', url: '/projects/3/tasks', payload: { title: 'new' }, headers: alice })
      assert.equal(created.statusCode, 201)
      const id = created.json().id
      assert.equal(created.headers.location, `/projects/3/tasks/${id}`)
      assert.equal(created.json().project_id, 3)
      assert.equal(created.json().project.name, 'z-proj')
      const same = await app.inject({
        method: 'POST', url: '/projects/3/tasks', payload: { title: 'same', project_id: 3 }, headers: alice,
      })
      assert.equal(same.statusCode, 201)
      const bulk = await app.inject({
        method: 'POST', url: '/projects/1/tasks/bulk', payload: [{ title: 'b1' }, { title: 'b2', project_id: 1 }], headers: alice,
      })
      assert.equal(bulk.statusCode, 201)
      assert.deepEqual(bulk.json().map((row: { project_id: number }) => row.project_id), [1, 1])
      const stored = await tasksOf(db)
      assert.deepEqual(stored.filter((row) => ['new', 'same'].includes(row.title)).map((row) => row.project_id), [3, 3])
      assert.deepEqual(stored.filter((row) => ['b1', 'b2'].includes(row.title)).map((row) => row.project_id), [1, 1])
      const followed = await app.inject({ method: 'GET', url: String(created.headers.location), headers: alice })
      assert.equal(followed.statusCode, 200)
    })

    test('a body that moves a task to another project is a 400 naming the field, and changes nothing', async (t) => {
      const { app, db, alice } = await nestedApp(t, dialect)
      const before = await tasksOf(db)
      const post = await app.inject({
        method: 'POST', url: '/projects/1/tasks', payload: { title: 'x', project_id: 3 }, headers: alice,
      })
      assert.equal(post.statusCode, 400)
      assert.equal(problemOf(post).code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(post.json().errors, [{ in: 'body', field: 'project_id', message: 'must be 1, the :projectId of the path' }])
      for (const method of ['PATCH', 'PUT'] as const) {
        const moved = await app.inject({
          method, url: '/projects/1/tasks/1', payload: { title: 'moved', project_id: 3 }, headers: alice,
        })
        assert.equal(moved.statusCode, 400, method)
        assert.equal(moved.json().errors[0].field, 'project_id')
        const nulled = await app.inject({
          method, url: '/projects/1/tasks/1', payload: { title: 'moved', project_id: null }, headers: alice,
        })
        assert.equal(nulled.statusCode, 400, method)
      }
      const bulk = await app.inject({
        method: 'POST', url: '/projects/1/tasks/bulk', payload: [{ title: 'a' }, { title: 'b', project_id: 3 }], headers: alice,
      })
      assert.equal(bulk.statusCode, 400)
      assert.equal(bulk.json().errors[0].field, '/1/project_id')
      assert.deepEqual(await tasksOf(db), before)
      const kept = await app.inject({
        method: 'PATCH', url: '/projects/1/tasks/1', payload: { title: 'renamed', project_id: 1 }, headers: alice,
      })
      assert.equal(kept.statusCode, 200)
      assert.equal(kept.json().title, 'renamed')
      assert.equal((await tasksOf(db)).find((row) => row.id === 1)?.project_id, 1)
    })

    test('element writes under another project are 404s; under the right one they work', async (t) => {
      const { app, db, alice } = await nestedApp(t, dialect)
      const before = await tasksOf(db)
      for (const method of ['PATCH', 'PUT', 'DELETE'] as const) {
        const payload = method === 'DELETE' ? undefined : { title: 'z' }
        const response = await app.inject({ method, url: '/projects/3/tasks/1', headers: alice, ...(payload ? { payload } : {}) })
        assert.equal(response.statusCode, 404, method)
      }
      assert.deepEqual(await tasksOf(db), before)
      const deleted = await app.inject({ method: 'DELETE', url: '/projects/3/tasks/5', headers: alice })
      assert.equal(deleted.statusCode, 204)
      assert.equal((await tasksOf(db)).some((row) => row.id === 5), false)
    })

    test('an upsert merges only into a row of the parent; another project\'s row is the 409 of a hidden one', async (t) => {
      const { app, db, alice } = await nestedApp(t, dialect, {
        tasks: { conflictFields: ['title'] },
        prepare: async (on) => { await on.schema.createIndex('tasks_title').on('tasks').column('title').unique().execute() },
      })
      const merge = { ...alice, prefer: 'resolution=merge-duplicates' }
      const before = await tasksOf(db)
      const elsewhere = await app.inject({
        method: 'POST', url: '/projects/1/tasks', payload: { title: 'a-task-5', secret: 'x' }, headers: merge,
      })
      assert.equal(elsewhere.statusCode, 409, 'task 5 is in project 3')
      assert.deepEqual(await tasksOf(db), before)
      const here = await app.inject({
        method: 'POST', url: '/projects/1/tasks', payload: { title: 'a-task-1', secret: 'merged' }, headers: merge,
      })
      assert.equal(here.statusCode, 200)
      assert.equal(here.json().id, 1)
      assert.equal(here.json().secret, 'merged')
      const moved = await app.inject({
        method: 'POST', url: '/projects/1/tasks', payload: { title: 'a-task-1', project_id: 3 }, headers: merge,
      })
      assert.equal(moved.statusCode, 400)
    })

    test('a wrong method on a nested path is a 405 with Allow', async (t) => {
      const { app, alice } = await nestedApp(t, dialect, { tasks: { methods: ['LIST', 'GET'], protectedMethods: ['LIST', 'GET'] } })
      const response = await app.inject({ method: 'DELETE', url: '/projects/1/tasks/1', headers: alice })
      assert.equal(response.statusCode, 405)
      assert.match(String(response.headers.allow), /GET/)
    })

    test('the path parameter is typed from the column: not an integer is a 400', async (t) => {
      const { app, alice } = await nestedApp(t, dialect)
      const urls = [
        '/projects/abc/tasks', '/projects/abc/tasks/1', '/projects/1.5/tasks',
        // canonical and bounded, as :id is
        '/projects/01/tasks', '/projects/1e0/tasks', '/projects/0x1/tasks', '/projects/%2B1/tasks/1',
        '/projects/99999999999999999999/tasks',
      ]
      for (const url of urls) {
        const response = await app.inject({ method: 'GET', url, headers: alice })
        assert.equal(response.statusCode, 400, url)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
      }
    })

    test('cursor pages stay inside the parent', async (t) => {
      const { app, db, alice } = await nestedApp(t, dialect, { tasks: { pagination: 'cursor' } })
      await db.insertInto('tasks').values([1, 2, 3].map((n) => ({ title: `c${n}`, secret: '', owner: 'alice', project_id: 1 }))).execute()
      const first = await app.inject({ method: 'GET', url: '/projects/1/tasks?limit=2', headers: alice })
      assert.equal(first.statusCode, 200)
      assert.deepEqual(first.json().map((row: { title: string }) => row.title), ['a-task-1', 'c1'])
      const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1]
      assert.ok(next?.startsWith('/projects/1/tasks?'), String(first.headers.link))
      const second = await app.inject({ method: 'GET', url: String(next), headers: alice })
      assert.deepEqual(second.json().map((row: { title: string }) => row.title), ['c2', 'c3'])
    })

    test('OpenAPI documents the path parameters of every route', async (t) => {
      const { app } = await nestedApp(t, dialect, { docs: true })
      const document = app.swagger() as any
      const collection = document.paths['/projects/{projectId}/tasks']
      const element = document.paths['/projects/{projectId}/tasks/{id}']
      const pathParams = (operation: any) =>
        operation.parameters.filter((p: any) => p.in === 'path').map((p: any) => [p.name, p.schema.type, p.required])
      assert.deepEqual(pathParams(collection.get), [['projectId', 'integer', true]])
      assert.deepEqual(pathParams(collection.post), [['projectId', 'integer', true]])
      assert.deepEqual(pathParams(element.patch), [['projectId', 'integer', true], ['id', 'integer', true]])
      assert.ok(collection.get.responses['404'], 'a hidden parent is documented')
      // A custom route's schema from routeSchema has the parent's parameter too.
      assert.deepEqual(pathParams(document.paths['/projects/{projectId}/tasks/titles'].get), [['projectId', 'integer', true]])
    })
  })

  describe(`nested resources: startup checks (${dialect.name})`, () => {
    const failing = async (t: TestContext, prefix: string, parent: unknown) => {
      const database = await testDatabase(t, dialect)
      await seedTenants(database, dialect)
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      const options = {
        db: database.db, ...owned('tasks', Task), relatedConfig: taskRelations, ...(parent === undefined ? {} : { parent }),
      }
      // Not awaited: the plugin loads with ready(), whose rejection is the startup failure.
      void app.register(createViewset(options as unknown as Options), { prefix })
      const error = await app.ready().then(() => undefined, (caught: unknown) => caught)
      assert.ok(error instanceof Error, 'ready() fails')
      assert.equal((error as { code?: string }).code, 'FST_VIEWSET_INVALID_OPTION')
      return error.message
    }

    test('an unbound prefix parameter, an unknown one, a column that is not one, a column that is no foreign key',
      async (t) => {
        assert.match(await failing(t, '/projects/:projectId/tasks', undefined), /parent: .*:projectId, bound to no column/)
        assert.match(await failing(t, '/projects/:projectId/tasks', { project: 'project_id' }), /parent: .*:projectId/)
        assert.match(await failing(t, '/projects/:projectId/tasks', { projectId: 'nope' }),
          /parent\.projectId: "nope" is not a column of table "tasks"/)
        assert.match(await failing(t, '/projects/:projectId/tasks', { projectId: 'title' }),
          /parent\.projectId: "title" is not a single-column foreign key/)
        assert.match(await failing(t, '/tasks', { projectId: 'project_id' }), /parent\.projectId: the prefix "\/tasks" has no :projectId/)
      })
  })
}
