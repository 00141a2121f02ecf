import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import { createViewset, Viewset } from 'fastify-viewsets'
import type { RowContext, ScopedMethod } from 'fastify-viewsets'
import { withBaseRule } from '../../lib/query/scope-rules.js'
import { dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { owned, ownerRule, secret, seedTenants, Task, tenantsApp } from '../helpers/tenants.js'

// The per-method form of `scope` (issue 35, item 3): one entry per method, a function or null ("explicitly
// open"); a registered method without an entry fails at startup, so a forgotten method is never open. A
// derived method's rule is its own AND its base's.

const mine = ownerRule
const everyMethod = { LIST: mine, GET: mine, PUT: mine, PATCH: mine, DELETE: mine }

/** The ids of a LIST answer. */
function ids (response: { json: () => unknown }): number[] {
  const rows = response.json()
  assert.ok(Array.isArray(rows))
  return rows.map((row: { id: number }) => row.id)
}

describe('per-method scope: startup', () => {
  test('an entry that is no method a rule applies to, or no function, fails at construction', async (t) => {
    const { db } = await testDatabase(t, { name: 'sqlite', url: 'sqlite::memory:' })
    for (const [scope, message] of [
      [{ LIST: mine, POST: mine }, /scope: "POST" is not a method a row rule applies to \(methods: LIST, GET, PUT, PATCH, DELETE, PATCH_MANY/],
      [{ LIST: 'owner' }, /scope: LIST: expected a function, or null for no restriction/],
      ['owner', /scope: expected a function, or an object with one rule per method/],
    ] as const) {
      assert.throws(() => new Viewset({ db, table: 'tasks', schema: Task, scope } as never), (error: Error & { code?: string }) => {
        assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
        assert.match(error.message, message)
        return true
      })
    }
  })

  test("a derived method's rule is its own AND its base's; a core method's is its own", () => {
    const rules: Record<string, string | undefined> = { PATCH: 'p', PATCH_MANY: 'm', GET: 'g', DELETE: undefined }
    const and = (own: string, base: string) => `${own}&${base}`
    assert.equal(withBaseRule('PATCH_MANY', (method) => rules[method], and), 'm&p')
    assert.equal(withBaseRule('RESTORE', (method) => rules[method], and), 'p')
    assert.equal(withBaseRule('HISTORY', (method) => rules[method], and), 'g')
    assert.equal(withBaseRule('PURGE', (method) => rules[method], and), undefined)
    assert.equal(withBaseRule('PATCH', (method) => rules[method], and), 'p')
  })
})

for (const dialect of dialects) {
  describe(`per-method scope (${dialect.name})`, () => {
    test('a registered method without an entry fails ready(), naming every missing one', async (t) => {
      for (const [methods, scope, missing] of [
        [['LIST', 'GET', 'PUT', 'PATCH', 'DELETE'], { LIST: mine, GET: mine }, 'PUT, PATCH, DELETE'],
        // POST's rows must be readable once written: the GET rule applies to them
        [['POST', 'BULK'], {}, 'GET'],
        [['LIST', 'DELETE'], { LIST: null, GET: mine, PATCH: mine }, 'DELETE'],
      ] as const) {
        const database = await testDatabase(t, dialect)
        await seedTenants(database, dialect)
        const app = testApp(t)
        await app.register(fastifyJwt, { secret })
        const options = { db: database.db, ...owned('tasks', Task), methods, protectedMethods: methods, scope }
        await assert.rejects(async () => {
          await app.register(createViewset(options as never), { prefix: '/tasks' })
          await app.ready()
        }, (error: Error & { code?: string }) => {
          assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
          assert.equal(error.message, `Invalid viewset option scope: no rule for ${missing}: a per-method scope names every registered ` +
            'method it applies to, with a function, or null for no restriction')
          return true
        })
      }
    })

    test('each entry restricts its method; null is explicitly open; other tenants get 404', async (t) => {
      const scope = { LIST: null, GET: null, PUT: mine, PATCH: mine, DELETE: mine }
      const { app, alice, db } = await tenantsApp(t, dialect, { tasks: { scope } })
      // the open reads see bob's tasks; the writes do not reach them
      assert.deepEqual(ids(await app.inject({ url: '/tasks', headers: alice })), [1, 2, 3, 4, 5])
      assert.equal((await app.inject({ url: '/tasks/3', headers: alice })).statusCode, 200)
      for (const method of ['PUT', 'PATCH'] as const) {
        const response = await app.inject({ method, url: '/tasks/3', headers: alice, payload: { title: 'x', project_id: null } })
        assert.equal(response.statusCode, 404)
      }
      assert.equal((await app.inject({ method: 'DELETE', url: '/tasks/3', headers: alice })).statusCode, 404)
      const stored = await db.selectFrom('tasks').select(['title', 'project_id']).where('id', '=', 3).executeTakeFirstOrThrow()
      assert.deepEqual({ ...stored, project_id: Number(stored.project_id) }, { title: 'b-task-3', project_id: 2 })
      const own = await app.inject({ method: 'PATCH', url: '/tasks/1', headers: alice, payload: { title: 'renamed' } })
      assert.equal(own.statusCode, 200, own.body)
    })

    test("the object form's GET and LIST apply where other viewsets read the table", async (t) => {
      const { app, alice } = await tenantsApp(t, dialect, {
        projects: { scope: everyMethod },
        tasks: { scope: everyMethod },
      })
      const task = await app.inject({ url: '/tasks/2', headers: alice })
      assert.equal(task.statusCode, 200, task.body)
      // task 2 is alice's, in bob's project: hidden
      assert.equal(task.json<{ project: unknown }>().project, null)
      assert.deepEqual(ids(await app.inject({ url: '/projects', headers: alice })), [1, 3])
      assert.equal((await app.inject({ url: '/projects/2', headers: alice })).statusCode, 404)
      // a key to bob's project is a key to no row
      const spy = await app.inject({ method: 'POST', url: '/tasks', headers: alice, payload: { title: 'spy', project_id: 2 } })
      assert.equal(spy.statusCode, 409)
    })

    test('the function form keeps its meaning: undefined for a method is no restriction', async (t) => {
      const openReads = (eb: never, context: RowContext<ScopedMethod> & { token: { sub?: string } | null }) =>
        context.method === 'LIST' || context.method === 'GET' ? undefined : mine(eb, context)
      const { app, alice } = await tenantsApp(t, dialect, { tasks: { scope: openReads } })
      assert.deepEqual(ids(await app.inject({ url: '/tasks', headers: alice })), [1, 2, 3, 4, 5])
      assert.equal((await app.inject({ method: 'DELETE', url: '/tasks/3', headers: alice })).statusCode, 404)
    })
  })
}
