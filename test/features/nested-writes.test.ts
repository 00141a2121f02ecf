import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import type { Kysely } from 'kysely'
import { compileErrors, validate } from '@readme/openapi-parser'
import { createViewset, viewsetDocs } from '../../lib/index.js'
import type { ViewsetOptions } from '../../lib/index.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import {
  owned, Project, projectRelations, secret, seedTenants, Tag, Task, taskRelations, tenantsApp,
} from '../helpers/tenants.js'
import type { TenantsApp, TenantsDB, TenantsOptions } from '../helpers/tenants.js'

// Nested writes (issue 38 item 2): a relation declared `writable: true` is written with its parent, in one
// transaction: projects.tasks by its children (each through the tasks viewset, as POST /tasks or PATCH /tasks/:id
// would write it), tasks.project by reference, tasks.tags by setting its link rows. Two tenants, alice and bob
// (test/helpers/tenants.ts), each row its owner's: nothing alice sends may reach a row of bob's.

const writableTasks = {
  prefetchRelated: { tasks: { ...projectRelations.prefetchRelated.tasks, writable: true } },
}
const writableTaskRelations = {
  selectRelated: { project: { ...taskRelations.selectRelated.project, writable: true } },
  prefetchRelated: { tags: { ...taskRelations.prefetchRelated.tags, writable: true } },
}

async function nestedApp (t: TestContext, dialect: TestDialect, options: TenantsOptions = {}): Promise<TenantsApp> {
  return await tenantsApp(t, dialect, {
    ...options,
    projects: { relatedConfig: writableTasks, ...options.projects },
    tasks: { relatedConfig: writableTaskRelations, ...options.tasks },
  })
}

async function tasksOf (app: TenantsApp): Promise<string[]> {
  const rows = await app.db.selectFrom('tasks').select(['id', 'title', 'owner', 'project_id']).orderBy('id').execute()
  return rows.map((row) => `${Number(row.id)}:${String(row.title)}:${String(row.owner)}:${String(row.project_id)}`)
}

async function projectsOf (app: TenantsApp): Promise<string[]> {
  const rows = await app.db.selectFrom('projects').select(['id', 'name', 'owner']).orderBy('id').execute()
  return rows.map((row) => `${Number(row.id)}:${String(row.name)}:${String(row.owner)}`)
}

async function linksOf (app: TenantsApp, task: number): Promise<number[]> {
  const rows = await app.db.selectFrom('task_tags').select('tag_id').where('task_id', '=', task).execute()
  return rows.map((row) => Number(row.tag_id)).sort((a, b) => a - b)
}

const seededTasks = [
  '1:a-task-1:alice:1', '2:a-task-2:alice:2', '3:b-task-3:bob:2', '4:b-task-4:bob:1', '5:a-task-5:alice:3',
]
const seededProjects = ['1:a-proj:alice', '2:b-proj:bob', '3:z-proj:alice']

