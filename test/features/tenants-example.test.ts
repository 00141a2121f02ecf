import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { build } from '../../examples/tenants/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import { problemOf } from '../helpers/app.js'

// examples/tenants (issue 35): two organisations over one database, each reaching only its own rows through the
// generated routes, the relations of every level, the overridden list and the custom route.

const secret = randomBytes(32).toString('base64')

async function tenants (t: TestContext, dialect: (typeof dialects)[number]) {
  const database = await testDatabase(t, dialect)
  const app = await build({ db: database.db, secret })
  t.after(() => app.close())
  await app.ready()
  const bearer = (sub: string, org: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub, org })}` })
  const viewer = { authorization: `Bearer ${app.jwt.sign({ sub: 'val', org: 'acme', role: 'viewer' })}` }
  return { app, db: database.db, acme: bearer('ada', 'acme'), globex: bearer('hank', 'globex'), viewer }
}

for (const dialect of dialects) {
  describe(`examples/tenants (${dialect.name})`, () => {
    test('each organisation reads its own rows, relations two levels deep included', async (t) => {
      const { app, acme, globex } = await tenants(t, dialect)
      const projects = await app.inject({ url: '/projects', headers: acme })
      assert.equal(projects.statusCode, 200, projects.body)
      type Listed = Array<{ name: string; org: string; tasks: Array<{ tags: Array<{ name: string }> }> }>
      const body = projects.json<Listed>()
      assert.deepEqual(body.map((project) => project.name), ['Rocket skates', 'Giant magnet'])
      assert.ok(body.every((project) => project.org === 'acme'))
      assert.deepEqual(body[0]?.tasks.map((task) => task.tags.map((tag) => tag.name)), [['urgent'], ['outdoor', 'urgent']])
      assert.ok(!projects.body.includes('globex') && !projects.body.includes('Doomsday'))
      const hidden = await app.inject({ url: '/projects/1', headers: globex })
      assert.equal(hidden.statusCode, 404)
      const task = await app.inject({ url: '/tasks/1', headers: acme })
      assert.equal(task.json<{ project: { name: string } }>().project.name, 'Rocket skates')
      assert.equal((await app.inject({ url: '/tasks/1', headers: globex })).statusCode, 404)
      assert.equal((await app.inject({ url: '/projects' })).statusCode, 401)
    })

    test('the overridden list and the custom route stay inside the rule', async (t) => {
      const { app, acme, globex } = await tenants(t, dialect)
      const list = await app.inject({ url: '/tasks', headers: acme })
      assert.equal(list.statusCode, 200, list.body)
      assert.deepEqual(list.json<Array<{ title: string }>>().map((task) => task.title),
        ['Find a magnet', 'Test on a cliff', 'Order wheels'])
      const narrowed = await app.inject({ url: '/tasks?project=3', headers: acme })
      assert.deepEqual(narrowed.json(), [])
      const theirs = await app.inject({ url: '/tasks/summary', headers: globex })
      assert.equal(theirs.statusCode, 200, theirs.body)
      assert.deepEqual(theirs.json(), { tasks: 2, projects: 1 })
      assert.deepEqual((await app.inject({ url: '/tasks/summary', headers: acme })).json(), { tasks: 3, projects: 2 })
      assert.equal((await app.inject({ url: '/tasks/summary' })).statusCode, 401)
    })

    test('writes are stamped with the organisation and never reach or point into another one', async (t) => {
      const { app, db, acme, globex } = await tenants(t, dialect)
      const created = await app.inject({
        method: 'POST', url: '/tasks', headers: acme, payload: { title: 'Paint it', project_id: 2, org: 'globex' },
      })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json<{ org: string }>().org, 'acme')
      const stored = await db.selectFrom('tasks').select(['org']).where('title', '=', 'Paint it').executeTakeFirst()
      assert.equal(stored?.org, 'acme')
      // globex's project 3: the 409 of a key to no project, and nothing written
      const before = await db.selectFrom('tasks').select(['id', 'title', 'org', 'project_id']).orderBy('id').execute()
      const pointed = await app.inject({ method: 'POST', url: '/tasks', headers: acme, payload: { title: 'Spy', project_id: 3 } })
      assert.equal(pointed.statusCode, 409)
      assert.equal(problemOf(pointed).detail, 'The project_id refers to a row that does not exist')
      const moved = await app.inject({ method: 'PATCH', url: '/tasks/1', headers: globex, payload: { title: 'Mine now' } })
      assert.equal(moved.statusCode, 404)
      const removed = await app.inject({ method: 'DELETE', url: '/tags/1', headers: globex })
      assert.equal(removed.statusCode, 404)
      assert.deepEqual(await db.selectFrom('tasks').select(['id', 'title', 'org', 'project_id']).orderBy('id').execute(), before)
      assert.equal((await db.selectFrom('tags').select('id').execute()).length, 4)
    })

    test('a viewer never reads a task\'s note, cannot filter on it, and cannot change its priority', async (t) => {
      const { app, db, acme, viewer } = await tenants(t, dialect)
      const full = await app.inject({ url: '/tasks/1', headers: acme })
      assert.equal(full.json<{ note: string }>().note, 'Supplier owes us a refund')
      const task = await app.inject({ url: '/tasks/1', headers: viewer })
      assert.equal(task.statusCode, 200, task.body)
      assert.deepEqual(Object.keys(task.json()).sort(), ['id', 'org', 'priority', 'project', 'project_id', 'tags', 'title'])
      const list = await app.inject({ url: '/tasks', headers: viewer })
      assert.equal(list.statusCode, 200, list.body)
      assert.equal(list.json<unknown[]>().length, 3)
      assert.ok(!list.body.includes('"note"') && !list.body.includes('refund'))
      // The tasks of a project (another viewset's relation) follow the tasks' field rule.
      const projects = await app.inject({ url: '/projects', headers: viewer })
      assert.equal(projects.statusCode, 200, projects.body)
      assert.ok(projects.body.includes('Order wheels') && !projects.body.includes('refund') && !projects.body.includes('"note"'))
      const members = await app.inject({ url: '/projects', headers: acme })
      assert.ok(members.body.includes('refund'))
      // In a filter (through projects' tasks) and in ?fields=, note is an unknown name for a viewer: the same 400
      // as a name no schema has.
      const probed = await app.inject({ url: '/projects?tasks.note__contains=refund', headers: viewer })
      const unknown = await app.inject({ url: '/projects?tasks.nope__contains=refund', headers: viewer })
      assert.equal(probed.statusCode, 400)
      assert.equal(probed.headers['content-type'], 'application/problem+json; charset=utf-8')
      assert.equal(problemOf(probed).code, 'FST_VIEWSET_VALIDATION')
      assert.equal(probed.body.replaceAll('note', 'nope'), unknown.body)
      const filtered = await app.inject({ url: '/projects?tasks.note__contains=refund', headers: acme })
      assert.equal(filtered.statusCode, 200, filtered.body)
      assert.deepEqual(filtered.json<Array<{ name: string }>>().map((project) => project.name), ['Rocket skates'])
      const fields = await app.inject({ url: '/tasks/1?fields=id,note', headers: viewer })
      assert.equal(fields.statusCode, 400)
      assert.equal(fields.body.replaceAll('note', 'nope'),
        (await app.inject({ url: '/tasks/1?fields=id,nope', headers: viewer })).body)
      // A viewer's priority is ignored (the title is written), and a note in its body is an unknown field.
      const stored = () => db.selectFrom('tasks').select(['id', 'title', 'note', 'priority']).orderBy('id').execute()
      const before = await stored()
      const patched = await app.inject({
        method: 'PATCH', url: '/tasks/1', headers: viewer, payload: { title: 'Order big wheels', priority: 9 },
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(patched.json<{ priority: number }>().priority, 1)
      assert.equal('note' in patched.json(), false)
      const noted = await app.inject({ method: 'PATCH', url: '/tasks/1', headers: viewer, payload: { note: 'x' } })
      assert.equal(noted.statusCode, 400)
      assert.deepEqual(await stored(), before.map((row) => (row.id === 1 ? { ...row, title: 'Order big wheels' } : row)))
    })

    test('with DEMO_PASSWORD, POST /token signs a token of acme\'s demo user that reads acme\'s rows only', async (t) => {
      const database = await testDatabase(t, dialect)
      const password = 'a demo password of 24 chars'
      const app = await build({ db: database.db, secret, env: { DEMO_PASSWORD: password } })
      t.after(() => app.close())
      const form = { 'content-type': 'application/x-www-form-urlencoded' }
      const wrong = await app.inject({
        method: 'POST', url: '/token', headers: form, payload: 'grant_type=password&username=demo&password=nope',
      })
      assert.equal(wrong.statusCode, 400)
      assert.equal(wrong.json<{ error: string }>().error, 'invalid_grant')
      const granted = await app.inject({
        method: 'POST',
        url: '/token',
        headers: form,
        payload: `grant_type=password&username=demo&password=${encodeURIComponent(password)}`,
      })
      assert.equal(granted.statusCode, 200, granted.body)
      const token = granted.json<{ access_token: string }>().access_token
      assert.deepEqual(
        { ...app.jwt.decode<Record<string, unknown>>(token), iat: 0, exp: 0 },
        { sub: 'demo', org: 'acme', role: 'member', iat: 0, exp: 0 }
      )
      const projects = await app.inject({ url: '/projects', headers: { authorization: `Bearer ${token}` } })
      assert.equal(projects.statusCode, 200, projects.body)
      assert.deepEqual(projects.json<Array<{ org: string }>>().map((project) => project.org), ['acme', 'acme'])
      const document = (await app.inject({ url: '/docs/json' })).json<{ components: { securitySchemes: Record<string, { flows?: { password?: { tokenUrl: string } } }> } }>()
      assert.deepEqual(Object.values(document.components.securitySchemes).map((scheme) => scheme.flows?.password?.tokenUrl), ['/token'])
      await assert.rejects(build({ db: database.db, secret, env: { DEMO_PASSWORD: 'short' } }), /DEMO_PASSWORD/)
    })
  })
}
