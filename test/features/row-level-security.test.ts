import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset, Viewset } from '../../lib/index.js'
import type { ViewsetOptions } from '../../lib/index.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import {
  ownerRule, Project, projectRelations, secret, seedTenants, Task, taskRelations, plainMethods,
} from '../helpers/tenants.js'
import type { TenantsDB } from '../helpers/tenants.js'

// `rowLevelSecurity` (issue 35, item 7): the tenants' rules written as PostgreSQL policies and no `scope`. Every
// statement of a request runs in one transaction as the token's role, with its claims in request.jwt.claims, so the
// policies bind relation loads, relation filters, counts and writes. On SQLite and MySQL the option fails at startup.

/** The tags, with `owner` writable: only the policy's WITH CHECK keeps a row in its owner's hands. */
const OpenTag = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String(), owner: Type.String(),
})

/** The roles of one test: unique names (roles are the cluster's, not the schema's), dropped when it ends. */
interface Roles { user: string; anon: string; bypass: string }

/** The policy SQL the README shows: a row is visible to, and may be written by, the `sub` of the claims only. */
async function enablePolicies (db: Kysely<any>, roles: Roles): Promise<void> {
  const schema = (await sql<{ name: string }>`select current_schema() as name`.execute(db)).rows[0]?.name ?? ''
  const sub = sql`current_setting('request.jwt.claims', true)::jsonb ->> 'sub'`
  for (const role of [roles.user, roles.anon]) {
    await sql`grant usage on schema ${sql.id(schema)} to ${sql.id(role)}`.execute(db)
    await sql`grant select on all tables in schema ${sql.id(schema)} to ${sql.id(role)}`.execute(db)
    await sql`grant ${sql.id(role)} to current_user`.execute(db)
  }
  await sql`grant insert, update, delete on all tables in schema ${sql.id(schema)} to ${sql.id(roles.user)}`.execute(db)
  await sql`grant usage on all sequences in schema ${sql.id(schema)} to ${sql.id(roles.user)}`.execute(db)
  for (const table of ['projects', 'tasks', 'tags']) {
    await sql`alter table ${sql.id(table)} enable row level security`.execute(db)
    await sql`create policy owned on ${sql.id(table)} using (owner = ${sub}) with check (owner = ${sub})`.execute(db)
  }
  // A tag link is visible with its task (the tasks policy applies inside the subquery).
  await sql`alter table task_tags enable row level security`.execute(db)
  await sql`create policy by_task on task_tags using (exists (select 1 from tasks where tasks.id = task_id))`.execute(db)
}

/** Creates the roles of one test, and drops them (and their grants) when it ends. */
async function createRoles (t: TestContext, dialect: TestDialect): Promise<Roles> {
  const tag = randomBytes(4).toString('hex')
  const roles = { user: `rls_${tag}_user`, anon: `rls_${tag}_anon`, bypass: `rls_${tag}_bypass` }
  const admin = createDatabase<any>(dialect.url)
  await sql`create role ${sql.id(roles.user)} nologin`.execute(admin)
  await sql`create role ${sql.id(roles.anon)} nologin`.execute(admin)
  await sql`create role ${sql.id(roles.bypass)} nologin bypassrls`.execute(admin)
  await admin.destroy()
  t.after(async () => {
    const cleanup = createDatabase<any>(dialect.url)
    for (const role of Object.values(roles)) {
      await sql`drop owned by ${sql.id(role)} cascade`.execute(cleanup)
      await sql`drop role ${sql.id(role)}`.execute(cleanup)
    }
    await cleanup.destroy()
  })
  return roles
}

interface RlsApp extends TestDatabase {
  app: FastifyInstance
  roles: Roles
  alice: { authorization: string }
  bob: { authorization: string }
}

