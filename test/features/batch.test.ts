import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { createViewset, viewsetBatch, viewsetDocs, ViewsetErrors } from 'fastify-viewsets'
import type { AfterWriteFunction, ViewsetBatchOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { redoclyProblems, spectralProblems } from '../helpers/openapi-lint.js'
import { owned, seedTenants, Tag, Task, taskRelations, tenantsApp } from '../helpers/tenants.js'
import type { TenantsApp, TenantsDB } from '../helpers/tenants.js'

// The atomic batch (issue 38 item 3): POST /batch runs writes on several viewsets in one transaction, each exactly as
// its single route (validation, token, authorize, rules, beforeWrite/afterWrite, serializers), later operations
// taking values of earlier results by reference. Any failure answers that operation's status with errors named under
// /operations/<index>, and nothing is written. Two tenants: another's row is a 404, as on the single route.

interface AuditDB extends TenantsDB {
  audit: { method: string; who: string; task_id: number; title: string | null }
}

const audit: AfterWriteFunction<AuditDB, { id: number; title: string }> = async ({ method, token }, change, trx) => {
  const row = change.after ?? change.before
  await trx.insertInto('audit')
    .values({ method, who: token?.sub ?? '', task_id: Number(row?.id), title: change.after?.title ?? null })
    .execute()
  if (change.after?.title === 'refused') throw new ViewsetErrors.Conflict('refused by afterWrite')
}

async function batchApp (t: TestContext, dialect: TestDialect, options?: ViewsetBatchOptions): Promise<TenantsApp> {
  return await tenantsApp(t, dialect, {
    prepare: async (db) => {
      await db.schema.createTable('audit').addColumn('method', 'varchar(16)', (column) => column.notNull())
        .addColumn('who', 'varchar(64)', (column) => column.notNull())
        .addColumn('task_id', 'integer', (column) => column.notNull())
        .addColumn('title', 'varchar(64)').execute()
    },
    tasks: {
      afterWrite: audit,
      requireIfMatch: false,
      // bob may not delete tasks, even his own: a 403 of the single route, and of a batch operation.
      authorize: (token: { sub?: string }, method: string) => !(token.sub === 'bob' && method === 'DELETE'),
    },
    extra: async (app) => { await app.register(viewsetBatch(options)) },
  })
}

type Operation = { method: string; path: string; body?: unknown; headers?: Record<string, string> }

async function batch (app: TenantsApp, operations: Operation[], headers: Record<string, string> = app.alice) {
  return await app.app.inject({ method: 'POST', url: '/batch', headers, payload: { operations } })
}

/** Every row of the tables a batch writes, to compare before and after. */
async function state (app: TenantsApp) {
  const db = app.db
  const rows = async (table: string) =>
    (await db.selectFrom(table).selectAll().execute()).map((row) => JSON.stringify(row)).sort()
  return {
    projects: await rows('projects'),
    tasks: await rows('tasks'),
    tags: await rows('tags'),
    audit: await rows('audit'),
  }
}

for (const dialect of dialects) {
  describe(`viewsetBatch on ${dialect.name}`, () => {
    test('operations on two viewsets commit together; a reference takes an earlier result\'s id', async (t) => {
      const app = await batchApp(t, dialect)
      const response = await batch(app, [
        { method: 'POST', path: '/projects', body: { name: 'new-proj' } },
        { method: 'POST', path: '/tasks', body: { title: 'new-task', project_id: { $result: 0, pointer: '/id' } } },
        { method: 'PATCH', path: '/tasks/1', body: { title: 'renamed' } },
        { method: 'DELETE', path: '/tasks/5' },
      ])
      assert.equal(response.statusCode, 200, response.body)
      const { results } = response.json()
      assert.deepEqual(results.map((result: { status: number }) => result.status), [201, 201, 200, 204])
      const project = results[0].body
      assert.equal(project.owner, 'alice', 'beforeWrite stamped the owner, as on the single route')
      assert.equal(results[0].headers.location, `/projects/${project.id}`)
      assert.equal(results[1].body.project_id, project.id)
      assert.equal(results[1].body.project.name, 'new-proj', 'the serializer loaded the relation, in the transaction')
      assert.equal(results[3].body, null)
      assert.deepEqual(results[3].headers, {})
      const stored = await app.db.selectFrom('tasks').select(['id', 'title', 'owner', 'project_id']).orderBy('id')
        .execute()
      assert.deepEqual(stored.map((row) => [Number(row.id), row.title, row.owner]), [
        [1, 'renamed', 'alice'], [2, 'a-task-2', 'alice'], [3, 'b-task-3', 'bob'], [4, 'b-task-4', 'bob'],
        [6, 'new-task', 'alice'],
      ])
      assert.equal(Number(stored[4]?.project_id), project.id)
      const audited = await app.db.selectFrom('audit').select(['method', 'who', 'task_id']).orderBy('method').execute()
      assert.deepEqual(audited.map((row) => [row.method, row.who, Number(row.task_id)]),
        [['DELETE', 'alice', 5], ['PATCH', 'alice', 1], ['POST', 'alice', 6]])
    })

    test('results carry the Location and ETag the single routes send', async (t) => {
      const app = await batchApp(t, dialect)
      const response = await batch(app, [
        { method: 'POST', path: '/projects', body: { name: 'batched' } },
        { method: 'PUT', path: '/projects/1', body: { name: 'a-proj-put' } },
      ])
      assert.equal(response.statusCode, 200, response.body)
      const [created, put] = response.json().results
      const single = await app.app.inject({ method: 'POST', url: '/projects', headers: app.alice, payload: { name: 'single' } })
      assert.equal(single.statusCode, 201)
      assert.equal(created.headers.location, `/projects/${created.body.id}`)
      assert.equal(single.headers.location, `/projects/${single.json().id}`)
      for (const [result, id] of [[created, created.body.id], [put, 1]]) {
        const read = await app.app.inject({ url: `/projects/${id}`, headers: app.alice })
        assert.equal(result.headers.etag, read.headers.etag, `the ETag of /projects/${id}`)
        assert.deepEqual(result.body, read.json())
      }
    })

    test('a failing If-Match after a reference fails the batch with 412 and leaves nothing written', async (t) => {
      const app = await batchApp(t, dialect)
      const before = await state(app)
      const response = await batch(app, [
        { method: 'POST', path: '/projects', body: { name: 'doomed' } },
        { method: 'POST', path: '/tasks', body: { title: 'doomed', project_id: { $result: 0, pointer: '/id' } } },
        { method: 'PATCH', path: '/tasks/1', body: { title: 'doomed' }, headers: { 'if-match': '"not-the-tag"' } },
      ])
      const problem = problemOf(response)
      assert.equal(response.statusCode, 412)
      assert.equal(problem.code, 'FST_VIEWSET_PRECONDITION_FAILED')
      assert.ok(problem.errors?.every((error) => error.field.startsWith('/operations/2')), JSON.stringify(problem))
      assert.deepEqual(await state(app), before, 'no project, no task, no audit row')
    })

    test('another tenant\'s row is a 404 naming its operation, nothing written', async (t) => {
      const app = await batchApp(t, dialect)
      const before = await state(app)
      const response = await batch(app, [
        { method: 'POST', path: '/projects', body: { name: 'doomed' } },
        { method: 'PATCH', path: '/tasks/3', body: { title: 'stolen' } },
      ])
      assert.equal(response.statusCode, 404)
      const problem = problemOf(response)
      assert.equal(problem.code, 'FST_VIEWSET_NOT_FOUND')
      assert.deepEqual(problem.errors?.map((error) => error.field), ['/operations/1'])
      assert.deepEqual(await state(app), before)
      // bob's own batch reaches his row: the rule is the caller's.
      const bobs = await batch(app, [{ method: 'PATCH', path: '/tasks/3', body: { title: 'bobs' } }], app.bob)
      assert.equal(bobs.statusCode, 200, bobs.body)
    })

    test('a 403 or 401 of one operation fails the batch', async (t) => {
      const app = await batchApp(t, dialect)
      const before = await state(app)
      const forbidden = await batch(app, [
        { method: 'POST', path: '/projects', body: { name: 'doomed' } },
        { method: 'DELETE', path: '/tasks/3' },
      ], app.bob)
      assert.equal(forbidden.statusCode, 403)
      assert.equal(problemOf(forbidden).code, 'FST_VIEWSET_FORBIDDEN')
      assert.equal(problemOf(forbidden).errors?.[0]?.field, '/operations/1')
      const anonymous = await batch(app, [{ method: 'POST', path: '/projects', body: { name: 'doomed' } }], {})
      assert.equal(anonymous.statusCode, 401)
      assert.equal(problemOf(anonymous).errors?.[0]?.field, '/operations/0')
      assert.deepEqual(await state(app), before)
    })

    test('afterWrite\'s rows commit and roll back with the batch', async (t) => {
      const app = await batchApp(t, dialect)
      const before = await state(app)
      const refused = await batch(app, [
        { method: 'POST', path: '/tasks', body: { title: 'kept?', project_id: 1 } },
        { method: 'POST', path: '/tasks', body: { title: 'refused', project_id: 1 } },
      ])
      assert.equal(refused.statusCode, 409)
      assert.equal(problemOf(refused).errors?.[0]?.field, '/operations/1')
      assert.deepEqual(await state(app), before, 'the first task and its audit row rolled back')
      const kept = await batch(app, [
        { method: 'POST', path: '/tasks', body: { title: 'kept', project_id: 1 } },
        { method: 'PATCH', path: '/tasks/2', body: { title: 'kept-2' } },
      ])
      assert.equal(kept.statusCode, 200, kept.body)
      assert.equal((await state(app)).audit.length, 2)
    })

    test('an operation\'s invalid body and a bad reference are 400s named by pointer, nothing written', async (t) => {
      const app = await batchApp(t, dialect)
      const before = await state(app)
      const invalid = await batch(app, [
        { method: 'POST', path: '/projects', body: { name: 'doomed' } },
        { method: 'POST', path: '/tasks', body: { project_id: 1 } },
      ])
      assert.equal(invalid.statusCode, 400)
      assert.deepEqual(problemOf(invalid).errors?.map((error) => error.field), ['/operations/1/body/title'])
      const references = [{ $result: 1, pointer: '/id' }, { $result: 0, pointer: '/nope' }, { $result: -1, pointer: '/id' }]
      for (const reference of references) {
        const response = await batch(app, [
          { method: 'POST', path: '/projects', body: { name: 'doomed' } },
          { method: 'POST', path: '/tasks', body: { title: 'x', project_id: reference } },
        ])
        assert.equal(response.statusCode, 400, JSON.stringify(reference))
        assert.deepEqual(problemOf(response).errors?.map((error) => error.field), ['/operations/1/body/project_id'])
      }
      assert.deepEqual(await state(app), before)
    })

    test('the batch body is checked before anything runs: methods, paths, headers, maxOperations', async (t) => {
      const app = await batchApp(t, dialect, { maxOperations: 3 })
      const before = await state(app)
      const post = { method: 'POST', path: '/projects', body: { name: 'doomed' } }
      const cases: Array<[Operation[], string]> = [
        [[post, post, post, post], '/operations'],
        [[post, { method: 'GET', path: '/projects' }], '/operations/1/method'],
        [[post, { ...post, path: '/batch' }], '/operations/1/path'],
        [[post, { ...post, path: '/elsewhere' }], '/operations/1/path'],
        [[post, { ...post, headers: { authorization: 'Bearer x' } }], '/operations/1/headers/authorization'],
      ]
      for (const [operations, field] of cases) {
        const response = await batch(app, operations)
        assert.equal(response.statusCode, 400, field)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
        assert.deepEqual(problemOf(response).errors?.map((error) => error.field), [field])
      }
      assert.equal((await batch(app, [])).statusCode, 400)
      const text = await app.app.inject({
        method: 'POST',
        url: '/batch',
        headers: { 'content-type': 'text/plain' },
        payload: 'operations'
      })
      assert.equal(text.statusCode, 415)
      const get = await app.app.inject({ url: '/batch' })
      assert.equal(get.statusCode, 405)
      assert.equal(get.headers.allow, 'POST')
      assert.equal(problemOf(get).code, 'FST_VIEWSET_METHOD_NOT_ALLOWED')
      const options = await app.app.inject({ method: 'OPTIONS', url: '/batch' })
      assert.deepEqual([options.statusCode, options.headers.allow], [204, 'POST'])
      assert.deepEqual(await state(app), before)
    })

    test('batches and single requests at once: each batch whole, none waits for ever', async (t) => {
      const app = await batchApp(t, dialect)
      const pair = (name: string) => [
        { method: 'POST', path: '/projects', body: { name } },
        { method: 'POST', path: '/tasks', body: { title: name, project_id: { $result: 0, pointer: '/id' } } },
      ]
      const doomed = [...pair('doomed'), { method: 'DELETE', path: '/tasks/3' }]
      const answers = await Promise.all([
        batch(app, pair('first')),
        batch(app, doomed),
        app.app.inject({ method: 'POST', url: '/projects', headers: app.alice, payload: { name: 'single' } }),
        app.app.inject({ url: '/projects', headers: app.alice }),
        batch(app, pair('second')),
      ])
      assert.deepEqual(answers.map((answer) => answer.statusCode), [200, 404, 201, 200, 200])
      const names = (await app.db.selectFrom('projects').select('name').execute()).map((row) => row.name).sort()
      assert.deepEqual(names, ['a-proj', 'b-proj', 'first', 'second', 'single', 'z-proj'])
      const tasks = await app.db.selectFrom('tasks').select('title').where('title', 'in', ['first', 'second', 'doomed'])
        .execute()
      assert.deepEqual(tasks.map((row) => row.title).sort(), ['first', 'second'])
    })

    test('an operation on a nested viewset keeps to its parent, which must be the caller\'s', async (t) => {
      const app = await tenantsApp(t, dialect, {
        extra: async (instance, db) => {
          const parent = { projectId: 'project_id' } as const
          const nested = { db, ...owned('tasks', Task), relatedConfig: taskRelations, parent }
          await instance.register(createViewset(nested as typeof nested & { table: 'tasks', schema: typeof Task }),
            { prefix: '/projects/:projectId/tasks' })
          await instance.register(viewsetBatch())
        },
      })
      const response = await batch(app, [
        { method: 'POST', path: '/projects/1/tasks', body: { title: 'nested' } },
        { method: 'PATCH', path: '/projects/1/tasks/1', body: { title: 'nested-1' } },
      ])
      assert.equal(response.statusCode, 200, response.body)
      const [created] = response.json().results
      assert.equal(created.headers.location, `/projects/1/tasks/${created.body.id}`)
      assert.equal(created.body.project_id, 1)
      const before = await app.db.selectFrom('tasks').selectAll().orderBy('id').execute()
      const bobs = await batch(app, [
        { method: 'POST', path: '/projects/1/tasks', body: { title: 'doomed' } },
        { method: 'POST', path: '/projects/2/tasks', body: { title: 'doomed' } },
      ])
      assert.equal(bobs.statusCode, 404)
      assert.deepEqual(problemOf(bobs).errors?.map((error) => error.field), ['/operations/1'])
      assert.deepEqual(await app.db.selectFrom('tasks').selectAll().orderBy('id').execute(), before)
    })

    test('maxOperations defaults to 100', async (t) => {
      const app = await batchApp(t, dialect)
      const operations = Array.from({ length: 101 }, (_, index) => ({
        method: 'POST', path: '/projects', body: { name: `t${index}` },
      }))
      const response = await batch(app, operations)
      assert.equal(response.statusCode, 400)
      assert.deepEqual(problemOf(response).errors?.map((error) => error.field), ['/operations'])
      const hundred = await batch(app, operations.slice(0, 100))
      assert.equal(hundred.statusCode, 200)
      assert.equal((await app.db.selectFrom('projects').select('id').execute()).length, 103)
    })

    test('viewsets over several databases make ready() fail, naming them; unknown options fail at once', async (t) => {
      const one = await testDatabase(t, dialect)
      const other = await testDatabase(t, dialect)
      const [idType, id] = autoIncrement(dialect.name)
      for (const database of [one, other]) {
        await database.db.schema.createTable('tags').addColumn('id', idType as 'integer', id)
          .addColumn('name', 'varchar(64)', (column) => column.notNull())
          .addColumn('owner', 'varchar(64)', (column) => column.notNull()).execute()
      }
      const app = testApp(t)
      await app.register(createViewset({ db: one.db, table: 'tags', schema: Tag }), { prefix: '/one' })
      await app.register(createViewset({ db: other.db, table: 'tags', schema: Tag }), { prefix: '/other' })
      await app.register(viewsetBatch())
      await assert.rejects(async () => { await app.ready() }, (error: Error & { code?: string }) => {
        assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
        assert.match(error.message, /\/one \(database 1\); \/other \(database 2\)/)
        return true
      })
      // @ts-expect-error an unknown key of the idempotency options, named under viewsetBatch
      assert.throws(() => viewsetBatch({ idempotency: { tabel: 'x' } }), /viewsetBatch\.idempotency\.tabel: unknown key/)
      assert.throws(() => viewsetBatch({ maxOperations: 0 }), /viewsetBatch\.maxOperations/)
    })
  })
}

test('OpenAPI documents POST /batch: its operations, results and errors; Redocly and Spectral find no error', async (t) => {
  const [dialect] = dialects
  assert.ok(dialect)
  const database = await testDatabase(t, dialect)
  await seedTenants(database, dialect)
  const app = testApp(t)
  await app.register(viewsetDocs, { title: 'Batch', version: '1.0.0' })
  await app.register(createViewset({ db: database.db, table: 'tags', schema: Tag }), { prefix: '/tags' })
  await app.register(viewsetBatch({ maxOperations: 20 }))
  await app.ready()
  const document = (await app.inject('/docs/json')).json()
  const batch = document.paths['/batch']?.post
  assert.ok(batch, 'POST /batch is in the document')
  assert.equal(batch.operationId, 'batch')
  const body = batch.requestBody.content['application/json'].schema
  assert.equal(body.properties.operations.maxItems, 20)
  assert.deepEqual(body.properties.operations.items.properties.method.enum, ['POST', 'PUT', 'PATCH', 'DELETE'])
  assert.deepEqual(Object.keys(body.properties.operations.items.properties.headers.properties), ['if-match'])
  const result = batch.responses['200'].content['application/json'].schema.properties.results.items
  assert.deepEqual(Object.keys(result.properties.headers.properties), ['location', 'etag'])
  for (const status of ['400', '401', '403', '404', '409', '412', '428', '503']) {
    assert.ok(batch.responses[status]?.content['application/problem+json'], `the ${status} problem`)
  }
  const errors = [...await redoclyProblems(document), ...await spectralProblems(document)]
    .filter((problem) => problem.severity === 'error' || problem.severity === '0')
  assert.deepEqual(errors, [])
  const warnings = [...await redoclyProblems(document), ...await spectralProblems(document)]
    .filter((problem) => problem.pointer.includes('batch'))
  assert.deepEqual(warnings, [], 'no warning on /batch either')
})

test('an app with no viewset fails ready() naming viewsetBatch', async (t) => {
  const app = testApp(t)
  await app.register(viewsetBatch())
  await assert.rejects(async () => { await app.ready() }, /viewsetBatch: no viewset is registered/)
})
