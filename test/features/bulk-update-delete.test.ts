import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { compileErrors, validate } from '@readme/openapi-parser'
import { createViewset, ViewsetErrors, viewsetDocs } from 'fastify-viewsets'
import type { AfterWriteFunction } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import { ownerRule, tenantsApp } from '../helpers/tenants.js'
import type { TenantsApp, TenantsDB } from '../helpers/tenants.js'

// Bulk update and delete (issue 38 item 1): PATCH_MANY `PATCH /tasks?<filters>`, DELETE_MANY `DELETE /tasks?<filters>`
// and BULK_PATCH `PATCH /tasks/bulk`, on two tenants: never another tenant's row, at least one filter, max-affected,
// return=representation and return=minimal, If-Match: * under requireIfMatch, the rule's WITH CHECK, field rules,
// afterWrite once per row (committed and rolled back with the write), all or none; the database state after each.

interface AuditDB extends TenantsDB {
  audit: { method: string; who: string; task_id: number; before_title: string | null; after_title: string | null }
}

interface TaskRow { id: number; title: string; owner: string }

const audit: AfterWriteFunction<AuditDB, TaskRow> = async ({ method, token }, { before, after }, trx) => {
  if (after?.title === 'rolled-back') throw new ViewsetErrors.Forbidden('not this title')
  const row = after ?? before
  await trx.insertInto('audit').values({
    method,
    who: token?.sub ?? '',
    task_id: Number(row?.id),
    before_title: before?.title ?? null,
    after_title: after?.title ?? null,
  }).execute()
}

const filterFields = { title: ['eq', 'contains', 'in'], project_id: ['eq', 'isnull'], secret: ['eq'] }

async function bulkApp (
  t: TestContext, dialect: TestDialect, tasks: Record<string, unknown> = {}
): Promise<TenantsApp> {
  return await tenantsApp(t, dialect, {
    prepare: async (db) => {
      await db.schema.createTable('audit').addColumn('method', 'varchar(16)', (column) => column.notNull())
        .addColumn('who', 'varchar(64)', (column) => column.notNull())
        .addColumn('task_id', 'integer', (column) => column.notNull())
        .addColumn('before_title', 'varchar(64)').addColumn('after_title', 'varchar(64)').execute()
    },
    tasks: { filterFields, searchFields: ['title'], afterWrite: audit, ...tasks },
  })
}

type Method = 'PATCH' | 'DELETE'

async function send (app: TenantsApp, method: Method, url: string, payload?: unknown,
  headers: Record<string, string> = app.alice) {
  const body = payload === undefined ? {} : { payload: payload as object }
  return await app.app.inject({ method, url, headers, ...body })
}

async function tasks (app: TenantsApp): Promise<Array<[number, string, string, string]>> {
  const rows = await app.db.selectFrom('tasks').select(['id', 'title', 'owner', 'secret']).orderBy('id').execute()
  return rows.map((row) => [Number(row.id), String(row.title), String(row.owner), String(row.secret)])
}

async function audited (app: TenantsApp) {
  const rows = await app.db.selectFrom('audit').selectAll().orderBy('task_id').orderBy('method').execute()
  return rows.map((row) => ({ ...row, task_id: Number(row.task_id) }) as AuditDB['audit'])
}

const seeded: Array<[number, string, string, string]> = [
  [1, 'a-task-1', 'alice', 'alice-secret-1'], [2, 'a-task-2', 'alice', 'alice-secret-2'],
  [3, 'b-task-3', 'bob', 'bob-secret-3'], [4, 'b-task-4', 'bob', 'bob-secret-4'],
  [5, 'a-task-5', 'alice', 'alice-secret-5'],
]

/** The seeded rows with some titles changed. */
function retitled (titles: Record<number, string>): Array<[number, string, string, string]> {
  return seeded.map(([id, title, owner, secret]) => [id, titles[id] ?? title, owner, secret])
}

const VersionedItem = Type.Object({ ...Item.properties, version: Type.Optional(Type.Integer()) })

