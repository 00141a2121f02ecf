import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Viewset } from 'fastify-viewsets'
import { problemOf } from '../helpers/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import { Task, tenantsApp } from '../helpers/tenants.js'
import type { TenantsOptions } from '../helpers/tenants.js'

// What a unique conflict reveals (issue 35, item 8): a 409 on a unique value tells that some row holds it, the
// caller's or not. `conflictDetail: 'none'` answers every conflict of the viewset with the same body, so the
// detail names no field and no element: a value held by another tenant's row answers as one held by the caller's.

const uniqueTitles: TenantsOptions = {
  prepare: async (db) => { await db.schema.createIndex('tasks_title').on('tasks').column('title').unique().execute() },
  tasks: { conflictFields: ['title'] },
}
const silent: TenantsOptions = { ...uniqueTitles, tasks: { ...uniqueTitles.tasks, conflictDetail: 'none' } }
const merge = { prefer: 'resolution=merge-duplicates' }

describe('conflictDetail: options', () => {
  test("anything but 'field' or 'none' fails at construction", async (t) => {
    const { db } = await testDatabase(t, { name: 'sqlite', url: 'sqlite::memory:' })
    assert.throws(() => new Viewset({ db, table: 'tasks', schema: Task, conflictDetail: 'hidden' } as never),
      /conflictDetail: expected 'field' or 'none', got "hidden"/)
  })
})

for (const dialect of dialects) {
  describe(`unique conflicts and rows outside the rule (${dialect.name})`, () => {
    test("by default a conflict names its field: a value held by another tenant's row answers 409", async (t) => {
      const { app, alice } = await tenantsApp(t, dialect, uniqueTitles)
      const taken = await app.inject({ method: 'POST', url: '/tasks', headers: alice, payload: { title: 'b-task-3', project_id: null } })
      assert.equal(taken.statusCode, 409)
      // MySQL and MariaDB name the unique index, the others its column
      assert.match(problemOf(taken).detail, /^A row with the same (title|tasks_title) already exists$/)
    })

    test("conflictDetail 'none': the same body for another tenant's value and the caller's, nothing named", async (t) => {
      const { app, alice, db } = await tenantsApp(t, dialect, silent)
      const before = await db.selectFrom('tasks').select('id').execute()
      const post = (title: string, headers = {}) => app.inject({
        method: 'POST', url: '/tasks', headers: { ...alice, ...headers }, payload: { title, project_id: null },
      })
      const theirs = await post('b-task-3')
      const mine = await post('a-task-1')
      assert.equal(theirs.statusCode, 409)
      assert.equal(theirs.body, mine.body)
      assert.deepEqual(problemOf(theirs), {
        type: 'urn:fastify-viewsets:problem:conflict', title: 'Conflict', status: 409, detail: 'The request conflicts with the stored data', code: 'FST_VIEWSET_CONFLICT',
      })
      // an upsert onto bob's row (outside alice's PATCH rule) answers the same
      const upsert = await post('b-task-3', merge)
      assert.equal(upsert.statusCode, 409)
      assert.equal(upsert.body, theirs.body)
      // a bulk body: no element named
      const bulk = (title: string) => app.inject({
        method: 'POST', url: '/tasks/bulk', headers: alice, payload: [{ title: 'new-1', project_id: null }, { title, project_id: null }],
      })
      const bulkTheirs = await bulk('b-task-3')
      assert.equal(bulkTheirs.statusCode, 409)
      assert.equal(bulkTheirs.body, (await bulk('a-task-1')).body)
      assert.equal(bulkTheirs.body, theirs.body)
      assert.equal((await db.selectFrom('tasks').select('id').execute()).length, before.length)
    })
  })
}
