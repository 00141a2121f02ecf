import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset, viewsetBatch, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetMethod, ViewsetOptions } from 'fastify-viewsets'
import { readHistoryAfter } from '../../lib/data/history-reader.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import type { OpenApiDocument } from '../helpers/contract.js'
import { redoclyProblems, spectralProblems } from '../helpers/openapi-lint.js'
import { projectRelations, tenantsApp } from '../helpers/tenants.js'

// A row's history (issue 39 item 3): every write recorded in its own transaction (rolled back with it), every
// column stored (`internal` is not in the schema), the actor from the token or a function, `GET /:id/history` paged
// newest first under the caller's rules (bob never reads alice's rows' history, even once deleted) and field rules
// (`secret` is hidden from non-admins in every version), `?as_of=` answering a past version, and positions monotonic
// in commit order under concurrent writers (PostgreSQL and MariaDB).

const secret = 'test-secret-that-is-long-enough-for-hs256'
const history = 'viewset_history'

const Note = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  code: Type.String(),
  owner: Type.Optional(Type.String({ readOnly: true })),
  secret: Type.Optional(Type.Union([Type.String(), Type.Null()])),
})

const defaultMethods: ViewsetMethod[] = ['LIST', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE']
const methods: ViewsetMethod[] = [...defaultMethods, 'BULK', 'PATCH_MANY', 'BULK_PATCH', 'DELETE_MANY', 'HISTORY']

interface Entry {
  position: number
  row_key: string
  operation: string
  at: string
  actor: string | null
  before: any
  after: any
}

async function entries (db: Kysely<any>, table = history): Promise<Entry[]> {
  const rows = await db.selectFrom(table).selectAll().where('table_name', '=', 'notes').orderBy('position').execute()
  return rows.map((row) => ({
    position: Number(row.position),
    row_key: row.row_key,
    operation: row.operation,
    at: row.at,
    actor: row.actor,
    before: row.before === null ? null : JSON.parse(row.before),
    after: row.after === null ? null : JSON.parse(row.after),
  }))
}

async function createNotes (db: Kysely<any>, dialect: TestDialect['name']) {
  const [type, key] = autoIncrement(dialect)
  await db.schema.createTable('notes')
    .addColumn('id', type as 'integer', key)
    .addColumn('title', 'varchar(100)', (column) => column.notNull())
    .addColumn('code', 'varchar(50)', (column) => column.notNull().unique())
    .addColumn('owner', 'varchar(50)', (column) => column.notNull())
    .addColumn('secret', 'varchar(50)')
    .addColumn('internal', 'varchar(100)')
    .execute()
}

async function historyApp (t: TestContext, dialect: TestDialect, options: Record<string, unknown> = {},
  database?: { db: Kysely<any> }, docs = false) {
  const db = database?.db ?? (await testDatabase(t, dialect)).db
  if (database === undefined) await createNotes(db, dialect.name)
  const app = testApp(t)
  if (docs) await app.register(viewsetDocs)
  await app.register(fastifyJwt, { secret })
  const given = {
    db,
    table: 'notes',
    schema: Note,
    methods,
    conflictFields: ['code'],
    filterFields: { code: ['eq'] },
    history: { createTable: true },
    scope: (eb: any, { token }: any) => eb('owner', '=', token?.sub ?? ''),
    beforeWrite: (values: any, { token }: any) => {
      if (values.title === 'refused') throw new Error('refused by beforeWrite')
      return { ...values, owner: token?.sub, ...(values.title === undefined ? {} : { internal: `i-${values.title}` }) }
    },
    afterWrite: (_context: any, { after }: any) => {
      if (after?.title === 'boom') throw new Error('boom in afterWrite')
    },
    fieldAccess: ({ token }: any) => (token?.role === 'admin' ? {} : { hidden: ['secret'] }),
    ...options,
  }
  await app.register(createViewset(given as unknown as ViewsetOptions<any, 'notes', typeof Note>), { prefix: '/notes' })
  await app.register(viewsetBatch())
  await app.ready()
  const bearer = (sub: string, role?: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub, role })}` })
  return { db, app, alice: bearer('alice'), admin: bearer('alice', 'admin'), bob: bearer('bob') }
}

async function post (app: FastifyInstance, who: Record<string, string>, payload: object) {
  const response = await app.inject({ method: 'POST', url: '/notes', headers: who, payload })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().id as number
}

for (const dialect of dialects) {
  describe(`history (${dialect.name})`, () => {
    test('every write kind is recorded in its transaction, every column, with its actor', async (t) => {
      const { db, app, alice, admin } = await historyApp(t, dialect)
      const id = await post(app, admin, { title: 'one', code: 'a', secret: 's1' })
      let response = await app.inject({ method: 'PATCH', url: `/notes/${id}`, headers: alice, payload: { title: 'two' } })
      assert.equal(response.statusCode, 200, response.body)
      response = await app.inject({
        method: 'PUT',
        url: `/notes/${id}`,
        headers: admin,
        payload: { title: 'three', code: 'a', secret: null }
      })
      assert.equal(response.statusCode, 200, response.body)
      response = await app.inject({
        method: 'POST',
        url: '/notes/bulk',
        headers: alice,
        payload: [{ title: 'b1', code: 'b1' }, { title: 'b2', code: 'b2' }]
      })
      assert.equal(response.statusCode, 201, response.body)
      const [b1, b2] = response.json().map((row: any) => row.id)
      const merge = { ...alice, prefer: 'resolution=merge-duplicates' }
      response = await app.inject({ method: 'POST', url: '/notes', headers: merge, payload: { title: 'u1', code: 'b1' } })
      assert.equal(response.statusCode, 200, response.body)
      response = await app.inject({ method: 'POST', url: '/notes', headers: merge, payload: { title: 'u2', code: 'c' } })
      assert.equal(response.statusCode, 201, response.body)
      const c = response.json().id
      response = await app.inject({ method: 'PATCH', url: '/notes?code=b2', headers: alice, payload: { title: 'many' } })
      assert.equal(response.statusCode, 200, response.body)
      response = await app.inject({
        method: 'PATCH',
        url: '/notes/bulk',
        headers: alice,
        payload: [{ id: b1, title: 'bp1' }]
      })
      assert.equal(response.statusCode, 200, response.body)
      response = await app.inject({ method: 'DELETE', url: `/notes/${id}`, headers: alice })
      assert.equal(response.statusCode, 204, response.body)
      response = await app.inject({ method: 'DELETE', url: '/notes?code=c', headers: alice })
      assert.equal(response.statusCode, 200, response.body)

      const recorded = await entries(db)
      const key = (n: number) => `{"id":${n}}`
      assert.deepEqual(recorded.map((entry) => [entry.operation, entry.row_key]), [
        ['create', key(id)], ['update', key(id)], ['update', key(id)],
        ['create', key(b1)], ['create', key(b2)],
        ['update', key(b1)], ['create', key(c)],
        ['update', key(b2)], ['update', key(b1)],
        ['delete', key(id)], ['delete', key(c)],
      ])
      assert.ok(recorded.every((entry) => entry.actor === 'alice'))
      assert.ok(recorded.every((entry, index) => index === 0 || entry.position > (recorded[index - 1]?.position ?? 0)))
      assert.ok(recorded.every((entry) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(entry.at)))
      // Every column as stored, the one outside the schema too.
      const [created, patched] = recorded
      assert.equal(created?.before, null)
      assert.deepEqual(created?.after, { id, title: 'one', code: 'a', owner: 'alice', secret: 's1', internal: 'i-one' })
      assert.deepEqual(patched?.before, created?.after)
      assert.deepEqual(patched?.after, { id, title: 'two', code: 'a', owner: 'alice', secret: 's1', internal: 'i-two' })
      const deleted = recorded[9]
      assert.equal(deleted?.after, null)
      assert.equal(deleted?.before.internal, 'i-three')
      assert.equal(recorded[10]?.before.internal, 'i-u2')
      assert.equal(recorded[7]?.before.internal, 'i-b2')
    })

    test('a write that fails leaves no entry (beforeWrite or afterWrite throws, a 404)', async (t) => {
      const { db, app, alice, bob } = await historyApp(t, dialect)
      const id = await post(app, alice, { title: 'one', code: 'a' })
      let response = await app.inject({ method: 'PATCH', url: `/notes/${id}`, headers: alice, payload: { title: 'boom' } })
      assert.equal(response.statusCode, 500)
      response = await app.inject({ method: 'POST', url: '/notes', headers: alice, payload: { title: 'boom', code: 'b' } })
      assert.equal(response.statusCode, 500)
      response = await app.inject({
        method: 'POST',
        url: '/notes/bulk',
        headers: alice,
        payload: [{ title: 'fine', code: 'c' }, { title: 'boom', code: 'd' }]
      })
      assert.equal(response.statusCode, 500)
      response = await app.inject({ method: 'PATCH', url: `/notes/${id}`, headers: alice, payload: { title: 'refused' } })
      assert.equal(response.statusCode, 500)
      response = await app.inject({ method: 'PATCH', url: `/notes/${id}`, headers: bob, payload: { title: 'x' } })
      assert.equal(response.statusCode, 404)
      response = await app.inject({ method: 'DELETE', url: `/notes/${id}`, headers: bob })
      assert.equal(response.statusCode, 404)
      assert.deepEqual((await entries(db)).map((entry) => entry.operation), ['create'])
      const rows = await db.selectFrom('notes').select(['title']).execute()
      assert.deepEqual(rows, [{ title: 'one' }])
    })

    test('batch operations are recorded as their routes record them, and roll back with the batch', async (t) => {
      const { db, app, alice } = await historyApp(t, dialect)
      const id = await post(app, alice, { title: 'one', code: 'a' })
      const operations = [
        { method: 'POST', path: '/notes', body: { title: 'two', code: 'b' } },
        { method: 'PATCH', path: `/notes/${id}`, body: { title: 'one bis' } },
      ]
      let response = await app.inject({ method: 'POST', url: '/batch', headers: alice, payload: { operations } })
      assert.equal(response.statusCode, 200, response.body)
      const created = response.json().results[0].body.id
      response = await app.inject({
        method: 'POST',
        url: '/batch',
        headers: alice,
        payload: {
          operations: [{ method: 'PATCH', path: `/notes/${id}`, body: { title: 'three' } },
            { method: 'DELETE', path: '/notes/999999' }],
        }
      })
      assert.equal(response.statusCode, 404, response.body)
      assert.deepEqual((await entries(db)).map((entry) => [entry.operation, entry.row_key, entry.after?.title]), [
        ['create', `{"id":${id}}`, 'one'], ['create', `{"id":${created}}`, 'two'], ['update', `{"id":${id}}`, 'one bis'],
      ])
    })

    test('a nested write records its children when their viewset keeps a history, all or none', async (t) => {
      const writable = { prefetchRelated: { tasks: { ...projectRelations.prefetchRelated.tasks, writable: true } } }
      const app = await tenantsApp(t, dialect, {
        projects: { relatedConfig: writable, history: { createTable: true } },
        tasks: { history: { createTable: true } },
      })
      let response = await app.app.inject({
        method: 'POST',
        url: '/projects',
        headers: app.alice,
        payload: { name: 'new-proj', tasks: [{ title: 'n-1' }, { title: 'n-2' }] }
      })
      assert.equal(response.statusCode, 201, response.body)
      response = await app.app.inject({
        method: 'POST',
        url: '/projects',
        headers: app.alice,
        payload: { name: 'bad-proj', tasks: [{ title: 'n-3' }, { title: 7 }] }
      })
      assert.ok(response.statusCode >= 400 && response.statusCode < 500, response.body)
      const recorded = await app.db.selectFrom(history).select(['table_name', 'operation', 'actor'])
        .orderBy('position').execute()
      assert.deepEqual(recorded.map((row) => [row.table_name, row.operation, row.actor]), [
        ['projects', 'create', 'alice'], ['tasks', 'create', 'alice'], ['tasks', 'create', 'alice'],
      ])
    })

    test('GET /:id/history: newest first, paged, rules and field rules, a hard-deleted row', async (t) => {
      const { app, alice, admin, bob } = await historyApp(t, dialect)
      const id = await post(app, admin, { title: 'v1', code: 'a', secret: 's' })
      for (const title of ['v2', 'v3', 'v4']) {
        const response = await app.inject({ method: 'PATCH', url: `/notes/${id}`, headers: alice, payload: { title } })
        assert.equal(response.statusCode, 200)
      }
      let response = await app.inject({ url: `/notes/${id}/history?limit=3`, headers: alice })
      assert.equal(response.statusCode, 200, response.body)
      const page = response.json()
      assert.deepEqual(page.map((entry: any) => [entry.operation, entry.after.title]),
        [['update', 'v4'], ['update', 'v3'], ['update', 'v2']])
      assert.equal(page[0].actor, 'alice')
      assert.deepEqual(page[0].before, { id, title: 'v3', code: 'a', owner: 'alice' })
      assert.equal('internal' in page[0].after, false)
      const link = String(response.headers.link)
      const next = /<([^>]+)>; rel="next"/.exec(link)?.[1]
      assert.ok(next?.includes('cursor='), link)
      response = await app.inject({ url: next ?? '', headers: alice })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json().map((entry: any) => [entry.operation, entry.before, entry.after.title]),
        [['create', null, 'v1']])
      assert.equal(response.headers.link, undefined)
      // The admin reads `secret`; bob reads nothing of alice's row.
      response = await app.inject({ url: `/notes/${id}/history?limit=1`, headers: admin })
      assert.equal(response.json()[0].after.secret, 's')
      response = await app.inject({ url: `/notes/${id}/history`, headers: bob })
      assert.equal(response.statusCode, 404)
      assert.equal(problemOf(response).code, 'FST_VIEWSET_NOT_FOUND')
      // Deleted, the row's history is read under the rule evaluated on its last stored version.
      response = await app.inject({ method: 'DELETE', url: `/notes/${id}`, headers: alice })
      assert.equal(response.statusCode, 204)
      response = await app.inject({ url: `/notes/${id}/history?limit=1`, headers: alice })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json(), [{
        operation: 'delete',
        at: response.json()[0].at,
        actor: 'alice',
        before: { id, title: 'v4', code: 'a', owner: 'alice' },
        after: null,
      }])
      response = await app.inject({ url: `/notes/${id}/history`, headers: bob })
      assert.equal(response.statusCode, 404)
      response = await app.inject({ url: '/notes/999999/history', headers: alice })
      assert.equal(response.statusCode, 404)
      response = await app.inject({ url: `/notes/${id}/history?cursor=abc`, headers: alice })
      assert.equal(response.statusCode, 400)
      response = await app.inject({ url: `/notes/${id}/history?limit=1000`, headers: alice })
      assert.equal(response.statusCode, 400)
    })

    test('GET /:id?as_of= answers the row as it was, under the rules', async (t) => {
      const { db, app, alice, admin, bob } = await historyApp(t, dialect)
      const id = await post(app, admin, { title: 'v1', code: 'a', secret: 's' })
      let response = await app.inject({ method: 'PATCH', url: `/notes/${id}`, headers: alice, payload: { title: 'v2' } })
      assert.equal(response.statusCode, 200)
      const [first, second] = await entries(db)
      const before = new Date(Date.parse(first?.at ?? '') - 1).toISOString()
      response = await app.inject({ url: `/notes/${id}?as_of=${before}`, headers: alice })
      assert.equal(response.statusCode, 404, response.body)
      response = await app.inject({ url: `/notes/${id}?as_of=${first?.at ?? ''}`, headers: alice })
      assert.equal(response.statusCode, 200, response.body)
      // Unless both writes fell in one millisecond, the first version.
      const expected = first?.at === second?.at ? 'v2' : 'v1'
      assert.deepEqual(response.json(), { id, title: expected, code: 'a', owner: 'alice' })
      response = await app.inject({
        url: `/notes/${id}?as_of=${encodeURIComponent('2999-01-01T00:00:00+02:00')}`,
        headers: admin
      })
      assert.deepEqual(response.json(), { id, title: 'v2', code: 'a', owner: 'alice', secret: 's' })
      response = await app.inject({ url: `/notes/${id}?as_of=2999-01-01T00:00:00Z`, headers: bob })
      assert.equal(response.statusCode, 404)
      response = await app.inject({ url: `/notes/${id}?as_of=yesterday`, headers: alice })
      assert.equal(response.statusCode, 400)
      assert.equal(problemOf(response).errors?.[0]?.field, 'as_of')
      response = await app.inject({ method: 'DELETE', url: `/notes/${id}`, headers: alice })
      response = await app.inject({ url: `/notes/${id}?as_of=2999-01-01T00:00:00Z`, headers: alice })
      assert.equal(response.statusCode, 404)
      response = await app.inject({ url: `/notes/${id}?as_of=${second?.at ?? ''}`, headers: alice })
      assert.equal(response.statusCode, 200)
      assert.equal(response.json().title, 'v2')
    })

    test('the actor is a function of the context; another table name', async (t) => {
      const actor = ({ token, method }: any) => `${String(token?.sub)}:${String(method)}`
      const { db, app, alice } = await historyApp(t, dialect, { history: { createTable: true, table: 'audit_log', actor } })
      const id = await post(app, alice, { title: 'one', code: 'a' })
      await app.inject({ method: 'PATCH', url: `/notes/${id}`, headers: alice, payload: { title: 'two' } })
      assert.deepEqual((await entries(db, 'audit_log')).map((entry) => entry.actor), ['alice:POST', 'alice:PATCH'])
    })

    test('startup: HISTORY needs the option, a missing table is named, as_of needs a history', async (t) => {
      const database = await testDatabase(t, dialect)
      await createNotes(database.db, dialect.name)
      await assert.rejects(historyApp(t, dialect, { history: undefined }, database), /HISTORY' needs the history option/)
      await assert.rejects(historyApp(t, dialect, { history: true }, database), /history table "viewset_history" does not/)
      const { app, alice } = await historyApp(t, dialect, { history: undefined, methods: defaultMethods }, database)
      const response = await app.inject({ url: '/notes/1?as_of=2020-01-01T00:00:00Z', headers: alice })
      assert.equal(response.statusCode, 400)
      assert.match(response.body, /as_of/)
    })

    if (dialect.name === 'postgres') {
      test('startup: a position sequence with a cache is named (its blocks would commit out of order)', async (t) => {
        const database = await testDatabase(t, dialect)
        await createNotes(database.db, dialect.name)
        await historyApp(t, dialect, {}, database)
        await sql`alter sequence ${sql.raw(`"${history}_position_seq"`)} cache 20`.execute(database.db)
        await assert.rejects(historyApp(t, dialect, {}, database), /a sequence with a cache of 20/)
        await sql`alter sequence ${sql.raw(`"${history}_position_seq"`)} cache 1`.execute(database.db)
        await historyApp(t, dialect, {}, database)
      })
    }

    if (dialect.name !== 'sqlite') {
      test('positions are monotonic in commit order under concurrent writers', async (t) => {
        const { db, app, alice } = await historyApp(t, dialect)
        const ids: number[] = []
        for (let index = 0; index < 8; index++) ids.push(await post(app, alice, { title: `n${index}`, code: `c${index}` }))
        const state = { writing: true }
        const seen = new Set<string>()
        let highest = 0
        let violations = 0
        const source = { historyTable: history, table: 'notes' }
        const reader = (async () => {
          while (state.writing) {
            const read = await readHistoryAfter(db, source, '0', 100_000)
            for (const entry of read) {
              if (seen.has(entry.position)) continue
              if (Number(entry.position) < highest) violations++
              seen.add(entry.position)
            }
            highest = Math.max(highest, ...read.map((entry) => Number(entry.position)))
          }
        })()
        const writers = ids.map(async (id) => {
          for (let round = 0; round < 15; round++) {
            const response = await app.inject({
              method: 'PATCH',
              url: `/notes/${id}`,
              headers: alice,
              payload: { title: `r${round}` }
            })
            assert.equal(response.statusCode, 200, response.body)
          }
        })
        await Promise.all(writers)
        state.writing = false
        await reader
        assert.equal(violations, 0)
        const counted = await db.selectFrom(history).select(sql<number>`count(*)`.as('count')).executeTakeFirst()
        assert.equal(Number(counted?.count), 8 + 8 * 15)
      })
    }
  })
}

test('options are checked at once; OpenAPI documents HISTORY and as_of, and Redocly and Spectral find no error',
  async (t) => {
    const unused = createDatabase('sqlite::memory:')
    t.after(() => unused.destroy())
    for (const [history, named] of [['yes', /history:/], [{ tabel: 'x' }, /history\.tabel/],
      [{ table: 'a b' }, /history\.table/], [{ createTable: 1 }, /history\.createTable/],
      [{ actor: 'alice' }, /history\.actor/]] as const) {
      assert.throws(() => createViewset({ db: unused, table: 'notes', schema: Note, history } as
        unknown as ViewsetOptions<any, 'notes', typeof Note>), named)
    }
    const sqlite = dialects.find((dialect) => dialect.name === 'sqlite')
    assert.ok(sqlite)
    const { app } = await historyApp(t, sqlite, {}, undefined, true)
    const document = app.swagger() as unknown as OpenApiDocument
    const paths = (document as any).paths
    const history = paths['/notes/{id}/history'].get
    assert.equal(history.operationId, 'historyNotes')
    assert.deepEqual(history.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name).sort(),
      ['cursor', 'limit'])
    const entry = history.responses[200].content['application/json'].schema.items
    assert.deepEqual(Object.keys(entry.properties), ['operation', 'at', 'actor', 'before', 'after'])
    assert.ok(history.responses[404])
    assert.ok(paths['/notes/{id}'].get.parameters.some((p: any) => p.in === 'query' && p.name === 'as_of'))
    const errors = [...await redoclyProblems(document), ...await spectralProblems(document)]
      .filter((problem) => problem.severity === 'error')
    assert.deepEqual(errors, [])
  })