/** Items with a version column, their docs, and the three bulk routes. */
async function itemsApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  await database.db.schema.alterTable('items')
    .addColumn('version', 'integer', (column) => column.notNull().defaultTo(1)).execute()
  await database.db.insertInto('items').values([{ name: 'a', price: 1 }, { name: 'b', price: 2 }, { name: 'c', price: 3 }])
    .execute()
  const app = testApp(t)
  await app.register(viewsetDocs)
  await app.register(createViewset({
    db: database.db,
    table: 'items',
    schema: VersionedItem,
    versionField: 'version',
    methods: ['LIST', 'GET', 'PATCH', 'PATCH_MANY', 'BULK_PATCH', 'DELETE_MANY'],
    filterFields: { price: ['gte', 'lte'], name: ['eq'] },
  }), { prefix: '/items' })
  await app.ready()
  return { app, db: database.db, queries: database.queries }
}

/** The statements logged, by their first word (`update`, `select`, `begin`). */
function verbs (queries: readonly string[]): string[] {
  return queries.map((query) => query.trimStart().split(/\s/)[0]?.toLowerCase() ?? '')
}

for (const dialect of dialects) {
  describe(`bulk update and delete on ${dialect.name}`, () => {
    test('OpenAPI documents the three routes; every row a bulk update writes gets a new version (ETag)', async (t) => {
      const { app, db } = await itemsApp(t, dialect)
      const document = (await app.inject('/docs/json')).json()
      const result = await validate(structuredClone(document))
      assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
      const { patch, delete: remove } = document.paths['/items']
      assert.equal(patch.operationId, 'updateWhereItems')
      assert.equal(remove.operationId, 'deleteWhereItems')
      assert.equal(document.paths['/items/bulk'].patch.operationId, 'updateManyItems')
      for (const operation of [patch, remove]) {
        const parameters = operation.parameters.map((parameter: { in: string; name: string }) =>
          `${parameter.in}:${parameter.name}`)
        assert.ok(parameters.includes('query:price__gte'), parameters.join())
        assert.ok(parameters.includes('header:prefer') && parameters.includes('header:if-match'), parameters.join())
        assert.ok(!parameters.includes('query:limit') && !parameters.includes('query:order_by'), parameters.join())
        assert.ok(operation.responses['200'] && operation.responses['400'] && operation.responses['409'])
      }
      assert.ok(document.paths['/items/bulk'].patch.responses['404'])
      const many = await app.inject({ method: 'PATCH', url: '/items?price__gte=2', payload: { description: 'd' } })
      assert.deepEqual(many.json(), { affected: 2 })
      const bulk = await app.inject({ method: 'PATCH', url: '/items/bulk', payload: [{ id: 3, name: 'c2' }] })
      assert.deepEqual(bulk.json().map((row: { version: number }) => row.version), [3])
      const rows = await db.selectFrom('items').select(['id', 'version', 'description']).orderBy('id').execute()
      assert.deepEqual(rows.map((row) => [Number(row.id), Number(row.version), row.description]),
        [[1, 1, null], [2, 2, 'd'], [3, 3, 'd']])
      const got = await app.inject({ url: '/items/2' })
      assert.equal(got.headers.etag, '"2"')
      const deleted = await app.inject({ method: 'DELETE', url: '/items?name=a' })
      assert.deepEqual(deleted.json(), { affected: 1 })
    })

    test('a PATCH_MANY that needs no row is one bounded UPDATE where the database can: past the bound, none', async (t) => {
      const { app, db, queries } = await itemsApp(t, dialect)
      // MariaDB answers the rows changed, not the rows matched: its bulk writes read the rows first, in a transaction.
      const one = dialect.name !== 'mysql'
      queries.length = 0
      const many = await app.inject({ method: 'PATCH', url: '/items?price__gte=2', payload: { description: 'd' } })
      assert.equal(many.statusCode, 200)
      assert.deepEqual(many.json(), { affected: 2 })
      if (one) assert.deepEqual(verbs(queries), ['update'])
      const over = await app.inject({
        method: 'PATCH', url: '/items?price__gte=1', payload: { description: 'x' }, headers: { prefer: 'max-affected=2' },
      })
      assert.equal(over.statusCode, 400)
      assert.equal(problemOf(over).errors?.[0]?.field, 'max-affected')
      queries.length = 0
      const none = await app.inject({ method: 'PATCH', url: '/items?name=zz', payload: { description: 'x' } })
      assert.deepEqual(none.json(), { affected: 0 })
      if (one) assert.deepEqual(verbs(queries), ['update', 'select'])
      const rows = await db.selectFrom('items').select(['id', 'version', 'description']).orderBy('id').execute()
      assert.deepEqual(rows.map((row) => [Number(row.id), Number(row.version), row.description]),
        [[1, 1, null], [2, 2, 'd'], [3, 2, 'd']])
    })

    test("PATCH_MANY changes the caller's rows the filters select, never another tenant's", async (t) => {
      const app = await bulkApp(t, dialect)
      // Project 2 is bob's; alice's task 2 is planted in it, bob's task 3 belongs to it.
      const alice = await send(app, 'PATCH', '/tasks?project_id=2', { title: 'moved' })
      assert.equal(alice.statusCode, 200, alice.body)
      assert.deepEqual(alice.json(), { affected: 1 })
      const bob = await send(app, 'PATCH', '/tasks?title__contains=task', { secret: 's' }, app.bob)
      assert.deepEqual(bob.json(), { affected: 2 })
      const expected = retitled({ 2: 'moved' }).map(([id, title, owner, secret]): [number, string, string, string] =>
        [id, title, owner, owner === 'bob' ? 's' : secret])
      assert.deepEqual(await tasks(app), expected)
      assert.deepEqual(await audited(app), [
        { method: 'PATCH_MANY', who: 'alice', task_id: 2, before_title: 'a-task-2', after_title: 'moved' },
        { method: 'PATCH_MANY', who: 'bob', task_id: 3, before_title: 'b-task-3', after_title: 'b-task-3' },
        { method: 'PATCH_MANY', who: 'bob', task_id: 4, before_title: 'b-task-4', after_title: 'b-task-4' },
      ])
      // A filter that selects only bob's rows changes nothing for alice.
      const none = await send(app, 'PATCH', '/tasks?title=b-task-3', { title: 'stolen' })
      assert.deepEqual(none.json(), { affected: 0 })
      assert.deepEqual(await tasks(app), expected)
    })

    test("DELETE_MANY deletes the caller's rows the filters select, search and groups included", async (t) => {
      const app = await bulkApp(t, dialect)
      const byProject = await send(app, 'DELETE', '/tasks?project_id=1')
      assert.equal(byProject.statusCode, 200, byProject.body)
      assert.deepEqual(byProject.json(), { affected: 1 })
      const searched = await send(app, 'DELETE', '/tasks?search=task-5')
      assert.deepEqual(searched.json(), { affected: 1 })
      const grouped = await send(app, 'DELETE', '/tasks?or=(title.eq.b-task-3,title.eq.b-task-4)')
      assert.deepEqual(grouped.json(), { affected: 0 })
      assert.deepEqual((await tasks(app)).map(([id]) => id), [2, 3, 4])
      assert.deepEqual(await audited(app), [
        { method: 'DELETE_MANY', who: 'alice', task_id: 1, before_title: 'a-task-1', after_title: null },
        { method: 'DELETE_MANY', who: 'alice', task_id: 5, before_title: 'a-task-5', after_title: null },
      ])
    })

    test('no filter is a 400 and nothing changes: limit, offset and order_by are no filter', async (t) => {
      const app = await bulkApp(t, dialect)
      for (const [method, url] of [
        ['PATCH', '/tasks'], ['DELETE', '/tasks'], ['PATCH', '/tasks?limit=5'], ['DELETE', '/tasks?order_by=id'],
        ['DELETE', '/tasks?offset=0'],
      ] as const) {
        const response = await send(app, method, url, method === 'PATCH' ? { title: 'all' } : undefined)
        assert.equal(response.statusCode, 400, `${method} ${url}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
      }
      const bare = problemOf(await send(app, 'DELETE', '/tasks'))
      assert.match(bare.detail, /needs at least one/)
      assert.deepEqual(await tasks(app), seeded)
      assert.deepEqual(await audited(app), [])
    })

    test('Prefer: max-affected and the maxAffected option: past either a 400 naming max-affected, nothing written', async (t) => {
      const app = await bulkApp(t, dialect)
      const over = await send(app, 'PATCH', '/tasks?title__contains=a-task', { title: 'x' },
        { ...app.alice, prefer: 'max-affected=2' })
      assert.equal(over.statusCode, 400)
      const problem = problemOf(over)
      assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
      assert.equal(problem.errors?.[0]?.field, 'max-affected')
      const deleting = await send(app, 'DELETE', '/tasks?title__contains=a-task', undefined,
        { ...app.alice, prefer: 'max-affected=1' })
      assert.equal(deleting.statusCode, 400)
      const malformed = await send(app, 'DELETE', '/tasks?title__contains=a-task', undefined,
        { ...app.alice, prefer: 'max-affected=many' })
      assert.equal(malformed.statusCode, 400)
      assert.deepEqual(await tasks(app), seeded)
      assert.deepEqual(await audited(app), [])
      const within = await send(app, 'PATCH', '/tasks?title__contains=a-task', { secret: 'y' },
        { ...app.alice, prefer: 'max-affected=3' })
      assert.deepEqual(within.json(), { affected: 3 })
      const bounded = await bulkApp(t, dialect, { maxAffected: 2 })
      const option = await send(bounded, 'DELETE', '/tasks?title__contains=a-task')
      assert.equal(option.statusCode, 400)
      assert.equal(problemOf(option).errors?.[0]?.field, 'max-affected')
      // A header cannot raise the option's bound.
      const raised = await send(bounded, 'DELETE', '/tasks?title__contains=a-task', undefined,
        { ...bounded.alice, prefer: 'max-affected=10' })
      assert.equal(raised.statusCode, 400)
      assert.deepEqual(await tasks(bounded), seeded)
    })

    test('return=representation answers the rows (with relations), past maxBulk a 400; return=minimal a 204', async (t) => {
      const app = await bulkApp(t, dialect, { maxBulk: 2, maxAffected: 10 })
      const headers = { ...app.alice, prefer: 'return=representation' }
      const over = await send(app, 'PATCH', '/tasks?title__contains=a-task', { title: 'x' }, headers)
      assert.equal(over.statusCode, 400)
      assert.equal(problemOf(over).errors?.[0]?.field, 'return=representation')
      assert.deepEqual(await tasks(app), seeded)
      const rows = await send(app, 'PATCH', '/tasks?project_id=1', { title: 'shown' }, headers)
      assert.equal(rows.statusCode, 200, rows.body)
      assert.equal(rows.headers['preference-applied'], 'return=representation')
      const [row] = rows.json()
      assert.equal(row.id, 1)
      assert.equal(row.title, 'shown')
      assert.equal(row.project.name, 'a-proj')
      // The tags relation loads under its table's rule: alice's tag only.
      assert.deepEqual(row.tags.map((tag: { name: string }) => tag.name), ['a-tag'])
      const deleted = await send(app, 'DELETE', '/tasks?title=a-task-5', undefined, headers)
      assert.deepEqual(deleted.json().map((task: { id: number }) => task.id), [5])
      const minimal = await send(app, 'PATCH', '/tasks?title=a-task-2', { title: 'quiet' },
        { ...app.alice, prefer: 'return=minimal' })
      assert.equal(minimal.statusCode, 204)
      assert.equal(minimal.body, '')
      assert.equal(minimal.headers['preference-applied'], 'return=minimal')
      assert.deepEqual((await tasks(app)).map(([id, title]) => [id, title]),
        [[1, 'shown'], [2, 'quiet'], [3, 'b-task-3'], [4, 'b-task-4']])
    })

    test('requireIfMatch: the collection routes answer 428 unless If-Match: *; another tag is a 400', async (t) => {
      const app = await bulkApp(t, dialect, { requireIfMatch: true })
      const requests = [
        ['PATCH', '/tasks?title=a-task-1', { title: 'x' }],
        ['DELETE', '/tasks?title=a-task-1', undefined],
        ['PATCH', '/tasks/bulk', [{ id: 1, title: 'x' }]],
      ] as const
      for (const [method, url, payload] of requests) {
        const missing = await send(app, method, url, payload)
        assert.equal(missing.statusCode, 428, `${method} ${url}`)
        assert.equal(problemOf(missing).code, 'FST_VIEWSET_PRECONDITION_REQUIRED')
        const tagged = await send(app, method, url, payload, { ...app.alice, 'if-match': '"1"' })
        assert.equal(tagged.statusCode, 400, `${method} ${url}`)
      }
      assert.deepEqual(await tasks(app), seeded)
      const [patch, remove] = requests
      const patched = await send(app, patch[0], patch[1], patch[2], { ...app.alice, 'if-match': '*' })
      assert.deepEqual(patched.json(), { affected: 1 })
      const bulk = await send(app, 'PATCH', '/tasks/bulk', [{ id: 5, title: 'y' }], { ...app.alice, 'if-match': '*' })
      assert.equal(bulk.statusCode, 200)
      const removed = await send(app, remove[0], '/tasks?title=x', undefined, { ...app.alice, 'if-match': '*' })
      assert.deepEqual(removed.json(), { affected: 1 })
      assert.deepEqual((await tasks(app)).map(([id, title]) => [id, title]),
        [[2, 'a-task-2'], [3, 'b-task-3'], [4, 'b-task-4'], [5, 'y']])
    })

    test("afterWrite's error rolls back the whole write and its audit rows", async (t) => {
      const app = await bulkApp(t, dialect)
      const many = await send(app, 'PATCH', '/tasks?title__contains=a-task', { title: 'rolled-back' })
      assert.equal(many.statusCode, 403)
      const bulk = await send(app, 'PATCH', '/tasks/bulk', [{ id: 1, title: 'fine' }, { id: 2, title: 'rolled-back' }])
      assert.equal(bulk.statusCode, 403)
      assert.match(problemOf(bulk).detail, /\(element 1\)$/)
      assert.deepEqual(await tasks(app), seeded)
      assert.deepEqual(await audited(app), [])
    })

    test('a write the rule would no longer admit (WITH CHECK) is a 403 on every bulk route, nothing written', async (t) => {
      const scope = (eb: any, context: { token: { sub?: string } | null }) =>
        eb.and([ownerRule(eb, context), eb('title', '<>', 'outside')])
      const app = await bulkApp(t, dialect, { scope })
      const many = await send(app, 'PATCH', '/tasks?project_id=1', { title: 'outside' })
      assert.equal(many.statusCode, 403)
      assert.equal(problemOf(many).code, 'FST_VIEWSET_FORBIDDEN')
      const bulk = await send(app, 'PATCH', '/tasks/bulk', [{ id: 1, title: 'in' }, { id: 5, title: 'outside' }])
      assert.equal(bulk.statusCode, 403)
      assert.deepEqual(await tasks(app), seeded)
      assert.deepEqual(await audited(app), [])
    })

    test('BULK_PATCH: rows as stored in element order; a missing or foreign row is a 404 naming /<index>', async (t) => {
      const app = await bulkApp(t, dialect)
      const refused = await send(app, 'PATCH', '/tasks/bulk',
        [{ id: 1, title: 'x' }, { id: 3, title: 'stolen' }, { id: 99, title: 'y' }])
      assert.equal(refused.statusCode, 404, refused.body)
      const problem = problemOf(refused)
      assert.equal(problem.code, 'FST_VIEWSET_NOT_FOUND')
      assert.deepEqual(problem.errors?.map((error) => error.field), ['/1', '/2'])
      assert.deepEqual(await tasks(app), seeded)
      const repeated = await send(app, 'PATCH', '/tasks/bulk', [{ id: 1, title: 'x' }, { id: 1, title: 'y' }])
      assert.equal(repeated.statusCode, 400)
      assert.equal(problemOf(repeated).errors?.[0]?.field, '/1/id')
      const keyless = await send(app, 'PATCH', '/tasks/bulk', [{ title: 'no key' }])
      assert.equal(keyless.statusCode, 400)
      const written = await send(app, 'PATCH', '/tasks/bulk', [{ id: 5, title: 'e' }, { id: 1, secret: 'f' }])
      assert.equal(written.statusCode, 200, written.body)
      assert.deepEqual(written.json().map((row: TaskRow & { secret: string }) => [row.id, row.title, row.secret]),
        [[5, 'e', 'alice-secret-5'], [1, 'a-task-1', 'f']])
      assert.deepEqual(await tasks(app), seeded.map(([id, title, owner, secret]): [number, string, string, string] =>
        id === 5 ? [id, 'e', owner, secret] : id === 1 ? [id, title, owner, 'f'] : [id, title, owner, secret]))
      assert.deepEqual((await audited(app)).map((row) => [row.method, row.task_id]), [['BULK_PATCH', 1], ['BULK_PATCH', 5]])
      const minimal = await send(app, 'PATCH', '/tasks/bulk', [{ id: 2, title: 'm' }],
        { ...app.alice, prefer: 'return=minimal' })
      assert.equal(minimal.statusCode, 204)
    })

    test('protected and authorized as their base method; beforeWrite is told the bulk method names', async (t) => {
      const seen: string[] = []
      const app = await bulkApp(t, dialect, {
        beforeWrite: (values: Record<string, unknown>,
          { token, method }: { token: { sub?: string } | null; method: string }) => {
          seen.push(method)
          if (values.title === 'refused') {
            throw new ViewsetErrors.Validation('refused', [{ in: 'body', field: 'title', message: 'is refused' }])
          }
          return { ...values, owner: token?.sub ?? '' }
        },
      })
      for (const [method, url, payload] of [
        ['PATCH', '/tasks?title=a-task-1', { title: 'x' }], ['DELETE', '/tasks?title=a-task-1', undefined],
        ['PATCH', '/tasks/bulk', [{ id: 1, title: 'x' }]],
      ] as const) {
        const anonymous = await send(app, method, url, payload, {})
        assert.equal(anonymous.statusCode, 401, `${method} ${url}`)
      }
      const named = await send(app, 'PATCH', '/tasks/bulk', [{ id: 1, title: 'ok' }, { id: 2, title: 'refused' }])
      assert.equal(named.statusCode, 400)
      assert.deepEqual(problemOf(named).errors?.map((error) => error.field), ['/1/title'])
      await send(app, 'PATCH', '/tasks?title=a-task-5', { title: 'five' })
      assert.deepEqual([...new Set(seen)], ['BULK_PATCH', 'PATCH_MANY'])
      assert.deepEqual(await tasks(app), retitled({ 5: 'five' }))
    })

    test('field rules: a hidden field is unknown in the filters and the body; a read-only one is ignored', async (t) => {
      const app = await bulkApp(t, dialect, {
        fieldAccess: () => ({ hidden: ['secret'], readOnly: ['project_id'] }),
      })
      const filtered = await send(app, 'PATCH', '/tasks?secret=alice-secret-1', { title: 'probe' })
      assert.equal(filtered.statusCode, 400)
      const deleted = await send(app, 'DELETE', '/tasks?secret=alice-secret-1')
      assert.equal(deleted.statusCode, 400)
      const body = await send(app, 'PATCH', '/tasks?title=a-task-1', { secret: 'x' })
      assert.equal(body.statusCode, 400)
      const element = await send(app, 'PATCH', '/tasks/bulk', [{ id: 1, secret: 'x' }])
      assert.equal(element.statusCode, 400)
      assert.deepEqual(await tasks(app), seeded)
      const ignored = await send(app, 'PATCH', '/tasks?title=a-task-1', { title: 'kept', project_id: 3 },
        { ...app.alice, prefer: 'return=representation' })
      assert.equal(ignored.statusCode, 200, ignored.body)
      const [row] = ignored.json()
      assert.equal(row.secret, undefined)
      assert.equal(row.project_id, 1)
    })
  })
}
