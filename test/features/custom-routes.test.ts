import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { Kysely } from 'kysely'
import { createViewset, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { dialects } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'
import {
  owned, Project, projectRelations, secret, seedTenants, Tag, Task, taskRelations, plainMethods,
} from '../helpers/tenants.js'
import type { TenantsDB } from '../helpers/tenants.js'

// Custom routes are as first-class as the generated ones (issue 42, item 2): an action route `POST /tasks/:id/close`
// built from this.precondition(), this.update() and this.represent() answers a stale If-Match with 412 and a missing
// one under requireIfMatch with 428 exactly as PATCH does (nothing changed), and a good one with the row through the
// resource's serializer, its relations and its new ETag; another tenant's row is a 404.

interface IssuesDB extends TenantsDB {
  tasks: TenantsDB['tasks'] & { status: string }
}

const Issue = Type.Object({
  ...Task.properties,
  status: Type.Optional(Type.String({ readOnly: true })),
})

class TaskViewset extends Viewset<IssuesDB, 'tasks', typeof Issue> {
  override customRoutes (fastify: FastifyInstance) {
    const schema = this.routeSchema('POST', { operationId: 'closeTask', summary: 'Close a task', precondition: true })
    fastify.post<{ Params: { id: number } }>('/:id/close', { schema, config: { protected: true } },
      async (request, reply) => {
        const { id } = request.params
        const closed = await this.transaction(async (trx) =>
          await this.update(id, { status: 'closed' }, trx, this.precondition(request)))
        return await this.represent(reply, closed ?? this.notFound(id))
      })
    fastify.get('/closed', {
      schema: this.routeSchema('GET', { operationId: 'closedTasks', element: false, answer: 'rows' }),
      config: { protected: true },
    }, async (_request, reply) =>
      await this.representList(reply, await this.query().where('status', '=', 'closed').orderBy('id').execute()))
    // this.precondition() where no row is named: it throws instead of ignoring If-Match.
    fastify.post('/probe', { config: { protected: true } }, async (request) => {
      try {
        this.precondition(request)
        return { code: 'none' }
      } catch (error) {
        return { code: (error as { code?: string }).code, message: (error as Error).message }
      }
    })
  }
}

async function issuesApp (
  t: TestContext,
  dialect: TestDialect,
  { docs = false, ...options }: { requireIfMatch?: boolean; docs?: boolean; fieldAccess?: unknown } = {}
) {
  const database = await testDatabase(t, dialect)
  await seedTenants(database, dialect)
  const db = database.db as unknown as Kysely<IssuesDB>
  await db.schema.alterTable('tasks').addColumn('status', 'varchar(16)', (column) => column.notNull().defaultTo('open'))
    .execute()
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  if (docs) await app.register(viewsetDocs, {})
  const projects = { db, ...owned('projects', Project), relatedConfig: projectRelations }
  await app.register(createViewset(projects as unknown as ViewsetOptions<IssuesDB, 'projects', typeof Project>),
    { prefix: '/projects' })
  await app.register(createViewset({ db, ...owned('tags', Tag) } as ViewsetOptions<IssuesDB, 'tags', typeof Tag>),
    { prefix: '/tags' })
  const tasks = { db, ...owned('tasks', Issue), relatedConfig: taskRelations, methods: plainMethods, ...options }
  const viewset = new TaskViewset(tasks as unknown as ViewsetOptions<IssuesDB, 'tasks', typeof Issue>)
  await app.register(viewset.register(), { prefix: '/tasks' })
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { ...database, db, app, alice: bearer('alice'), bob: bearer('bob') }
}

async function statusOf (db: Kysely<IssuesDB>, id: number): Promise<string | undefined> {
  return (await db.selectFrom('tasks').select('status').where('id', '=', id).executeTakeFirst())?.status
}

for (const dialect of dialects) {
  describe(`custom action routes answer as PATCH does (${dialect.name})`, () => {
    test('represent and representList hide the fields the caller\'s field rules hide, as GET and LIST do', async (t) => {
      const fieldAccess = () => ({ hidden: ['secret'] })
      const { app, db, alice } = await issuesApp(t, dialect, { fieldAccess })
      const got = await app.inject({ method: 'GET', url: '/tasks/1', headers: alice })
      assert.equal('secret' in got.json(), false)
      const closed = await app.inject({
        method: 'POST', url: '/tasks/1/close', headers: { ...alice, 'if-match': String(got.headers.etag) },
      })
      assert.equal(closed.statusCode, 200)
      assert.equal('secret' in closed.json(), false)
      assert.equal(closed.body.includes('alice-secret'), false)
      assert.equal(await statusOf(db, 1), 'closed')
      const after = await app.inject({ method: 'GET', url: '/tasks/1', headers: alice })
      assert.equal(closed.body, after.body)
      assert.equal(closed.headers.etag, after.headers.etag)
      const listed = await app.inject({ method: 'GET', url: '/tasks/closed', headers: alice })
      assert.equal(listed.statusCode, 200)
      assert.deepEqual(listed.json().map((row: { id: number }) => row.id), [1])
      assert.equal(listed.body.includes('alice-secret'), false)
    })

    test('a stale If-Match is a 412 and changes nothing; a good one closes, with relations and the new ETag',
      async (t) => {
        const { app, db, alice } = await issuesApp(t, dialect)
        const before = await app.inject({ method: 'GET', url: '/tasks/1', headers: alice })
        assert.equal(before.statusCode, 200)
        const etag = String(before.headers.etag)
        const stale = await app.inject({
          method: 'POST', url: '/tasks/1/close', headers: { ...alice, 'if-match': '"stale"' },
        })
        assert.equal(stale.statusCode, 412)
        assert.equal(problemOf(stale).code, 'FST_VIEWSET_PRECONDITION_FAILED')
        assert.equal(stale.headers['content-type'], 'application/problem+json; charset=utf-8')
        assert.equal(await statusOf(db, 1), 'open')

        const closed = await app.inject({ method: 'POST', url: '/tasks/1/close', headers: { ...alice, 'if-match': etag } })
        assert.equal(closed.statusCode, 200)
        assert.equal(closed.headers['content-type'], 'application/json; charset=utf-8')
        const body = closed.json()
        assert.equal(body.status, 'closed')
        assert.equal(body.id, 1)
        // The relations, loaded under the caller's rules: alice's project, and only alice's tag of the two.
        assert.deepEqual(body.project, { id: 1, name: 'a-proj', owner: 'alice' })
        assert.deepEqual(body.tags.map((tag: { name: string }) => tag.name), ['a-tag'])
        assert.equal(await statusOf(db, 1), 'closed')
        const after = await app.inject({ method: 'GET', url: '/tasks/1', headers: alice })
        assert.notEqual(closed.headers.etag, etag)
        assert.equal(closed.headers.etag, after.headers.etag, 'the ETag GET serves now')
        assert.equal(closed.body, after.body, 'the bytes GET serves, through the same serializer')

        // A closed task reached again with the old tag: 412, nothing changes.
        const again = await app.inject({ method: 'POST', url: '/tasks/1/close', headers: { ...alice, 'if-match': etag } })
        assert.equal(again.statusCode, 412)
        // Without If-Match (no requireIfMatch): no condition.
        const open = await app.inject({ method: 'POST', url: '/tasks/5/close', headers: alice })
        assert.equal(open.statusCode, 200)
        assert.equal(await statusOf(db, 5), 'closed')
      })

    test("another tenant's row is a 404, with or without If-Match, and it stays open", async (t) => {
      const { app, db, bob, alice } = await issuesApp(t, dialect)
      const etag = String((await app.inject({ method: 'GET', url: '/tasks/1', headers: alice })).headers.etag)
      for (const headers of [bob, { ...bob, 'if-match': etag }, { ...bob, 'if-match': '*' }]) {
        const response = await app.inject({ method: 'POST', url: '/tasks/1/close', headers })
        assert.equal(response.statusCode, 404)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_NOT_FOUND')
        assert.equal(response.headers.etag, undefined)
      }
      assert.equal(await statusOf(db, 1), 'open')
      const missing = await app.inject({ method: 'POST', url: '/tasks/999/close', headers: alice })
      assert.equal(missing.statusCode, 404)
    })

    test('under requireIfMatch, no If-Match is a 428 and changes nothing; 404 comes first', async (t) => {
      const { app, db, alice, bob } = await issuesApp(t, dialect, { requireIfMatch: true })
      const missing = await app.inject({ method: 'POST', url: '/tasks/1/close', headers: alice })
      assert.equal(missing.statusCode, 428)
      assert.equal(problemOf(missing).code, 'FST_VIEWSET_PRECONDITION_REQUIRED')
      assert.equal(await statusOf(db, 1), 'open')
      assert.equal((await app.inject({ method: 'POST', url: '/tasks/1/close', headers: bob })).statusCode, 404)
      const etag = String((await app.inject({ method: 'GET', url: '/tasks/1', headers: alice })).headers.etag)
      const closed = await app.inject({ method: 'POST', url: '/tasks/1/close', headers: { ...alice, 'if-match': etag } })
      assert.equal(closed.statusCode, 200)
      assert.equal(await statusOf(db, 1), 'closed')
    })

    test('representList answers rows through the serializer with their relations, inside the rule', async (t) => {
      const { app, db, alice, bob } = await issuesApp(t, dialect)
      await db.updateTable('tasks').set({ status: 'closed' }).execute()
      const mine = await app.inject({ method: 'GET', url: '/tasks/closed', headers: alice })
      assert.equal(mine.statusCode, 200)
      assert.equal(mine.headers['content-type'], 'application/json; charset=utf-8')
      const rows = mine.json()
      assert.deepEqual(rows.map((row: { id: number }) => row.id), [1, 2, 5])
      // Task 2 is planted in bob's project: its project is hidden from alice (null), its tags only hers.
      assert.deepEqual(rows.map((row: { project: { id: number } | null }) => row.project?.id ?? null), [1, null, 3])
      assert.ok(rows.every((row: { tags: Array<{ owner: string }> }) => row.tags.every((tag) => tag.owner === 'alice')))
      const list = await app.inject({ method: 'GET', url: '/tasks', headers: alice })
      assert.equal(mine.body, list.body, 'the bytes LIST serves')
      const theirs = await app.inject({ method: 'GET', url: '/tasks/closed', headers: bob })
      assert.deepEqual(theirs.json().map((row: { id: number }) => row.id), [3, 4])
    })

    test('this.precondition() on a route that names no row throws FST_VIEWSET_PRECONDITION_NOT_APPLICABLE',
      async (t) => {
        const { app, alice } = await issuesApp(t, dialect)
        const response = await app.inject({ method: 'POST', url: '/tasks/probe', headers: { ...alice, 'if-match': '"1"' } })
        assert.equal(response.statusCode, 200)
        assert.equal(response.json().code, 'FST_VIEWSET_PRECONDITION_NOT_APPLICABLE')
        assert.match(response.json().message, /POST \/tasks\/probe: the route has no :id parameter/)
      })

    test('routeSchema documents the action route: the key, If-Match, the row with its ETag, 404, 412, 428', async (t) => {
      const { app, db } = await issuesApp(t, dialect, { requireIfMatch: true, docs: true })
      const document = app.swagger() as any
      const close = document.paths['/tasks/{id}/close'].post
      assert.equal(close.operationId, 'closeTask')
      assert.deepEqual(close.parameters.filter((p: any) => p.in === 'path').map((p: any) => [p.name, p.schema.type]),
        [['id', 'integer']])
      assert.ok(close.parameters.some((p: any) => p.in === 'header' && p.name === 'if-match'))
      const statuses = Object.keys(close.responses)
      for (const status of ['200', '401', '403', '404', '409', '412', '428', '500', '503']) {
        assert.ok(statuses.includes(status), `${status} in ${statuses.join(', ')}`)
      }
      assert.ok(close.responses['200'].headers.ETag)
      assert.match(JSON.stringify(close.responses['200'].content), /Tasks/)
      assert.ok(close.security.length > 0)
      const closed = document.paths['/tasks/closed'].get
      assert.equal(closed.responses['200'].content['application/json'].schema.type, 'array')
      assert.ok(!('404' in closed.responses) && !('412' in closed.responses))
      const viewset = new TaskViewset({ db, table: 'tasks', schema: Issue })
      assert.throws(() => viewset.routeSchema('POST', { operationId: 'x' }), /not registered yet/)
    })
  })
}
