import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { compileErrors, validate } from '@readme/openapi-parser'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import fastifyJwt from '@fastify/jwt'
import { createViewset, fieldAccessByRole, Viewset, viewsetDocs } from 'fastify-viewsets'
import { testApp } from '../helpers/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { owned, ownerRule, secret, seedTenants, Tag, Task, taskRelations, tenantsApp } from '../helpers/tenants.js'
import type { TenantsOptions } from '../helpers/tenants.js'

// Field rules per request (issue 35, item 5): "support staff see tickets but not customer_email; only admins may
// change priority". Tasks are the tickets: `secret` is the customer's e-mail, `priority` a column added here. Support
// staff may not read `secret` (nor, through tasks' relation, a project's `name`) and may not write `priority`.

const Ticket = Type.Object({ ...Task.properties, priority: Type.Optional(Type.Integer()) })

const roleOf = (token: Record<string, unknown> | null) => String(token?.role ?? '')
const ticketRules = fieldAccessByRole({ admin: {}, support: { hidden: ['secret'], readOnly: ['priority'] } }, roleOf)
const projectRules = fieldAccessByRole({ admin: {}, support: { hidden: ['name'] } }, roleOf)

/** The tenants' app with field rules on tasks and projects, and tokens per tenant and role. */
async function ticketsApp (
  t: TestContext,
  dialect: TestDialect,
  tasks: Record<string, unknown> = {},
  extra?: TenantsOptions['extra']
) {
  const tenants = await tenantsApp(t, dialect, {
    prepare: async (db) => {
      await db.schema.alterTable('tasks').addColumn('priority', 'integer', (column) => column.notNull().defaultTo(0))
        .execute()
      await db.schema.createIndex('tasks_title').on('tasks').column('title').unique().execute()
    },
    tasks: {
      schema: Ticket,
      fieldAccess: ticketRules,
      filterFields: { title: ['eq'], secret: ['eq', 'contains'], 'project.name': ['eq', 'contains'] },
      orderingFields: ['id', 'title', 'secret'],
      searchFields: ['title', 'secret'],
      conflictFields: ['title'],
      ...tasks,
    },
    projects: { fieldAccess: projectRules },
    ...(extra === undefined ? {} : { extra }),
  })
  const { app } = tenants
  const bearer = (sub: string, role: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub, role })}` })
  return {
    ...tenants,
    admin: bearer('alice', 'admin'),
    support: bearer('alice', 'support'),
    bobSupport: bearer('bob', 'support'),
  }
}

/** A 400 body whose offending name is `from`, spelled as `to`: what the same request naming `to` answers. */
function renamed (body: string, from: string, to: string): string {
  return body.replaceAll(from, to)
}

for (const dialect of dialects) {
  describe(`fieldAccess (${dialect.name})`, () => {
    test('support staff read tickets without the hidden field; admins read it', async (t) => {
      const { app, admin, support } = await ticketsApp(t, dialect)
      const listed = await app.inject({ url: '/tasks?order_by=id', headers: support })
      assert.equal(listed.statusCode, 200)
      const rows = listed.json<Array<Record<string, unknown>>>()
      assert.deepEqual(rows.map((row) => row.id), [1, 2, 5])
      for (const row of rows) assert.equal('secret' in row, false)
      assert.equal(listed.body.includes('alice-secret'), false)
      const got = await app.inject({ url: '/tasks/1', headers: support })
      assert.equal(got.statusCode, 200)
      assert.equal('secret' in got.json(), false)
      assert.equal(got.json().title, 'a-task-1')
      const full = await app.inject({ url: '/tasks/1', headers: admin })
      assert.equal(full.json().secret, 'alice-secret-1')
      assert.notEqual(full.headers.etag, got.headers.etag)
    })

    test('a hidden name is an unknown name: filters, ordering, fields, search, relation paths (the same 400)', async (t) => {
      const { app, admin, support } = await ticketsApp(t, dialect)
      const ask = async (url: string, headers = support) => await app.inject({ url, headers })
      // The same request naming a field no schema has: the body differs only by the name.
      const pairs: Array<[string, string, string, string]> = [
        ['/tasks?secret__contains=alice', '/tasks?sekret__contains=alice', 'secret', 'sekret'],
        ['/tasks?secret=alice-secret-1', '/tasks?sekret=alice-secret-1', 'secret', 'sekret'],
        ['/tasks?project.name__contains=a', '/tasks?project.nome__contains=a', 'project.name', 'project.nome'],
        ['/tasks?project.name=a-proj', '/tasks?project.nome=a-proj', 'project.name', 'project.nome'],
      ]
      for (const [hidden, unknown, from, to] of pairs) {
        const refused = await ask(hidden)
        assert.equal(refused.statusCode, 400, hidden)
        assert.equal(refused.headers['content-type'], 'application/problem+json; charset=utf-8')
        assert.equal(refused.json().code, 'FST_VIEWSET_VALIDATION')
        assert.equal(renamed(refused.body, from, to), (await ask(unknown)).body, hidden)
        // an admin may name it
        assert.equal((await ask(hidden, admin)).statusCode, 200, hidden)
      }
      // `fields` and `order_by` name fields in their values: the body of a name no schema has, allowed names and all.
      for (const [hidden, unknown] of [
        ['/tasks?fields=id,secret', '/tasks?fields=id,sekret'],
        ['/tasks/1?fields=id,secret', '/tasks/1?fields=id,sekret'],
        ['/tasks?order_by=-secret', '/tasks?order_by=-sekret'],
        ['/tasks?order_by=title,secret', '/tasks?order_by=title,sekret'],
      ] as const) {
        const refused = await ask(hidden)
        assert.equal(refused.statusCode, 400, hidden)
        const answer = (await ask(unknown)).body
        assert.equal(renamed(refused.body, 'secret', 'sekret'), answer, hidden)
        assert.equal(answer.includes('secret'), false, 'the allowed names leave it out')
        assert.equal((await ask(hidden, admin)).statusCode, 200, hidden)
      }
      // search runs over the visible fields only: the secret matches nothing for support, everything for admins
      const searched = await ask('/tasks?search=alice-secret')
      assert.equal(searched.statusCode, 200)
      assert.deepEqual(searched.json(), [])
      const adminSearch = await ask('/tasks?search=alice-secret', admin)
      assert.equal(adminSearch.json().length, 3, adminSearch.body)
      assert.equal((await ask('/tasks?search=a-task')).json().length, 3)
    })

    test('a return=minimal write tags the row as the caller is served it (its GET ETag)', async (t) => {
      const { app, support } = await ticketsApp(t, dialect)
      const patched = await app.inject({
        method: 'PATCH', url: '/tasks/1', headers: { ...support, prefer: 'return=minimal' }, payload: { title: 'renamed' },
      })
      assert.equal(patched.statusCode, 204)
      assert.equal(patched.body, '')
      const got = await app.inject({ url: '/tasks/1', headers: support })
      assert.equal(got.json().title, 'renamed')
      assert.equal(patched.headers.etag, got.headers.etag)
    })

    test('a hidden name is unknown inside or/and/not groups and to the new operators (issue 37 terms)', async (t) => {
      const { app, admin, support } = await ticketsApp(t, dialect, {
        filterFields: { title: ['eq', 'startswith'], secret: ['eq', 'nin', 'startswith', 'endswith'] },
      })
      const ask = async (url: string, headers = support) => await app.inject({ url, headers })
      for (const [hidden, unknown] of [
        ['/tasks?or=(title.a-task-1,secret.alice-secret-1)', '/tasks?or=(title.a-task-1,sekret.alice-secret-1)'],
        ['/tasks?not.and=(secret__startswith.alice)', '/tasks?not.and=(sekret__startswith.alice)'],
        ['/tasks?and=(title__startswith.a,or(secret__endswith.1))', '/tasks?and=(title__startswith.a,or(sekret__endswith.1))'],
      ] as const) {
        const refused = await ask(hidden)
        assert.equal(refused.statusCode, 400, hidden)
        assert.equal(refused.json().code, 'FST_VIEWSET_VALIDATION')
        assert.equal(refused.body.includes('alice-secret'), false)
        assert.equal(renamed(refused.body, 'secret', 'sekret'), (await ask(unknown)).body, hidden)
        assert.equal((await ask(hidden, admin)).statusCode, 200, hidden)
      }
      for (const [hidden, unknown] of [
        ['/tasks?secret__startswith=alice', '/tasks?sekret__startswith=alice'],
        ['/tasks?secret__nin=x', '/tasks?sekret__nin=x'],
      ] as const) {
        const refused = await ask(hidden)
        assert.equal(refused.statusCode, 400, hidden)
        assert.equal(renamed(refused.body, 'secret', 'sekret'), (await ask(unknown)).body, hidden)
      }
      // the admin's group finds alice's first ticket by its secret; support's visible terms still work
      const found = await ask('/tasks?or=(secret.alice-secret-1,title.none)', admin)
      assert.deepEqual(found.json<Array<{ id: number }>>().map((row) => row.id), [1])
      const visible = await ask('/tasks?or=(title.a-task-1,title.none)')
      assert.deepEqual(visible.json<Array<{ id: number }>>().map((row) => row.id), [1])
      assert.equal(visible.body.includes('secret'), false)
    })

    test('relations of other viewsets apply the related table\'s field rule (GET to-one, LIST to-many)', async (t) => {
      const { app, admin, support } = await ticketsApp(t, dialect)
      // projects → tasks (to-many): the tasks' 'LIST' rule hides secret from support
      const project = await app.inject({ url: '/projects/1', headers: support })
      assert.equal(project.statusCode, 200)
      const tasks = project.json().tasks as Array<Record<string, unknown>>
      assert.deepEqual(tasks.map((task) => task.id), [1])
      for (const task of tasks) assert.equal('secret' in task, false)
      // and projects' own rule hides its name from support
      assert.equal('name' in project.json(), false)
      const listed = await app.inject({ url: '/projects', headers: support })
      assert.equal(listed.body.includes('secret'), false)
      assert.equal(listed.body.includes('a-proj'), false)
      // tasks → project (to-one): the projects' 'GET' rule
      const task = await app.inject({ url: '/tasks/1', headers: support })
      assert.deepEqual(task.json().project, { id: 1, owner: 'alice' })
      const page = await app.inject({ url: '/tasks?fields=id,project', headers: support })
      assert.deepEqual(page.json(), [
        { id: 1, project: { id: 1, owner: 'alice' } },
        { id: 2, project: null },
        { id: 5, project: { id: 3, owner: 'alice' } },
      ])
      // admins read everything, at every level
      const full = await app.inject({ url: '/projects/1', headers: admin })
      assert.equal(full.json().name, 'a-proj')
      assert.equal(full.json().tasks[0].secret, 'alice-secret-1')
    })

    test('writes: a hidden field in a body is an unknown field; a read-only one is ignored', async (t) => {
      const { app, db, admin, support } = await ticketsApp(t, dialect)
      const post = async (payload: object, headers = support, url = '/tasks') =>
        await app.inject({ method: 'POST', url, payload, headers })
      const hidden = await post({ title: 'new', project_id: 1, secret: 'x' })
      const unknown = await post({ title: 'new', project_id: 1, sekret: 'x' })
      assert.equal(hidden.statusCode, 400)
      assert.equal(renamed(hidden.body, 'secret', 'sekret'), unknown.body)
      const bulkHidden = await post([{ title: 'n1', project_id: 1 }, { title: 'n2', project_id: 1, secret: 'x' }],
        support, '/tasks/bulk')
      assert.equal(bulkHidden.statusCode, 400)
      assert.equal(bulkHidden.json().errors[0].field, '/1/secret')
      const patchHidden = await app.inject({ method: 'PATCH', url: '/tasks/1', payload: { secret: 'x' }, headers: support })
      assert.equal(patchHidden.statusCode, 400)
      assert.equal((await db.selectFrom('tasks').select('secret').where('id', '=', 1).executeTakeFirstOrThrow()).secret,
        'alice-secret-1')
      assert.equal(Number((await db.selectFrom('tasks').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n), 5)
      // priority: accepted and ignored for support
      const created = await post({ title: 'new', project_id: 1, priority: 9 })
      assert.equal(created.statusCode, 201)
      assert.equal('secret' in created.json(), false)
      assert.equal(created.json().priority, 0)
      const patched = await app.inject({ method: 'PATCH', url: '/tasks/1', payload: { priority: 9, title: 't1' }, headers: support })
      assert.equal(patched.statusCode, 200)
      assert.equal('secret' in patched.json(), false)
      const stored = await db.selectFrom('tasks').selectAll().where('id', '=', 1).executeTakeFirstOrThrow()
      assert.equal((stored as { priority: number }).priority, 0)
      assert.equal(stored.title, 't1')
      // admins change it
      const raised = await app.inject({ method: 'PATCH', url: '/tasks/1', payload: { priority: 9 }, headers: admin })
      assert.equal(raised.json().priority, 9)
      assert.equal(raised.json().secret, 'alice-secret-1')
      // BULK and upsert responses leave the hidden field out
      const bulk = await post([{ title: 'b1', project_id: 1 }, { title: 'b2', project_id: null }],
        support, '/tasks/bulk')
      assert.equal(bulk.statusCode, 201)
      assert.equal(bulk.body.includes('secret'), false)
      const merged = await app.inject({
        method: 'POST',
        url: '/tasks',
        payload: { title: 'b1', project_id: 3, priority: 5 },
        headers: { ...support, prefer: 'resolution=merge-duplicates' },
      })
      assert.equal(merged.statusCode, 200)
      assert.equal('secret' in merged.json(), false)
      assert.equal(merged.json().project_id, 3)
      const upserted = await db.selectFrom('tasks').selectAll().where('title', '=', 'b1').executeTakeFirstOrThrow()
      assert.equal((upserted as { priority: number }).priority, 0)
    })

    test('the ETag is of what the caller is served: If-Match compares the caller\'s own tag', async (t) => {
      const { app, db, admin, support } = await ticketsApp(t, dialect)
      const supportTag = (await app.inject({ url: '/tasks/1', headers: support })).headers.etag
      const adminTag = (await app.inject({ url: '/tasks/1', headers: admin })).headers.etag
      assert.equal(typeof supportTag, 'string')
      assert.notEqual(supportTag, adminTag)
      const patch = async (headers: Record<string, string>, tag: unknown) => await app.inject({
        method: 'PATCH', url: '/tasks/1', payload: { title: 'moved' }, headers: { ...headers, 'if-match': String(tag) },
      })
      const stale = await patch(support, adminTag)
      assert.equal(stale.statusCode, 412)
      assert.equal((await db.selectFrom('tasks').select('title').where('id', '=', 1).executeTakeFirstOrThrow()).title,
        'a-task-1')
      const fresh = await patch(support, supportTag)
      assert.equal(fresh.statusCode, 200)
      assert.equal(fresh.headers.etag, (await app.inject({ url: '/tasks/1', headers: support })).headers.etag)
      assert.equal((await db.selectFrom('tasks').select('title').where('id', '=', 1).executeTakeFirstOrThrow()).title,
        'moved')
      const again = await app.inject({ url: '/tasks/1', headers: { ...support, 'if-none-match': String(fresh.headers.etag) } })
      assert.equal(again.statusCode, 304)
    })

    test('two tenants: field rules stay inside each tenant\'s rows', async (t) => {
      const { app, support, bobSupport } = await ticketsApp(t, dialect)
      const bobs = await app.inject({ url: '/tasks', headers: bobSupport })
      assert.deepEqual(bobs.json(), [
        {
          id: 3,
          title: 'b-task-3',
          owner: 'bob',
          project_id: 2,
          priority: 0,
          project: { id: 2, owner: 'bob' },
          tags: [{ id: 2, name: 'b-tag', owner: 'bob' }]
        },
        {
          id: 4,
          title: 'b-task-4',
          owner: 'bob',
          project_id: 1,
          priority: 0,
          project: null,
          tags: [{ id: 2, name: 'b-tag', owner: 'bob' }]
        },
      ])
      assert.equal((await app.inject({ url: '/tasks/3', headers: support })).statusCode, 404)
      assert.equal((await app.inject({ url: '/tasks/1', headers: bobSupport })).statusCode, 404)
    })

    test('a role nobody listed reads only the key; a rule naming an unknown field fails closed', async (t) => {
      const { app, alice } = await ticketsApp(t, dialect, {
        fieldAccess: ({ token }: { token: { sub?: string } | null }) =>
          token?.sub === 'bob' ? { hidden: ['no_such_field'] } : ticketRules({ token } as never),
      })
      const anonymous = await app.inject({ url: '/tasks/1', headers: alice })
      assert.equal(anonymous.statusCode, 200)
      assert.deepEqual(anonymous.json(), { id: 1 })
      const bob = { authorization: `Bearer ${app.jwt.sign({ sub: 'bob' })}` }
      const typo = await app.inject({ url: '/tasks/3', headers: bob })
      assert.equal(typo.statusCode, 200)
      assert.deepEqual(typo.json(), { id: 3 })
    })

    test('OpenAPI documents the widest shape, requiring only the key', async (t) => {
      const database = await testDatabase(t, dialect)
      await seedTenants(database, dialect)
      await database.db.schema.alterTable('tasks').addColumn('priority', 'integer', (column) => column.notNull()
        .defaultTo(0)).execute()
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      await app.register(viewsetDocs)
      const Plain = Type.Object({
        id: Type.Integer(), title: Type.String(), secret: Type.String(), owner: Type.String(), priority: Type.Integer(),
      })
      await app.register(createViewset({
        db: database.db, table: 'tasks', schema: Plain, fieldAccess: ticketRules,
      } as never), { prefix: '/tasks' })
      const document = (await app.inject('/docs/json')).json()
      const row = document.components.schemas.Tasks
      assert.deepEqual(row.required, ['id'])
      assert.deepEqual(Object.keys(row.properties), ['id', 'title', 'secret', 'owner', 'priority'])
      assert.match(row.description, /depend on the caller/)
    })

    test('OpenAPI: a to-one relation to a ruled table is nullable; a field-ruled related row requires nothing', async (t) => {
      const { ProjectRow } = await import('../helpers/tenants.js')
      const Tasks = Type.Object({ ...Task.properties, project: Type.Optional(ProjectRow) })
      const documented = async (projects: Record<string, unknown>) => {
        const database = await testDatabase(t, dialect)
        await seedTenants(database, dialect)
        const app = testApp(t)
        await app.register(fastifyJwt, { secret })
        await app.register(viewsetDocs)
        const { db } = database
        await app.register(createViewset({ db, ...owned('projects', ProjectRow), ...projects } as never),
          { prefix: '/projects' })
        await app.register(createViewset({ db, ...owned('tasks', Tasks), relatedConfig: taskRelations } as never),
          { prefix: '/tasks' })
        await app.register(createViewset({ db, ...owned('tags', Tag) } as never), { prefix: '/tags' })
        const response = await app.inject('/docs/json')
        assert.equal(response.statusCode, 200)
        const document = response.json()
        const result = await validate(structuredClone(document))
        assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
        return document.components.schemas
      }
      const nullable = (schema: { anyOf?: Array<{ type?: unknown }> }) =>
        schema.anyOf?.some((member) => member.type === 'null') === true
      // projects has a scope: a task's project may be hidden from the caller, so null.
      const scoped = await documented({})
      for (const component of [scoped.Tasks, scoped.TasksPartial]) {
        assert.equal(nullable(component.properties.project), true)
        assert.deepEqual(Object.keys(component.properties.project.anyOf[0].properties), ['id', 'name', 'owner'])
      }
      assert.deepEqual(scoped.Tasks.properties.project.anyOf[0].required, ['id', 'name', 'owner'])
      assert.ok(scoped.Tasks.required.includes('project'))
      // No rule on projects: every task's project is served as it is stored.
      const open = await documented({ scope: undefined, beforeWrite: undefined, protectedMethods: [] })
      assert.equal(nullable(open.Tasks.properties.project), false)
      assert.equal(open.Tasks.properties.project.type, 'object')
      assert.deepEqual(open.Tasks.properties.project.required, ['id', 'name', 'owner'])
      // A field rule alone (no scope) hides fields, maybe all but the key: nullable, and no field required.
      const fields = await documented({ scope: undefined, fieldAccess: projectRules })
      const project = fields.Tasks.properties.project
      assert.equal(nullable(project), true)
      assert.equal('required' in project.anyOf[0], false)
      assert.deepEqual(Object.keys(project.anyOf[0].properties), ['id', 'name', 'owner'])
    })

    test('startup: two viewsets of a table with different field rules, or no token verifier, fail ready()', async (t) => {
      await assert.rejects(ticketsApp(t, dialect, {}, async (app, db) => {
        await app.register(createViewset({
          db,
          table: 'projects',
          schema: Type.Object({ id: Type.Integer(), name: Type.String() }),
          methods: ['LIST'],
          scope: ownerRule,
          fieldAccess: () => ({}),
        } as never), { prefix: '/all-projects' })
      }), /different row or field rules \("\/projects", "\/all-projects"\): choose .* with rulesFrom/)
      const database = await testDatabase(t, dialect)
      await seedTenants(database, dialect)
      const app = testApp(t)
      await assert.rejects(async () => {
        await app.register(createViewset({
          db: database.db, table: 'tags', schema: Tag, fieldAccess: () => ({ hidden: ['owner'] }),
        } as never), { prefix: '/tags' })
        await app.ready()
      }, /fieldAccess: nothing can verify a token here/)
    })

    test('an override calling super.getElement() reads ?fields= as the caller\'s rules narrow it', async (t) => {
      class Tickets extends Viewset<any, any, any> {
        override async getElement (request: any, reply: any, token: any) {
          return await super.getElement(request, reply, token)
        }
      }
      const { app, admin, support } = await ticketsApp(t, dialect, {}, async (app, db) => {
        const options = {
          db, ...owned('tasks', Ticket), fieldAccess: ticketRules, relatedConfig: taskRelations, protectedMethods: ['GET'],
        }
        await app.register(new Tickets(options as never).register(['GET']), { prefix: '/tickets' })
      })
      const hidden = await app.inject({ url: '/tickets/1?fields=id,secret', headers: support })
      const unknown = await app.inject({ url: '/tickets/1?fields=id,sekret', headers: support })
      assert.equal(hidden.statusCode, 400)
      assert.equal(renamed(hidden.body, 'secret', 'sekret'), unknown.body)
      const whole = await app.inject({ url: '/tickets/1', headers: support })
      assert.equal(whole.statusCode, 200)
      assert.equal('secret' in whole.json(), false)
      assert.equal((await app.inject({ url: '/tickets/1?fields=id,secret', headers: admin })).json().secret,
        'alice-secret-1')
    })
  })
}
