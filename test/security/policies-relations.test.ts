import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { TObject } from '@sinclair/typebox'
import type { Generated, Kysely } from 'kysely'
import { createViewset, Viewset, viewsetMethods } from 'fastify-viewsets'
import type { RelatedConfig, ViewsetOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// One rule per table, applied wherever its rows are read (issue 35, item 1): two tenants, alice and bob, each
// seeing only the rows they own, through a to-one (tasks → project), a to-many (projects → tasks) and a
// many-to-many (tasks ↔ tags through task_tags), two levels deep.

const secret = 'test-secret-that-is-long-enough-for-hs256'

interface TenantsDB {
  projects: { id: Generated<number>; name: string; owner: string }
  tasks: { id: Generated<number>; title: string; secret: string; owner: string; project_id: number | null }
  tags: { id: Generated<number>; name: string; owner: string }
  task_tags: { task_id: number; tag_id: number }
}

const Tag = Type.Object({ id: Type.Integer(), name: Type.String(), owner: Type.String() })
const ProjectRow = Type.Object({ id: Type.Integer(), name: Type.String(), owner: Type.String() })
const TaskRow = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  secret: Type.String(),
  owner: Type.String(),
  project_id: Type.Union([Type.Integer(), Type.Null()]),
  project: Type.Optional(Type.Union([ProjectRow, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
const Task = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  secret: Type.String(),
  owner: Type.Optional(Type.String({ readOnly: true })),
  project_id: Type.Union([Type.Integer(), Type.Null()]),
  project: Type.Optional(Type.Union([ProjectRow, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
const Project = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  owner: Type.Optional(Type.String({ readOnly: true })),
  tasks: Type.Optional(Type.Array(TaskRow)),
})

const through = { table: 'task_tags', sourceKey: 'task_id', targetKey: 'tag_id' } as const
const taskRelations = {
  selectRelated: { project: { table: 'projects', foreignKey: 'project_id' } },
  prefetchRelated: { tags: { table: 'tags', through, orderBy: 'id' } },
} satisfies RelatedConfig<TenantsDB>
const projectRelations = {
  prefetchRelated: { tasks: { table: 'tasks', foreignKey: 'project_id', orderBy: 'id', relatedConfig: taskRelations } },
} satisfies RelatedConfig<TenantsDB>

/** Every viewset of the tenants' app: each row is its owner's, read and written. */
function owned<TB extends keyof TenantsDB & string, S extends TObject> (table: TB, schema: S) {
  return {
    table,
    schema,
    // The default methods: all but those that write many rows per request, AGGREGATE and HISTORY.
    protectedMethods: viewsetMethods.filter((method) =>
      !['BULK', 'PATCH_MANY', 'BULK_PATCH', 'DELETE_MANY', 'AGGREGATE', 'HISTORY'].includes(method)),
    beforeWrite: (values: Record<string, unknown>, { token }: { token: { sub?: string } | null }) =>
      ({ ...values, owner: token?.sub ?? '' }),
    scope: (eb: any, { token }: { token: { sub?: string } | null }) => eb('owner', '=', token?.sub ?? ''),
  }
}

interface TenantsApp extends TestDatabase {
  app: FastifyInstance
  alice: { authorization: string }
  bob: { authorization: string }
}

/** Creates and fills the four tables: alice owns project 1, task 1 and tag 1; bob project 2, task 3 and tag 2. */
async function seed (database: TestDatabase, dialect: TestDialect): Promise<void> {
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  for (const table of ['projects', 'tags'] as const) {
    await db.schema.createTable(table).addColumn('id', idType as 'integer', id)
      .addColumn('name', 'varchar(64)', (column) => column.notNull())
      .addColumn('owner', 'varchar(64)', (column) => column.notNull()).execute()
  }
  await db.schema.createTable('tasks').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('secret', 'varchar(64)', (column) => column.notNull())
    .addColumn('owner', 'varchar(64)', (column) => column.notNull())
    .addColumn('project_id', 'integer').execute()
  await db.schema.createTable('task_tags').addColumn('task_id', 'integer', (column) => column.notNull())
    .addColumn('tag_id', 'integer', (column) => column.notNull()).execute()
  await db.insertInto('projects').values([{ name: 'a-proj', owner: 'alice' }, { name: 'b-proj', owner: 'bob' }])
    .execute()
  await db.insertInto('tags').values([{ name: 'a-tag', owner: 'alice' }, { name: 'b-tag', owner: 'bob' }]).execute()
  await db.insertInto('tasks').values([
    { title: 'a-task-1', secret: 'alice-secret-1', owner: 'alice', project_id: 1 },
    // alice's task planted in bob's project, and bob's in alice's
    { title: 'a-task-2', secret: 'alice-secret-2', owner: 'alice', project_id: 2 },
    { title: 'b-task-3', secret: 'bob-secret-3', owner: 'bob', project_id: 2 },
    { title: 'b-task-4', secret: 'bob-secret-4', owner: 'bob', project_id: 1 },
  ]).execute()
  // Each task tagged with both tenants' tags.
  await db.insertInto('task_tags').values([1, 2, 3, 4].flatMap((task) => [
    { task_id: task, tag_id: 1 }, { task_id: task, tag_id: 2 },
  ])).execute()
}

/** The tenants' app: /projects, /tasks and /tags, each scoped to its owner, plus `extra` viewsets. */
async function tenantsApp (
  t: TestContext,
  dialect: TestDialect,
  { tags = true, extra }: { tags?: boolean; extra?: (app: FastifyInstance, db: TestDatabase['db']) => Promise<void> } = {}
): Promise<TenantsApp> {
  const database = await testDatabase(t, dialect)
  await seed(database, dialect)
  const db = database.db as unknown as Kysely<TenantsDB>
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  const create = (options: object) => createViewset({ db, ...options } as ViewsetOptions<TenantsDB, 'tasks', typeof Task>)
  await app.register(create({ ...owned('projects', Project), relatedConfig: projectRelations }), { prefix: '/projects' })
  await app.register(create({ ...owned('tasks', Task), relatedConfig: taskRelations }), { prefix: '/tasks' })
  if (tags) await app.register(create(owned('tags', Tag)), { prefix: '/tags' })
  await extra?.(app, database.db)
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { ...database, app, alice: bearer('alice'), bob: bearer('bob') }
}

interface Named { id: number; title?: string; name?: string; owner: string }
interface TaskBody extends Named { project: Named | null; tags: Named[] }

for (const dialect of dialects) {
  describe(`relation rules (${dialect.name})`, () => {
    test('a to-one to a hidden row is null, hidden tags are absent, in LIST and GET', async (t) => {
      const { app, alice, bob } = await tenantsApp(t, dialect)
      const list = await app.inject({ url: '/tasks', headers: alice })
      assert.equal(list.statusCode, 200)
      const tasks = list.json<TaskBody[]>()
      const seen = tasks.map(({ id, project, tags }) => ({
        id,
        project: project?.name ?? null,
        tags: tags.map((tag) => tag.name),
      }))
      assert.deepEqual(seen, [
        { id: 1, project: 'a-proj', tags: ['a-tag'] },
        // alice's task in bob's project: the project is bob's, so none for alice
        { id: 2, project: null, tags: ['a-tag'] },
      ])
      assert.ok(!list.body.includes('b-proj') && !list.body.includes('b-tag'))
      const one = await app.inject({ url: '/tasks/3', headers: bob })
      assert.equal(one.statusCode, 200)
      assert.deepEqual(one.json<TaskBody>().project, { id: 2, name: 'b-proj', owner: 'bob' })
      assert.deepEqual(one.json<TaskBody>().tags.map((tag) => tag.name), ['b-tag'])
    })

    test("bob's project lists none of alice's tasks, two levels deep, in a few statements", async (t) => {
      const { app, bob, queries } = await tenantsApp(t, dialect)
      queries.length = 0
      const response = await app.inject({ url: '/projects/2', headers: bob })
      assert.equal(response.statusCode, 200)
      const project = response.json<{ tasks: TaskBody[] }>()
      assert.deepEqual(project.tasks.map((task) => task.title), ['b-task-3'])
      assert.deepEqual(project.tasks[0]?.project?.name, 'b-proj')
      assert.deepEqual(project.tasks[0]?.tags.map((tag) => tag.name), ['b-tag'])
      assert.ok(!response.body.includes('alice'))
      // the project, its tasks, their projects, their tags
      assert.equal(queries.length, 4)
      // LIST: the same statements, whatever the page holds
      queries.length = 0
      const list = await app.inject({ url: '/projects', headers: bob })
      assert.equal(list.statusCode, 200)
      const projects = list.json<Array<{ id: number; tasks: TaskBody[] }>>()
      assert.deepEqual(projects.map(({ id, tasks }) => ({ id, tasks: tasks.map((task) => task.id) })), [
        { id: 2, tasks: [3] },
      ])
      assert.equal(queries.length, 4)
    })

    test('the rules take the values of each request: alice and bob in turn read their own rows', async (t) => {
      const { app, alice, bob } = await tenantsApp(t, dialect)
      for (let round = 0; round < 2; round++) {
        const a = (await app.inject({ url: '/projects/1', headers: alice })).json<{ tasks: TaskBody[] }>()
        assert.deepEqual(a.tasks.map((task) => [task.id, task.tags.map((tag) => tag.id)]), [[1, [1]]])
        const b = (await app.inject({ url: '/projects/2', headers: bob })).json<{ tasks: TaskBody[] }>()
        assert.deepEqual(b.tasks.map((task) => [task.id, task.tags.map((tag) => tag.id)]), [[3, [2]]])
      }
    })

    test("a write's response reads its relations under the writer's rules", async (t) => {
      const { app, alice, db } = await tenantsApp(t, dialect)
      const response = await app.inject({
        method: 'PATCH', url: '/tasks/1', headers: alice, payload: { title: 'renamed' },
      })
      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json<TaskBody>().tags.map((tag) => tag.name), ['a-tag'])
      const stored = await db.selectFrom('task_tags').select('tag_id').where('task_id', '=', 1).orderBy('tag_id').execute()
      assert.deepEqual(stored.map((row) => Number(row.tag_id)), [1, 2])
    })

    test("If-Match compares the tag of the row as the caller's GET served it, relations under its rules", async (t) => {
      const { app, alice, db } = await tenantsApp(t, dialect)
      const got = await app.inject({ url: '/tasks/1', headers: alice })
      const etag = String(got.headers.etag)
      const stale = await app.inject({
        method: 'PATCH', url: '/tasks/1', headers: { ...alice, 'if-match': '"stale"' }, payload: { title: 'no' },
      })
      assert.equal(stale.statusCode, 412)
      const patched = await app.inject({
        method: 'PATCH', url: '/tasks/1', headers: { ...alice, 'if-match': etag }, payload: { title: 'renamed' },
      })
      assert.equal(patched.statusCode, 200)
      assert.deepEqual(patched.json<TaskBody>().tags.map((tag) => tag.name), ['a-tag'])
      const stored = await db.selectFrom('tasks').select('title').where('id', '=', 1).executeTakeFirstOrThrow()
      assert.equal(stored.title, 'renamed')
    })

    test('a table no viewset serves has no rule, unless rulesFrom declares one', async (t) => {
      const open = await tenantsApp(t, dialect, { tags: false })
      const tags = (await open.app.inject({ url: '/tasks/1', headers: open.alice })).json<TaskBody>().tags
      assert.deepEqual(tags.map((tag) => tag.name), ['a-tag', 'b-tag'])

      const database = await testDatabase(t, dialect)
      await seed(database, dialect)
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      const declared = {
        ...taskRelations,
        prefetchRelated: {
          tags: { ...taskRelations.prefetchRelated.tags, rulesFrom: { scope: (eb: any, { token }: any) => eb('owner', '=', token?.sub ?? '') } },
        },
      }
      await app.register(createViewset({ db: database.db, ...owned('tasks', Task), relatedConfig: declared } as never), { prefix: '/tasks' })
      await app.ready()
      const alice = { authorization: `Bearer ${app.jwt.sign({ sub: 'alice' })}` }
      const ruled = (await app.inject({ url: '/tasks/1', headers: alice })).json<TaskBody>()
      assert.deepEqual(ruled.tags.map((tag) => tag.name), ['a-tag'])
      // projects has no viewset here: no rule (task 2's project, bob's, is read)
      assert.equal(ruled.project?.name, 'a-proj')
      const planted = (await app.inject({ url: '/tasks/2', headers: alice })).json<TaskBody>()
      assert.equal(planted.project?.name, 'b-proj')
    })

    test('two viewsets with different rules on one table: ready() fails and says to choose with rulesFrom', async (t) => {
      const database = await testDatabase(t, dialect)
      await seed(database, dialect)
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      await app.register(createViewset({ db: database.db, ...owned('tasks', Task), relatedConfig: taskRelations } as never), { prefix: '/tasks' })
      await app.register(createViewset({ db: database.db, ...owned('projects', ProjectRow) } as never), { prefix: '/projects' })
      await app.register(createViewset({ db: database.db, table: 'projects', schema: ProjectRow, name: 'AllProjects' } as never), { prefix: '/all-projects' })
      await assert.rejects(async () => await app.ready(), (error: Error & { code?: string }) => {
        assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
        assert.match(error.message, /relatedConfig\.selectRelated\.project/)
        assert.match(error.message, /"\/projects", "\/all-projects"/)
        assert.match(error.message, /rulesFrom/)
        return true
      })
    })

    test('rulesFrom names the viewset by prefix or instance, and an unknown prefix fails ready()', async (t) => {
      for (const pick of ['/projects', 'instance', '/all-projects'] as const) {
        const database = await testDatabase(t, dialect)
        await seed(database, dialect)
        const app = testApp(t)
        await app.register(fastifyJwt, { secret })
        const projects = new Viewset({ db: database.db, ...owned('projects', ProjectRow) } as never)
        const rulesFrom = pick === 'instance' ? projects : pick
        const project = { ...taskRelations.selectRelated.project, rulesFrom }
        const relatedConfig = { ...taskRelations, selectRelated: { project } }
        await app.register(createViewset({ db: database.db, ...owned('tasks', Task), relatedConfig } as never), { prefix: '/tasks' })
        await app.register(projects.register(), { prefix: '/projects' })
        await app.register(createViewset({ db: database.db, table: 'projects', schema: ProjectRow, name: 'AllProjects' } as never), { prefix: '/all-projects' })
        await app.ready()
        const alice = { authorization: `Bearer ${app.jwt.sign({ sub: 'alice' })}` }
        const tasks = (await app.inject({ url: '/tasks', headers: alice })).json<TaskBody[]>()
        // the unscoped /all-projects shows bob's project; the owners' rule does not
        assert.deepEqual(tasks.map((task) => task.project?.name ?? null), pick === '/all-projects' ? ['a-proj', 'b-proj'] : ['a-proj', null])
      }
      const database = await testDatabase(t, dialect)
      await seed(database, dialect)
      const app = testApp(t)
      const project = { ...taskRelations.selectRelated.project, rulesFrom: '/nowhere' }
      const relatedConfig = { ...taskRelations, selectRelated: { project } }
      await app.register(createViewset({ db: database.db, table: 'tasks', schema: Task, relatedConfig } as never), { prefix: '/tasks' })
      await assert.rejects(async () => await app.ready(), /relatedConfig\.selectRelated\.project\.rulesFrom.*\/nowhere/)
    })
  })
}