/** The tenants' app under the policies: no `scope`; `beforeWrite` stamps the owner of tasks and projects. */
async function rlsApp (
  t: TestContext,
  dialect: TestDialect,
  options: {
    projects?: Record<string, unknown>
    roles?: (roles: Roles) => Record<string, unknown>
    poolSize?: number
    prepare?: ((db: Kysely<any>) => Promise<void>) | undefined
  } = {}
): Promise<RlsApp> {
  const roles = await createRoles(t, dialect)
  const database = await testDatabase(t, dialect, options.poolSize === undefined ? {} : { poolSize: options.poolSize })
  await seedTenants(database, dialect)
  await enablePolicies(database.db, roles)
  await options.prepare?.(database.db)
  const db = database.db as unknown as Kysely<TenantsDB>
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  const rowLevelSecurity = options.roles?.(roles) ?? { roles: [roles.user], defaultRole: roles.anon }
  const stamp = (values: Record<string, unknown>, { token }: { token: { sub?: string } | null }) =>
    ({ ...values, owner: token?.sub ?? '' })
  const create = (given: object) => createViewset({ db, ...given } as ViewsetOptions<TenantsDB, 'tasks', typeof Task>)
  const common = { methods: plainMethods, rowLevelSecurity }
  await app.register(create({
    ...common,
    table: 'projects',
    schema: Project,
    relatedConfig: projectRelations,
    beforeWrite: stamp,
    ...options.projects,
  }), { prefix: '/projects' })
  await app.register(create({
    ...common,
    table: 'tasks',
    schema: Task,
    relatedConfig: taskRelations,
    beforeWrite: stamp,
    alwaysCount: true,
    filterFields: { 'project.owner': ['eq'], 'tags.name': ['eq'] },
    orderingFields: ['id', 'project.name'],
    searchFields: ['title', 'project.name'],
  }), { prefix: '/tasks' })
  await app.register(create({ ...common, table: 'tags', schema: OpenTag }), { prefix: '/tags' })
  await app.ready()
  const bearer = (sub: string, role = roles.user) => ({ authorization: `Bearer ${app.jwt.sign({ sub, role })}` })
  return { ...database, app, roles, alice: bearer('alice'), bob: bearer('bob') }
}

/** The tasks stored, read as the superuser (no policy applies to it). */
async function taskRows (db: Kysely<any>) {
  const rows = await db.selectFrom('tasks').select(['id', 'title', 'owner', 'project_id']).orderBy('id').execute()
  return rows.map((row) => ({ ...row, id: Number(row.id) }))
}