for (const dialect of dialects) {
  describe(`nested writes on ${dialect.name}`, () => {
    test('POST creates the parent and its children through the child viewset, in one answer', async (t) => {
      const app = await nestedApp(t, dialect)
      const response = await app.app.inject({
        method: 'POST',
        url: '/projects',
        headers: app.alice,
        payload: { name: 'new-proj', owner: 'bob', tasks: [{ title: 'n-1', secret: 's1' }, { title: 'n-2' }] },
      })
      assert.equal(response.statusCode, 201, response.body)
      assert.equal(response.headers.location, '/projects/4')
      const body = response.json()
      assert.equal(body.owner, 'alice')
      // The child's beforeWrite stamped its owner; the parent's key is its foreign key.
      assert.deepEqual(body.tasks.map((task: Record<string, unknown>) => [task.title, task.owner, task.project_id]),
        [['n-1', 'alice', 4], ['n-2', 'alice', 4]])
      assert.deepEqual(await projectsOf(app), [...seededProjects, '4:new-proj:alice'])
      assert.deepEqual(await tasksOf(app), [...seededTasks, '6:n-1:alice:4', '7:n-2:alice:4'])
    })

    test('PATCH updates a child by its key and creates one without; children not sent are untouched', async (t) => {
      const app = await nestedApp(t, dialect)
      const response = await app.app.inject({
        method: 'PATCH',
        url: '/projects/3',
        headers: app.alice,
        payload: { tasks: [{ id: 5, title: 'renamed' }, { title: 'added' }] },
      })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json().tasks.map((task: Record<string, unknown>) => task.title), ['renamed', 'added'])
      assert.deepEqual(await tasksOf(app), [
        ...seededTasks.slice(0, 4), '5:renamed:alice:3', '6:added:alice:3',
      ])
    })

    test('a child error rolls the whole request back, named by its JSON pointer', async (t) => {
      const app = await nestedApp(t, dialect)
      const response = await app.app.inject({
        method: 'POST',
        url: '/projects',
        headers: app.alice,
        payload: { name: 'doomed', tasks: [{ title: 'fine' }, { title: 'fine too' }, { title: 7 }] },
      })
      assert.equal(response.statusCode, 400, response.body)
      const problem = response.json()
      assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(problem.errors.map((error: { field: string }) => error.field), ['/tasks/2/title'])
      assert.deepEqual(await projectsOf(app), seededProjects)
      assert.deepEqual(await tasksOf(app), seededTasks)
    })

    test('a child of another tenant, or of another parent, is a 404 naming its pointer; nothing written', async (t) => {
      const app = await nestedApp(t, dialect)
      const answers = []
      // Task 4 is bob's, planted in alice's project 1; task 3 is bob's in his own project 2; task 2 alice's in his.
      for (const id of [4, 3, 2, 999]) {
        const response = await app.app.inject({
          method: 'PATCH',
          url: '/projects/1',
          headers: app.alice,
          payload: { name: 'renamed', tasks: [{ title: 'new' }, { id, title: 'taken' }] },
        })
        const problem = response.json()
        answers.push([response.statusCode, problem.code, problem.errors])
      }
      const expected = [404, 'FST_VIEWSET_NOT_FOUND', [{ in: 'body', field: '/tasks/1', message: 'No tasks row' }]]
      for (const [status, code, errors] of answers) {
        assert.deepEqual([status, code, errors.map((error: { field: string }) => error.field)],
          [expected[0], expected[1], ['/tasks/1']])
      }
      assert.deepEqual(await projectsOf(app), seededProjects)
      assert.deepEqual(await tasksOf(app), seededTasks)
    })

    test('a child the child route would refuse is refused: its authorize, and its field rules', async (t) => {
      const app = await nestedApp(t, dialect, {
        tasks: {
          authorize: (token: { sub?: string }, method: string) => !(token.sub === 'bob' && method === 'POST'),
          fieldAccess: ({ token }: { token: { sub?: string } | null }) =>
            token?.sub === 'alice' ? { hidden: ['secret'] } : {},
        },
      })
      const direct = await app.app.inject({
        method: 'POST', url: '/tasks', headers: app.bob, payload: { title: 'b', project_id: 2 },
      })
      assert.equal(direct.statusCode, 403)
      const refused = await app.app.inject({
        method: 'POST', url: '/projects', headers: app.bob, payload: { name: 'bp', tasks: [{ title: 'b' }] },
      })
      assert.equal(refused.statusCode, 403, refused.body)
      assert.equal(refused.json().code, 'FST_VIEWSET_FORBIDDEN')
      assert.deepEqual(refused.json().errors, [{ in: 'body', field: '/tasks/0', message: 'The token does not allow POST' }])
      const hidden = await app.app.inject({
        method: 'PATCH', url: '/projects/1', headers: app.alice, payload: { tasks: [{ id: 1, secret: 'peek' }] },
      })
      assert.equal(hidden.statusCode, 400, hidden.body)
      assert.deepEqual(hidden.json().errors.map((error: { field: string }) => error.field), ['/tasks/0/secret'])
      assert.deepEqual(await projectsOf(app), seededProjects)
      assert.deepEqual(await tasksOf(app), seededTasks)
    })

    test('a child moved outside its rule by beforeWrite is refused by its WITH CHECK; nothing written', async (t) => {
      const app = await nestedApp(t, dialect, {
        tasks: {
          beforeWrite: (values: Record<string, unknown>, { token }: { token: { sub?: string } | null }) =>
            ({ ...values, owner: values.title === 'stray' ? 'bob' : token?.sub ?? '' }),
        },
      })
      const response = await app.app.inject({
        method: 'POST', url: '/projects', headers: app.alice, payload: { name: 'p', tasks: [{ title: 'stray' }] },
      })
      assert.equal(response.statusCode, 403, response.body)
      assert.deepEqual(response.json().errors.map((error: { field: string }) => error.field), ['/tasks/0'])
      assert.deepEqual(await projectsOf(app), seededProjects)
      assert.deepEqual(await tasksOf(app), seededTasks)
    })

    test('the children\'s afterWrite rows commit with the nested write and roll back with it', async (t) => {
      const app = await nestedApp(t, dialect, {
        prepare: async (db) => {
          await db.schema.createTable('audit').addColumn('note', 'varchar(64)').execute()
        },
        tasks: {
          afterWrite: async (context: { method: string }, { after }: { after: { title?: string } | null },
            trx: Kysely<Record<string, { note: string }>>) => {
            await trx.insertInto('audit').values({ note: `${context.method} ${String(after?.title)}` }).execute()
          },
        },
      })
      const notes = async () =>
        (await (app.db as unknown as Kysely<Record<string, { note: string }>>).selectFrom('audit').select('note')
          .execute()).map((row) => row.note).sort()
      const written = await app.app.inject({
        method: 'POST', url: '/projects', headers: app.alice, payload: { name: 'p', tasks: [{ title: 'x' }, { title: 'y' }] },
      })
      assert.equal(written.statusCode, 201, written.body)
      assert.deepEqual(await notes(), ['POST x', 'POST y'])
      const failed = await app.app.inject({
        method: 'POST', url: '/projects', headers: app.alice, payload: { name: 'q', tasks: [{ title: 'z' }, { title: 7 }] },
      })
      assert.equal(failed.statusCode, 400, failed.body)
      assert.deepEqual(await notes(), ['POST x', 'POST y'])
    })

    test('a many-to-many sets its link rows; links to rows the caller cannot read stay', async (t) => {
      const app = await nestedApp(t, dialect)
      await app.db.insertInto('tags').values({ name: 'a-tag-3', owner: 'alice' }).execute()
      const response = await app.app.inject({
        method: 'PATCH', url: '/tasks/1', headers: app.alice, payload: { tags: [{ id: 3 }] },
      })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json().tags.map((tag: { id: number }) => tag.id), [3])
      // Tag 1 (alice's) unlinked, tag 2 (bob's, which alice cannot read) left as it was.
      assert.deepEqual(await linksOf(app, 1), [2, 3])
      const refused = await app.app.inject({
        method: 'PATCH', url: '/tasks/1', headers: app.alice, payload: { tags: [{ id: 1 }, { id: 2 }] },
      })
      assert.equal(refused.statusCode, 409, refused.body)
      assert.deepEqual(refused.json().errors, [
        { in: 'body', field: '/tags/1/id', message: 'refers to a row that does not exist' },
      ])
      const missing = await app.app.inject({
        method: 'PATCH', url: '/tasks/1', headers: app.alice, payload: { tags: [{ id: 1 }, { id: 99 }] },
      })
      // A row of bob's and a row that does not exist answer alike.
      assert.equal(missing.body, refused.body.replace('/tags/1/id', '/tags/1/id'))
      assert.deepEqual(await linksOf(app, 1), [2, 3])
    })

    test('a to-one by reference: an invisible target is the 409 of a missing one; a visible one is written', async (t) => {
      const app = await nestedApp(t, dialect)
      const answers = []
      for (const id of [2, 999]) {
        const response = await app.app.inject({
          method: 'POST', url: '/tasks', headers: app.alice, payload: { title: 'spy', project: { id } },
        })
        answers.push([response.statusCode, response.json().code, response.json().errors])
      }
      const refused = [409, 'FST_VIEWSET_CONFLICT',
        [{ in: 'body', field: '/project', message: 'refers to a row that does not exist' }]]
      assert.deepEqual(answers, [refused, refused])
      assert.deepEqual(await tasksOf(app), seededTasks)
      const response = await app.app.inject({
        method: 'POST', url: '/tasks', headers: app.alice, payload: { title: 'mine', project: { id: 3 } },
      })
      assert.equal(response.statusCode, 201, response.body)
      assert.deepEqual([response.json().project_id, response.json().project.name], [3, 'z-proj'])
      assert.deepEqual(await tasksOf(app), [...seededTasks, '6:mine:alice:3'])
    })

    test('children per request are bounded by maxBulk: past it a 400, nothing written', async (t) => {
      const app = await nestedApp(t, dialect, { projects: { maxBulk: 2 } })
      const response = await app.app.inject({
        method: 'POST',
        url: '/projects',
        headers: app.alice,
        payload: { name: 'big', tasks: [{ title: 'a' }, { title: 'b' }, { title: 'c' }] },
      })
      assert.equal(response.statusCode, 400, response.body)
      assert.equal(response.json().code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(await projectsOf(app), seededProjects)
      assert.deepEqual(await tasksOf(app), seededTasks)
    })

    test('OpenAPI documents the writable relation fields in the request bodies, from the child\'s bodies', async (t) => {
      const database = await testDatabase(t, dialect)
      await seedTenants(database, dialect)
      const db = database.db as unknown as Kysely<TenantsDB>
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      await app.register(viewsetDocs, { title: 'Tenants', version: '1.0.0' })
      const create = (given: object) => createViewset({ db, ...given } as ViewsetOptions<TenantsDB, 'tasks', typeof Task>)
      await app.register(create({ ...owned('projects', Project), relatedConfig: writableTasks }), { prefix: '/projects' })
      await app.register(create({ ...owned('tasks', Task), relatedConfig: writableTaskRelations }), { prefix: '/tasks' })
      await app.register(create(owned('tags', Tag)), { prefix: '/tags' })
      const response = await app.inject('/docs/json')
      assert.equal(response.statusCode, 200)
      const document = response.json()
      const result = await validate(structuredClone(document))
      assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
      const schemas = document.components.schemas
      const children = schemas.ProjectsCreate.properties.tasks
      assert.equal(children.type, 'array')
      assert.deepEqual(Object.keys(children.items.properties).sort(), ['id', 'owner', 'project', 'project_id', 'secret',
        'tags', 'title'])
      assert.equal(children.items.properties.title.type, 'string')
      assert.deepEqual(schemas.TasksCreate.properties.tags.items.required, ['id'])
      assert.deepEqual(schemas.TasksPatch.properties.project.anyOf[0].required, ['id'])
      // A body sends the foreign key or the reference: neither is required.
      assert.deepEqual(schemas.TasksCreate.required, ['title'])
    })

    test('a writable relation whose table no viewset serves fails at startup, naming it', async (t) => {
      const database = await testDatabase(t, dialect)
      await seedTenants(database, dialect)
      const db = database.db as unknown as Kysely<TenantsDB>
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      const options = { db, ...owned('projects', Project), relatedConfig: writableTasks }
      await app.register(createViewset(options as unknown as ViewsetOptions<TenantsDB, 'tasks', typeof Task>),
        { prefix: '/projects' })
      await assert.rejects(async () => { await app.ready() }, (error: Error) => {
        assert.match(error.message, /relatedConfig\.prefetchRelated\.tasks\.writable/)
        assert.match(error.message, /no viewset of the app serves table "tasks"/)
        return true
      })
    })
  })
}
