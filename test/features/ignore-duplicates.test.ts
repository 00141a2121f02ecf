import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { dialects } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { tenantsApp } from '../helpers/tenants.js'
import type { TenantsApp } from '../helpers/tenants.js'

// `Prefer: resolution=ignore-duplicates` (issue 38, item 6) on POST and BULK with `conflictFields`, as PostgREST
// has it: a row whose conflict values exist is left unchanged and not answered; a single POST ignored is a 204
// without Location, a BULK answers the rows it created (201, or 200 [] when none). Two tenants: bob's conflicting
// row is ignored exactly as alice's own (no oracle), and never changed.

const ignore = 'resolution=ignore-duplicates'

async function titledApp (t: TestContext, dialect: TestDialect): Promise<TenantsApp> {
  return await tenantsApp(t, dialect, {
    prepare: async (db) => {
      await db.schema.createIndex('tasks_title').on('tasks').column('title').unique().execute()
    },
    tasks: { conflictFields: ['title'] },
  })
}

async function tasks (app: TenantsApp): Promise<Array<[number, string, string, string]>> {
  const rows = await app.db.selectFrom('tasks').select(['id', 'title', 'secret', 'owner']).orderBy('id').execute()
  return rows.map((row) => [Number(row.id), String(row.title), String(row.secret), String(row.owner)])
}

const seeded: Array<[number, string, string, string]> = [
  [1, 'a-task-1', 'alice-secret-1', 'alice'], [2, 'a-task-2', 'alice-secret-2', 'alice'],
  [3, 'b-task-3', 'bob-secret-3', 'bob'], [4, 'b-task-4', 'bob-secret-4', 'bob'],
  [5, 'a-task-5', 'alice-secret-5', 'alice'],
]

for (const dialect of dialects) {
  describe(`Prefer: resolution=ignore-duplicates on ${dialect.name}`, () => {
    test("POST: an existing row, alice's or bob's, is a 204 without Location, unchanged; a new one is 201", async (t) => {
      const app = await titledApp(t, dialect)
      const headers = { ...app.alice, prefer: ignore }
      const answers = []
      for (const title of ['a-task-1', 'b-task-3']) {
        const response = await app.app.inject({
          method: 'POST',
          url: '/tasks',
          headers,
          payload: { title, secret: 'overwritten', project_id: 1 }
        })
        answers.push([response.statusCode, response.body, response.headers.location,
          response.headers['preference-applied']])
      }
      // Alice's own row and bob's answer alike: nothing tells them apart.
      assert.deepEqual(answers, [[204, '', undefined, ignore], [204, '', undefined, ignore]])
      assert.deepEqual(await tasks(app), seeded)
      const created = await app.app.inject({
        method: 'POST',
        url: '/tasks',
        headers,
        payload: { title: 'new', secret: 's', project_id: 1 }
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.headers.location, '/tasks/6')
      assert.equal(created.headers['preference-applied'], ignore)
      assert.equal(created.json().title, 'new')
      assert.deepEqual(await tasks(app), [...seeded, [6, 'new', 's', 'alice']])
    })

    test('BULK: only the created rows, in element order (201); none created is 200 []', async (t) => {
      const app = await titledApp(t, dialect)
      const headers = { ...app.alice, prefer: ignore }
      const payload = [
        { title: 'a-task-2', secret: 'x', project_id: 1 },
        { title: 'n1', secret: 'one', project_id: 1 },
        { title: 'b-task-4', secret: 'x', project_id: 1 },
        { title: 'n2', secret: 'two', project_id: null },
      ]
      const bulk = await app.app.inject({ method: 'POST', url: '/tasks/bulk', headers, payload })
      assert.equal(bulk.statusCode, 201, bulk.body)
      assert.equal(bulk.headers['preference-applied'], ignore)
      assert.deepEqual(bulk.json().map((row: { id: number; title: string }) => [row.id, row.title]), [[6, 'n1'], [7, 'n2']])
      assert.deepEqual(await tasks(app), [...seeded, [6, 'n1', 'one', 'alice'], [7, 'n2', 'two', 'alice']])
      const none = await app.app.inject({ method: 'POST', url: '/tasks/bulk', headers, payload: payload.slice(0, 3) })
      assert.equal(none.statusCode, 200)
      assert.deepEqual(none.json(), [])
      assert.equal(none.headers['preference-applied'], ignore)
      assert.equal((await tasks(app)).length, 7)
    })
  })
}