for (const dialect of dialects.filter(({ name }) => name === 'postgres')) {
  describe('rowLevelSecurity: the tenants rules as PostgreSQL policies, no scope (postgres)', () => {
    test('LIST, GET, relations two levels deep and counts see only the caller\'s rows', async (t) => {
      const { app, alice, bob } = await rlsApp(t, dialect)
      const list = await app.inject({ url: '/tasks?order_by=id', headers: alice })
      assert.equal(list.statusCode, 200, list.body)
      const tasks = list.json<Array<{ id: number; project: unknown; tags: Array<{ name: string }> }>>()
      assert.deepEqual(tasks.map((task) => task.id), [1, 2, 5])
      assert.equal(list.headers['x-total-count'], '3')
      // task 2 is alice's in bob's project: the to-one is null; the many-to-many drops bob's tag
      assert.equal(tasks[1]?.project, null)
      assert.deepEqual(tasks.map((task) => task.tags.map((tag) => tag.name)), [['a-tag'], ['a-tag'], ['a-tag']])
      assert.ok(!list.body.includes('bob'))
      // bob's project: only bob's own task, not alice's planted one (nor its secret)
      const project = await app.inject({ url: '/projects/2', headers: bob })
      assert.equal(project.statusCode, 200, project.body)
      const body = project.json<{ tasks: Array<{ id: number; tags: Array<{ name: string }> }> }>()
      assert.deepEqual(body.tasks.map((task) => task.id), [3])
      assert.deepEqual(body.tasks[0]?.tags.map((tag) => tag.name), ['b-tag'])
      assert.ok(!project.body.includes('alice-secret'))
      // another tenant's row is a 404, as with scope
      const hidden = await app.inject({ url: '/tasks/3', headers: alice })
      assert.equal(hidden.statusCode, 404)
      assert.equal(problemOf(hidden).code, 'FST_VIEWSET_NOT_FOUND')
      // HEAD runs in one transaction as GET does; OPTIONS runs none
      assert.equal((await app.inject({ method: 'HEAD', url: '/tasks/1', headers: alice })).statusCode, 200)
      assert.equal((await app.inject({ method: 'HEAD', url: '/tasks/3', headers: alice })).statusCode, 404)
      assert.equal((await app.inject({ method: 'OPTIONS', url: '/tasks/1' })).statusCode, 204)
    })

    test('relation filters, search and ordering see only rows the policies admit', async (t) => {
      const { app, alice } = await rlsApp(t, dialect)
      const byOwner = await app.inject({ url: '/tasks?project.owner=bob&fields=id,project', headers: alice })
      assert.equal(byOwner.statusCode, 200, byOwner.body)
      assert.deepEqual(byOwner.json(), [])
      assert.equal(byOwner.headers['x-total-count'], '0')
      const byTag = await app.inject({ url: '/tasks?tags.name=b-tag', headers: alice })
      assert.deepEqual(byTag.json(), [])
      const search = await app.inject({ url: '/tasks?search=b-proj', headers: alice })
      assert.deepEqual(search.json(), [])
      const ordered = await app.inject({ url: '/tasks?order_by=project.name,id&fields=id', headers: alice })
      assert.equal(ordered.statusCode, 200, ordered.body)
      assert.deepEqual(ordered.json<Array<{ id: number }>>().map((task) => task.id).sort(), [1, 2, 5])
    })

    test('without a token the default role runs: the policies admit nothing', async (t) => {
      const { app } = await rlsApp(t, dialect)
      const list = await app.inject({ url: '/tasks' })
      assert.equal(list.statusCode, 200, list.body)
      assert.deepEqual(list.json(), [])
      assert.equal(list.headers['x-total-count'], '0')
      // the default role has no INSERT grant: the database refuses, nothing is written
      const write = await app.inject({ method: 'POST', url: '/tags', payload: { name: 'x', owner: '' } })
      assert.equal(write.statusCode, 500)
    })

    test('a role claim not in roles is a 403 before any SQL', async (t) => {
      const { app, queries } = await rlsApp(t, dialect)
      queries.length = 0
      const forged = { authorization: `Bearer ${app.jwt.sign({ sub: 'alice', role: 'postgres' })}` }
      const response = await app.inject({ url: '/tasks', headers: forged })
      assert.equal(response.statusCode, 403)
      assert.equal(problemOf(response).code, 'FST_VIEWSET_FORBIDDEN')
      assert.deepEqual(queries, [])
      const numeric = { authorization: `Bearer ${app.jwt.sign({ sub: 'alice', role: 7 })}` }
      assert.equal((await app.inject({ url: '/tasks/1', headers: numeric })).statusCode, 403)
    })

    test('a write the WITH CHECK refuses is a 403 and writes nothing; a row USING hides is a 404', async (t) => {
      const { app, alice, db } = await rlsApp(t, dialect)
      const planted = await app.inject({ method: 'POST', url: '/tags', headers: alice, payload: { name: 'x', owner: 'bob' } })
      assert.equal(planted.statusCode, 403, planted.body)
      assert.equal(problemOf(planted).code, 'FST_VIEWSET_FORBIDDEN')
      assert.equal(problemOf(planted).detail, 'The row would be written outside the rows this token may access')
      const moved = await app.inject({ method: 'PATCH', url: '/tags/1', headers: alice, payload: { owner: 'bob' } })
      assert.equal(moved.statusCode, 403, moved.body)
      const bulk = await app.inject({
        method: 'POST', url: '/tags/bulk', headers: alice, payload: [{ name: 'ok', owner: 'alice' }, { name: 'x', owner: 'bob' }],
      })
      assert.equal(bulk.statusCode, 403, bulk.body)
      const other = await app.inject({ method: 'PATCH', url: '/tags/2', headers: alice, payload: { name: 'mine' } })
      assert.equal(other.statusCode, 404)
      const gone = await app.inject({ method: 'DELETE', url: '/tags/2', headers: alice })
      assert.equal(gone.statusCode, 404)
      const tags = await db.selectFrom('tags').select(['id', 'name', 'owner']).orderBy('id').execute()
      assert.deepEqual(tags.map((tag) => [Number(tag.id), tag.name, tag.owner]), [[1, 'a-tag', 'alice'], [2, 'b-tag', 'bob']])
      // her own writes go through, and are committed before the answer is sent
      const own = await app.inject({ method: 'POST', url: '/tags', headers: alice, payload: { name: 'new', owner: 'alice' } })
      assert.equal(own.statusCode, 201, own.body)
      const deleted = await app.inject({ method: 'DELETE', url: '/tags/1', headers: alice })
      assert.equal(deleted.statusCode, 204)
      const after = await db.selectFrom('tags').select(['name']).orderBy('id').execute()
      assert.deepEqual(after.map((tag) => tag.name), ['b-tag', 'new'])
    })

    test("PostgreSQL's foreign-key checks ignore the policies: a key to a hidden project is written, never shown", async (t) => {
      const { app, alice, bob, db } = await rlsApp(t, dialect)
      const spy = await app.inject({ method: 'POST', url: '/tasks', headers: alice, payload: { title: 'spy', project_id: 2 } })
      assert.equal(spy.statusCode, 201, spy.body)
      assert.equal(spy.json<{ project: unknown }>().project, null)
      assert.ok(!spy.body.includes('b-proj'))
      const missing = await app.inject({
        method: 'POST', url: '/tasks', headers: alice, payload: { title: 'spy', project_id: 2147483647 },
      })
      assert.equal(missing.statusCode, 409)
      // PostgreSQL leaves the key out of its error on a table with row-level security: the constraint is named
      assert.match(String(problemOf(missing).detail), /^The \w+ refers to a row that does not exist$/)
      // BULK: 500 elements over projects 1..3, one transaction; the answer shows alice's projects only
      const payload = Array.from({ length: 500 }, (_, i) => ({ title: `b${i}`, project_id: (i % 3) + 1 }))
      const bulk = await app.inject({ method: 'POST', url: '/tasks/bulk', headers: alice, payload })
      assert.equal(bulk.statusCode, 201, bulk.body.slice(0, 300))
      const rows = bulk.json<Array<{ project: { owner: string } | null }>>()
      assert.equal(rows.length, 500)
      assert.ok(rows.every((row) => row.project === null || row.project.owner === 'alice'))
      // a key to no row fails the whole bulk write
      const before = (await taskRows(db)).length
      const broken = await app.inject({
        method: 'POST', url: '/tasks/bulk', headers: alice, payload: [{ title: 'a', project_id: 1 }, { title: 'b', project_id: 999 }],
      })
      assert.equal(broken.statusCode, 409, broken.body)
      assert.equal((await taskRows(db)).length, before)
      // bob's project, referenced by alice's tasks he cannot see: its DELETE is the 409 of a referenced row
      const parent = await app.inject({ method: 'DELETE', url: '/projects/2', headers: bob })
      assert.equal(parent.statusCode, 409)
      assert.equal(problemOf(parent).detail, 'The row is still referenced by other rows')
    })

    test('with a scope on projects too, a key to a hidden project is the 409 of a missing one (item 2)', async (t) => {
      const { app, alice, db } = await rlsApp(t, dialect, { projects: { scope: ownerRule } })
      const before = await taskRows(db)
      const hidden = await app.inject({ method: 'POST', url: '/tasks', headers: alice, payload: { title: 'spy', project_id: 2 } })
      const missing = await app.inject({
        method: 'POST', url: '/tasks', headers: alice, payload: { title: 'spy', project_id: 2147483647 },
      })
      assert.equal(hidden.statusCode, 409)
      assert.equal(hidden.body, missing.body)
      assert.deepEqual(await taskRows(db), before)
    })

    test('the settings are transaction-local: the pooled connection carries nothing to the next user', async (t) => {
      const { app, alice, db } = await rlsApp(t, dialect, { poolSize: 1 })
      const list = await app.inject({ url: '/tasks?fields=id', headers: alice })
      assert.equal(list.statusCode, 200)
      const failed = await app.inject({ method: 'POST', url: '/tags', headers: alice, payload: { name: 'x', owner: 'bob' } })
      assert.equal(failed.statusCode, 403)
      // the app's one connection, once the requests are done: the login role, no claims, no open transaction
      const { rows } = await sql<{ role: string; claims: string | null; open: boolean }>`
        select current_user as role, current_setting('request.jwt.claims', true) as claims,
          now() = statement_timestamp() as open`.execute(db)
      assert.equal(rows[0]?.role, 'postgres')
      assert.ok(rows[0]?.claims === null || rows[0]?.claims === '')
      assert.equal((await taskRows(db)).length, 5)
    })
  })

  describe('rowLevelSecurity: overrides and custom routes (postgres)', () => {
    test('an overridden list, a custom route and this.transaction() run in the request\'s transaction', async (t) => {
      const { app: _unused, roles, db } = await rlsApp(t, dialect)
      await _unused.close()
      class Tasks extends Viewset<TenantsDB, 'tasks', typeof Task> {
        override async list () {
          return await this.query().orderBy('id').execute()
        }

        override customRoutes (fastify: FastifyInstance) {
          fastify.get('/export', async () => await this.db.selectFrom('tasks').select(['id', 'owner']).orderBy('id').execute())
          fastify.post('/rename', async () => await this.transaction(async (trx) =>
            await trx.updateTable('tasks').set({ title: 'renamed' }).returning(['id']).execute()))
        }
      }
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      const rowLevelSecurity = { roles: [roles.user], defaultRole: roles.anon }
      await app.register(new Tasks({ db, table: 'tasks', schema: Task, relatedConfig: taskRelations, rowLevelSecurity }).register(), { prefix: '/tasks' })
      await app.ready()
      const alice = { authorization: `Bearer ${app.jwt.sign({ sub: 'alice', role: roles.user })}` }
      const list = await app.inject({ url: '/tasks', headers: alice })
      assert.deepEqual(list.json<Array<{ id: number }>>().map((task) => task.id), [1, 2, 5])
      const exported = await app.inject({ url: '/tasks/export', headers: alice })
      assert.deepEqual(exported.json<Array<{ owner: string }>>().map((task) => task.owner), ['alice', 'alice', 'alice'])
      const renamed = await app.inject({ method: 'POST', url: '/tasks/rename', headers: alice })
      assert.equal(renamed.statusCode, 200, renamed.body)
      assert.equal(renamed.json<unknown[]>().length, 3)
      const titles = await db.selectFrom('tasks').select(['owner', 'title']).orderBy('id').execute()
      assert.deepEqual(titles.filter((task) => task.title === 'renamed').map((task) => task.owner), ['alice', 'alice', 'alice'])
    })
  })

  describe('rowLevelSecurity: startup checks (postgres)', () => {
    type Prepare = (db: Kysely<any>) => Promise<void>
    const failure = async (t: TestContext, roles: (roles: Roles) => Record<string, unknown>, prepare?: Prepare) =>
      await rlsApp(t, dialect, { roles, prepare }).then(() => undefined, (error: Error) => error)

    test('a role that bypasses row-level security fails naming the option and the role', async (t) => {
      const error = await failure(t, (roles) => ({ roles: [roles.user, roles.bypass], defaultRole: roles.anon }))
      assert.match(String(error?.message), /rowLevelSecurity.*rls_\w+_bypass.*BYPASSRLS/)
    })

    test('a superuser default role, or one that does not exist, fails', async (t) => {
      const superuser = await failure(t, (roles) => ({ roles: [roles.user], defaultRole: 'postgres' }))
      assert.match(String(superuser?.message), /rowLevelSecurity.*"postgres" is a superuser/)
      const missing = await failure(t, (roles) => ({ roles: [`${roles.user}_missing`], defaultRole: roles.anon }))
      assert.match(String(missing?.message), /rowLevelSecurity.*does not exist/)
    })

    test('a table with row-level security disabled fails, saying how to enable it', async (t) => {
      const error = await failure(t, (roles) => ({ roles: [roles.user], defaultRole: roles.anon }),
        async (db) => { await sql`alter table tags disable row level security`.execute(db) })
      assert.match(String(error?.message), /rowLevelSecurity.*"tags" has row-level security disabled.*ENABLE ROW LEVEL SECURITY/)
    })
  })
}

for (const dialect of dialects.filter(({ name }) => name !== 'postgres')) {
  describe(`rowLevelSecurity on ${dialect.name}`, () => {
    test('startup fails naming the option: the database has no row-level security', async (t) => {
      const database = await testDatabase(t, dialect)
      await seedTenants(database, dialect)
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      const rowLevelSecurity = { roles: ['app_user'], defaultRole: 'app_anon' }
      const viewset = createViewset({ db: database.db, table: 'tags', schema: OpenTag, rowLevelSecurity })
      await assert.rejects(async () => {
        await app.register(viewset, { prefix: '/tags' })
        await app.ready()
      }, /Invalid viewset option rowLevelSecurity: is PostgreSQL only/)
    })
  })
}
