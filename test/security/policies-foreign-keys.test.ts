import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { dialects } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { problemOf } from '../helpers/app.js'
import { tenantsApp } from '../helpers/tenants.js'

// A written foreign key must point to a row the caller's GET rule of the target table admits (issue 35, item 2):
// a key to another tenant's row answers exactly as a key to no row, on every dialect, and nothing is written.

/** The tasks stored, by id. */
async function taskRows (db: TestDatabase['db']) {
  const rows = await db.selectFrom('tasks').select(['id', 'owner', 'project_id']).orderBy('id').execute()
  return rows.map((row) => ({
    id: Number(row.id), owner: row.owner, project: row.project_id === null ? null : Number(row.project_id),
  }))
}

/** The statements that check the keys: `select id from projects where id in (…)`, whatever the quoting. */
function keyChecks (queries: readonly string[]): number {
  return queries.filter((query) => query.replace(/[`"]/g, '').startsWith('select id from projects where id in')).length
}

for (const dialect of dialects) {
  describe(`foreign keys under the target table's rule (${dialect.name})`, () => {
    test("POST with another tenant's project is the 409 of a missing one, byte for byte, and writes nothing", async (t) => {
      const { app, alice, bob, db } = await tenantsApp(t, dialect)
      const before = await taskRows(db)
      const hidden = await app.inject({ method: 'POST', url: '/tasks', headers: alice, payload: { title: 'spy', project_id: 2 } })
      const missing = await app.inject({ method: 'POST', url: '/tasks', headers: alice, payload: { title: 'spy', project_id: 2147483647 } })
      assert.equal(hidden.statusCode, 409)
      assert.equal(problemOf(hidden).code, 'FST_VIEWSET_CONFLICT')
      assert.equal(problemOf(hidden).detail, 'The project_id refers to a row that does not exist')
      assert.equal(hidden.body, missing.body)
      assert.deepEqual(hidden.headers['content-type'], missing.headers['content-type'])
      assert.ok(!hidden.body.includes('b-proj'))
      assert.deepEqual(await taskRows(db), before)
      // the owner of the project may; alice may with her own; no project at all is fine
      const own = await app.inject({ method: 'POST', url: '/tasks', headers: bob, payload: { title: 'mine', project_id: 2 } })
      assert.equal(own.statusCode, 201, own.body)
      assert.equal(own.json<{ project: { name: string } }>().project.name, 'b-proj')
      const hers = await app.inject({ method: 'POST', url: '/tasks', headers: alice, payload: { title: 'mine', project_id: 3 } })
      assert.equal(hers.statusCode, 201, hers.body)
      const none = await app.inject({ method: 'POST', url: '/tasks', headers: alice, payload: { title: 'free', project_id: null } })
      assert.equal(none.statusCode, 201, none.body)
    })

    test('PUT and PATCH: a hidden key is the 409 of a missing one; a hidden task stays a 404', async (t) => {
      const { app, alice, db } = await tenantsApp(t, dialect)
      const before = await taskRows(db)
      for (const method of ['PATCH', 'PUT'] as const) {
        const payload = (project: number) => ({ title: 'moved', project_id: project })
        const hidden = await app.inject({ method, url: '/tasks/1', headers: alice, payload: payload(2) })
        const missing = await app.inject({ method, url: '/tasks/1', headers: alice, payload: payload(2147483647) })
        assert.equal(hidden.statusCode, 409)
        assert.equal(hidden.body, missing.body)
        // bob's task: a 404 before any key is looked at
        const other = await app.inject({ method, url: '/tasks/3', headers: alice, payload: payload(2) })
        assert.equal(other.statusCode, 404)
        const stale = await app.inject({
          method, url: '/tasks/1', headers: { ...alice, 'if-match': '"stale"' }, payload: payload(2),
        })
        assert.equal(stale.statusCode, 412)
      }
      assert.deepEqual(await taskRows(db), before)
      const moved = await app.inject({ method: 'PATCH', url: '/tasks/1', headers: alice, payload: { project_id: 3 } })
      assert.equal(moved.statusCode, 200, moved.body)
      assert.equal(moved.json<{ project: { name: string } }>().project.name, 'z-proj')
    })

    test('BULK with 500 keys: one check statement; a hidden key names its element as a missing one does', async (t) => {
      const { app, alice, db, queries } = await tenantsApp(t, dialect)
      await db.insertInto('projects').values(Array.from({ length: 498 }, (_, i) => ({ name: `p${i}`, owner: 'alice' }))).execute()
      const before = await taskRows(db)
      // the transcript: 500 elements over projects 1..500, bob's project 2 among them
      const spread = Array.from({ length: 500 }, (_, i) => ({ title: `t${i}`, project_id: i + 1 }))
      const hidden = await app.inject({ method: 'POST', url: '/tasks/bulk', headers: alice, payload: spread })
      assert.equal(hidden.statusCode, 409)
      const missing = await app.inject({
        method: 'POST', url: '/tasks/bulk', headers: alice, payload: spread.map((element, i) => (i === 1 ? { ...element, project_id: 2147483647 } : element)),
      })
      assert.equal(hidden.body, missing.body)
      assert.deepEqual(problemOf(hidden).errors, [{ in: 'body', field: '/1/project_id', message: 'refers to a row that does not exist' }])
      assert.deepEqual(await taskRows(db), before)
      // 500 distinct keys of alice's projects (all but bob's 2): written, after one check
      const mine = Array.from({ length: 500 }, (_, i) => ({ title: `m${i}`, project_id: i === 1 ? 501 : i + 1 }))
      queries.length = 0
      const written = await app.inject({ method: 'POST', url: '/tasks/bulk', headers: alice, payload: mine })
      assert.equal(written.statusCode, 201, written.body)
      assert.equal(keyChecks(queries), 1)
      assert.equal((await taskRows(db)).length, before.length + 500)
    })
  })
}

// An upsert writes its foreign keys too, on either branch (issue 35, items 2 and 4): the same 409 as a missing row.
for (const dialect of dialects) {
  describe(`foreign keys of an upsert under the target table's rule (${dialect.name})`, () => {
    test("an upsert with another tenant's project is the 409 of a missing one, creating or updating", async (t) => {
      const { app, alice, db } = await tenantsApp(t, dialect, {
        prepare: async (db) => { await db.schema.createIndex('tasks_title_unique').on('tasks').column('title').unique().execute() },
        tasks: { conflictFields: ['title'] },
      })
      const before = await taskRows(db)
      const merge = { ...alice, prefer: 'resolution=merge-duplicates' }
      for (const title of ['new-one', 'a-task-1']) { // creates, then updates alice's own task 1
        const hidden = await app.inject({ method: 'POST', url: '/tasks', headers: merge, payload: { title, project_id: 2 } })
        const missing = await app.inject({ method: 'POST', url: '/tasks', headers: merge, payload: { title, project_id: 2147483647 } })
        assert.equal(hidden.statusCode, 409, hidden.body)
        assert.equal(problemOf(hidden).code, 'FST_VIEWSET_CONFLICT')
        assert.equal(hidden.body, missing.body)
        assert.ok(!hidden.body.includes('b-proj'))
      }
      const bulk = await app.inject({
        method: 'POST',
        url: '/tasks/bulk',
        headers: merge,
        payload: [{ title: 'a-task-1', project_id: 3 }, { title: 'fresh', project_id: 2 }],
      })
      assert.equal(bulk.statusCode, 409, bulk.body)
      assert.deepEqual(await taskRows(db), before)
      const own = await app.inject({ method: 'POST', url: '/tasks', headers: merge, payload: { title: 'a-task-1', project_id: 3 } })
      assert.equal(own.statusCode, 200, own.body)
      assert.equal(own.json<{ project: { name: string } }>().project.name, 'z-proj')
    })
  })
}
