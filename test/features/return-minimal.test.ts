import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import { dialects } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf } from '../helpers/app.js'
import { Task, tenantsApp } from '../helpers/tenants.js'
import type { TenantsApp } from '../helpers/tenants.js'

// `Prefer: return=minimal` (issue 38, item 7) on POST, BULK, PUT and PATCH: no body (201 with Location, or 204), the
// ETag still sent, no relation loaded, `Preference-Applied: return=minimal`. Two tenants: another tenant's row stays a
// 404 and is not changed.

const Versioned = Type.Object({ ...Task.properties, version: Type.Optional(Type.Integer({ readOnly: true })) })

async function versionedApp (t: TestContext, dialect: TestDialect): Promise<TenantsApp> {
  return await tenantsApp(t, dialect, {
    prepare: async (db) => {
      await sql`alter table tasks add column version integer not null default 1`.execute(db)
      await db.schema.createIndex('tasks_title').on('tasks').column('title').unique().execute()
    },
    tasks: { schema: Versioned, versionField: 'version', conflictFields: ['title'] },
  })
}

const minimal = { prefer: 'return=minimal' }

async function task (app: TenantsApp, id: number) {
  const row = await app.db.selectFrom('tasks').select(['title', 'owner', 'version']).where('id', '=', id)
    .executeTakeFirst()
  return row === undefined ? undefined : { ...row, version: Number(row.version) }
}

for (const dialect of dialects) {
  describe(`Prefer: return=minimal on ${dialect.name}`, () => {
    test('POST: 201, Location, ETag, no body; the row is stored', async (t) => {
      const app = await versionedApp(t, dialect)
      const response = await app.app.inject({
        method: 'POST',
        url: '/tasks',
        headers: { ...app.alice, ...minimal },
        payload: { title: 'new', project_id: 1 }
      })
      assert.equal(response.statusCode, 201)
      assert.equal(response.body, '')
      assert.equal(response.headers.location, '/tasks/6')
      assert.equal(response.headers.etag, '"1"')
      assert.equal(response.headers['preference-applied'], 'return=minimal')
      assert.deepEqual(await task(app, 6), { title: 'new', owner: 'alice', version: 1 })
    })

    test('PATCH and PUT: 204 with the new ETag, and no relation loaded', async (t) => {
      const app = await versionedApp(t, dialect)
      app.queries.length = 0
      const full = await app.app.inject({
        method: 'PATCH',
        url: '/tasks/1',
        headers: app.alice,
        payload: { title: 'full' }
      })
      assert.equal(full.statusCode, 200)
      const withBody = app.queries.length
      app.queries.length = 0
      const patch = await app.app.inject({
        method: 'PATCH',
        url: '/tasks/1',
        headers: { ...app.alice, ...minimal },
        payload: { title: 'patched' }
      })
      assert.equal(patch.statusCode, 204)
      assert.equal(patch.body, '')
      assert.equal(patch.headers.etag, '"3"')
      assert.equal(patch.headers['preference-applied'], 'return=minimal')
      assert.ok(!app.queries.some((query) => /task_tags|"projects"|`projects`/.test(query)), app.queries.join('\n'))
      assert.ok(app.queries.length < withBody, `${app.queries.length} statements, ${withBody} with the body`)
      t.diagnostic(`PATCH statements: ${withBody} with the body, ${app.queries.length} with return=minimal`)
      const put = await app.app.inject({
        method: 'PUT',
        url: '/tasks/1',
        headers: { ...app.alice, ...minimal },
        payload: { title: 'put', project_id: 3 }
      })
      assert.equal(put.statusCode, 204)
      assert.equal(put.headers.etag, '"4"')
      assert.deepEqual(await task(app, 1), { title: 'put', owner: 'alice', version: 4 })
      const get = await app.app.inject({ method: 'GET', url: '/tasks/1', headers: app.alice })
      assert.equal(get.headers.etag, put.headers.etag)
    })

    test("another tenant's row stays a 404, unchanged", async (t) => {
      const app = await versionedApp(t, dialect)
      const response = await app.app.inject({
        method: 'PATCH',
        url: '/tasks/3',
        headers: { ...app.bob, ...minimal },
        payload: { title: 'mine' }
      })
      assert.equal(response.statusCode, 204, 'bob owns task 3')
      const stolen = await app.app.inject({
        method: 'PATCH',
        url: '/tasks/3',
        headers: { ...app.alice, ...minimal },
        payload: { title: 'stolen' }
      })
      assert.equal(stolen.statusCode, 404)
      assert.equal(problemOf(stolen).code, 'FST_VIEWSET_NOT_FOUND')
      assert.deepEqual(await task(app, 3), { title: 'mine', owner: 'bob', version: 2 })
    })

    test('BULK: 201 without a body; an upsert that only updates: 204, both preferences applied', async (t) => {
      const app = await versionedApp(t, dialect)
      const bulk = await app.app.inject({
        method: 'POST',
        url: '/tasks/bulk',
        headers: { ...app.alice, ...minimal },
        payload: [{ title: 'b1', project_id: 1 }, { title: 'b2', project_id: null }]
      })
      assert.equal(bulk.statusCode, 201)
      assert.equal(bulk.body, '')
      assert.equal(bulk.headers['preference-applied'], 'return=minimal')
      assert.deepEqual(await task(app, 7), { title: 'b2', owner: 'alice', version: 1 })
      const headers = { ...app.alice, prefer: 'resolution=merge-duplicates, return=minimal' }
      const upsert = await app.app.inject({
        method: 'POST',
        url: '/tasks',
        headers,
        payload: { title: 'b1', project_id: 3 }
      })
      assert.equal(upsert.statusCode, 204)
      assert.equal(upsert.headers['preference-applied'], 'resolution=merge-duplicates, return=minimal')
      assert.equal(upsert.headers.location, undefined)
      assert.equal(upsert.headers.etag, '"2"')
    })
  })
}
