import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { createViewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import type { OpenApiDocument } from '../helpers/contract.js'
import { redoclyProblems, spectralProblems } from '../helpers/openapi-lint.js'
import { statementChannel } from '../../lib/observability/channels.js'
import type { StatementContext } from '../../lib/observability/channels.js'

// `GET {prefix}?changed_since=<position>` (issue 40, item 5) on two tenants' notes: the rows changed since a position
// of the history (issue 39's table, written by the viewset's own history writer), each once as it is now, the keys
// deleted since, and the next position, page by page; the caller's row rule on current rows and on deleted rows'
// stored versions, field rules on every row, 400 for a malformed position, 410 once the history was pruned past it,
// and applying the pages to a copy gives LIST.

const secret = 'test-secret-that-is-long-enough-for-hs256'
const history = 'viewset_history'

const Note = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  status: Type.String(),
  owner: Type.Optional(Type.String({ readOnly: true })),
  secret: Type.Optional(Type.String()),
})

interface NoteRow { id: number; title: string; status: string; owner?: string; secret?: string }
interface Changes { changes: NoteRow[]; deleted: Array<{ id: number }>; next: string }

async function notesApp (t: TestContext, dialect: TestDialect, options: Record<string, unknown> = {}) {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [type, key] = autoIncrement(dialect.name)
  await db.schema
    .createTable('notes')
    .addColumn('id', type as 'integer', key)
    .addColumn('title', 'varchar(255)', (column) => column.notNull())
    .addColumn('status', 'varchar(32)', (column) => column.notNull())
    .addColumn('owner', 'varchar(64)', (column) => column.notNull())
    .addColumn('secret', 'varchar(64)', (column) => column.notNull().defaultTo('s'))
    .execute()
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  await app.register(viewsetDocs)
  await app.register(createViewset({
    db,
    table: 'notes',
    schema: Note,
    maxLimit: 50,
    filterFields: { status: ['eq'] },
    searchFields: ['title'],
    orderingFields: ['id', 'title'],
    history: { createTable: true },
    changes: true,
    scope: (eb: any, { token }: any) => eb('owner', '=', String(token?.sub ?? '')),
    beforeWrite: (values: any, { method, token }: any) => (method === 'POST' ? { ...values, owner: token?.sub } : values),
    ...options,
  } as unknown as ViewsetOptions<any, 'notes', typeof Note>), { prefix: '/notes' })
  await app.ready()
  const as = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { app, db, queries: database.queries, alice: as('alice'), bob: as('bob') }
}

type Caller = { authorization: string }

async function create (app: FastifyInstance, who: Caller, title: string, status = 'open'): Promise<number> {
  const response = await app.inject({ method: 'POST', url: '/notes', headers: who, payload: { title, status } })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().id
}

async function patch (app: FastifyInstance, who: Caller, id: number, payload: object): Promise<void> {
  const response = await app.inject({ method: 'PATCH', url: `/notes/${id}`, headers: who, payload })
  assert.equal(response.statusCode, 200, response.body)
}

async function remove (app: FastifyInstance, who: Caller, id: number): Promise<void> {
  assert.equal((await app.inject({ method: 'DELETE', url: `/notes/${id}`, headers: who })).statusCode, 204)
}

async function changesSince (app: FastifyInstance, who: Caller, query: string): Promise<Changes & { link?: string }> {
  const response = await app.inject({ method: 'GET', url: `/notes?${query}`, headers: who })
  assert.equal(response.statusCode, 200, response.body)
  const link = response.headers.link
  return { ...response.json(), ...(typeof link === 'string' ? { link } : {}) }
}

/** Pages from `since` until caught up, applying each page to `copy`; answers the last `next` and the pages. */
async function sync (app: FastifyInstance, who: Caller, copy: Map<number, NoteRow>, since: string, extra = '',
  limit = 2, between: (page: number) => Promise<void> = async () => {}) {
  const pages: Changes[] = []
  let position = since
  for (let guard = 0; guard < 100; guard++) {
    const page = await changesSince(app, who, `changed_since=${position}&limit=${limit}${extra}`)
    pages.push(page)
    await between(pages.length)
    for (const row of page.changes) copy.set(row.id, row)
    for (const key of page.deleted) copy.delete(key.id)
    // Caught up: no Link to a next page (the position then stays as sent once nothing follows).
    if (page.link === undefined) return { next: page.next, pages }
    assert.match(page.link, new RegExp(`changed_since=${page.next}>; rel="next"`))
    position = page.next
  }
  throw new Error('never caught up')
}

async function listed (app: FastifyInstance, who: Caller, extra = ''): Promise<NoteRow[]> {
  const response = await app.inject({ method: 'GET', url: `/notes?limit=50${extra}`, headers: who })
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

function sorted (copy: Map<number, NoteRow>): NoteRow[] {
  return [...copy.values()].sort((a, b) => a.id - b.id)
}

for (const dialect of dialects) {
  describe(`changed_since on ${dialect.name}`, () => {
    test('creates, updates and deletes since 0 and since a position, across pages: applied to a copy, they give LIST; ' +
      'another tenant\'s rows and keys never appear', async (t) => {
      const { app, db, queries, alice, bob } = await notesApp(t, dialect)
      const a1 = await create(app, alice, 'a1')
      const b1 = await create(app, bob, 'b1')
      const a2 = await create(app, alice, 'a2')
      const a3 = await create(app, alice, 'a3')
      const b2 = await create(app, bob, 'b2')
      await patch(app, alice, a2, { title: 'a2 edited' })
      await patch(app, bob, b1, { title: 'b1 edited' })
      await remove(app, alice, a3)
      await remove(app, bob, b2)

      // One page: each changed row once as it is now; a row created and deleted since only in `deleted`. Three
      // statements: the entries, the current rows, the versions of the keys no longer read (and from a position > 0,
      // the oldest retained one first).
      queries.length = 0
      const classed: Array<{ sql: string, heavy: boolean | undefined }> = []
      const tracer = {
        asyncEnd: (context: StatementContext) => { classed.push(context) },
        end: (context: StatementContext) => { if (context.pending !== true) classed.push(context) },
      }
      statementChannel.subscribe(tracer as any)
      const all = await changesSince(app, alice, 'changed_since=0&limit=50')
      statementChannel.unsubscribe(tracer as any)
      assert.equal(queries.length, 3, queries.join('\n'))
      // Classed (execution/cost-class.ts): the history's index range and the rows by key cheap, the versions heavy.
      assert.deepEqual(classed.map((context) => context.heavy), [false, false, true], classed.map((c) => c.sql).join('\n'))
      assert.deepEqual(all.changes.map((row) => [row.id, row.title]), [[a1, 'a1'], [a2, 'a2 edited']])
      assert.deepEqual(all.deleted, [{ id: a3 }])
      assert.equal(all.link, undefined)
      const entries = await db.selectFrom(history).select('position').orderBy('position').execute()
      assert.equal(all.next, String(entries.at(-1)?.position))
      // Bob's own view: his rows and his deleted key, never alice's.
      const bobs = await changesSince(app, bob, 'changed_since=0&limit=50')
      assert.deepEqual(bobs.changes.map((row) => [row.id, row.title]), [[b1, 'b1 edited']])
      assert.deepEqual(bobs.deleted, [{ id: b2 }])

      // Across pages of 2 entries: every page holds at most 2 keys, and the copy ends equal to LIST.
      const copy = new Map<number, NoteRow>()
      const first = await sync(app, alice, copy, '0')
      assert.ok(first.pages.length >= 4, `${first.pages.length} pages`)
      for (const page of first.pages) assert.ok(page.changes.length + page.deleted.length <= 2)
      const seen = first.pages.flatMap((page) =>
        [...page.changes.map((row) => row.id), ...page.deleted.map((key) => key.id)])
      assert.ok(!seen.includes(b1) && !seen.includes(b2), 'no key of bob in alice\'s pages')
      assert.deepEqual(sorted(copy), await listed(app, alice))

      // Since the position the sync ended at: only what changed after it.
      const a4 = await create(app, alice, 'a4')
      await patch(app, alice, a1, { status: 'done' })
      await patch(app, alice, a1, { title: 'a1 again' })
      await remove(app, alice, a2)
      await create(app, bob, 'b3')
      queries.length = 0
      const since = await changesSince(app, alice, `changed_since=${first.next}&limit=50`)
      assert.equal(queries.length, 4, queries.join('\n'))
      assert.deepEqual(since.changes.map((row) => [row.id, row.title, row.status]), [[a1, 'a1 again', 'done'], [a4, 'a4', 'open']])
      assert.deepEqual(since.deleted, [{ id: a2 }])
      const again = await sync(app, alice, copy, first.next)
      assert.deepEqual(sorted(copy), await listed(app, alice))
      // Caught up: the same position, nothing more.
      const idle = await changesSince(app, alice, `changed_since=${again.next}`)
      assert.deepEqual(idle, { changes: [], deleted: [], next: again.next })
    })

    test('filters: a row that stops matching is in deleted; field rules hide a field from every row sent', async (t) => {
      const { app, alice, bob } = await notesApp(t, dialect, { fieldAccess: () => ({ hidden: ['secret'] }) })
      const open = await create(app, alice, 'open one')
      const closing = await create(app, alice, 'closing')
      const never = await create(app, alice, 'never open', 'done')
      await create(app, bob, 'bob open')
      const start = await changesSince(app, alice, 'changed_since=0&status=open')
      assert.deepEqual(start.changes.map((row) => row.id), [open, closing])
      // A row whose versions never matched is not one the client could hold: not reported deleted.
      assert.deepEqual(start.deleted, [])
      for (const row of start.changes) assert.deepEqual(Object.keys(row).sort(), ['id', 'owner', 'status', 'title'])
      await patch(app, alice, closing, { status: 'done' })
      await patch(app, alice, never, { title: 'still done' })
      const after = await changesSince(app, alice, `changed_since=${start.next}&status=open`)
      assert.deepEqual(after.changes, [])
      assert.deepEqual(after.deleted, [{ id: closing }])
      // The property, with the filter and `fields`.
      const copy = new Map<number, NoteRow>()
      await sync(app, alice, copy, '0', '&status=open')
      assert.deepEqual(sorted(copy), await listed(app, alice, '&status=open'))
      const fields = await changesSince(app, alice, 'changed_since=0&fields=id,title')
      assert.deepEqual(fields.changes.map((row) => Object.keys(row).sort()), [['id', 'title'], ['id', 'title'], ['id', 'title']])
      const hidden = await app.inject({ method: 'GET', url: '/notes?changed_since=0&fields=secret', headers: alice })
      assert.equal(hidden.statusCode, 400)
    })

    test('writes between the pages of a sync: the copy still ends equal to LIST', async (t) => {
      const { app, alice, bob } = await notesApp(t, dialect)
      const ids: number[] = []
      for (const title of ['a', 'b', 'c', 'd', 'e']) ids.push(await create(app, alice, title))
      await create(app, bob, 'bob')
      const [a = 0, b = 0, c = 0] = ids
      const copy = new Map<number, NoteRow>()
      // After each of the first pages, a write to a row already sent, one not sent yet, a delete and a create.
      await sync(app, alice, copy, '0', '', 2, async (page) => {
        if (page === 1) {
          await patch(app, alice, a, { title: 'a after page 1' })
          await remove(app, alice, c)
        }
        if (page === 2) {
          await patch(app, alice, b, { status: 'done' })
          await create(app, alice, 'f')
        }
      })
      assert.deepEqual(sorted(copy), await listed(app, alice))
    })

    test('a malformed position, or a parameter a page of changes does not take, is a 400 and reads nothing',
      async (t) => {
        const { app, alice } = await notesApp(t, dialect)
        for (const position of ['', 'abc', '-1', '01', '1.5', '1e3', '99999999999999999999', '9223372036854775808', ' 1']) {
          const response = await app.inject({
            method: 'GET', url: `/notes?changed_since=${encodeURIComponent(position)}`, headers: alice,
          })
          assert.equal(response.statusCode, 400, position)
          assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
        }
        for (const query of ['order_by=id', 'offset=3', 'count=true']) {
          const response = await app.inject({ method: 'GET', url: `/notes?changed_since=0&${query}`, headers: alice })
          assert.equal(response.statusCode, 400, query)
          assert.match(problemOf(response).detail, /changed_since/)
        }
      })

    test('a position older than the retained history is a 410; 0 and retained positions still answer', async (t) => {
      const { app, db, alice } = await notesApp(t, dialect)
      const a1 = await create(app, alice, 'a1')
      const early = await changesSince(app, alice, 'changed_since=0')
      await patch(app, alice, a1, { title: 'a1 b' })
      const middle = await changesSince(app, alice, `changed_since=${early.next}`)
      await patch(app, alice, a1, { title: 'a1 c' })
      // The documented prune: the entries below the middle position are gone (a position is valid while its entry is).
      await db.deleteFrom(history).where('table_name', '=', 'notes').where('position', '<', Number(middle.next)).execute()
      const expired = await app.inject({ method: 'GET', url: `/notes?changed_since=${early.next}`, headers: alice })
      assert.equal(expired.statusCode, 410)
      assert.equal(problemOf(expired).code, 'FST_VIEWSET_POSITION_EXPIRED')
      const retained = await changesSince(app, alice, `changed_since=${middle.next}`)
      assert.deepEqual(retained.changes.map((row) => row.title), ['a1 c'])
      assert.deepEqual((await changesSince(app, alice, 'changed_since=0')).changes.map((row) => row.title), ['a1 c'])
      await db.deleteFrom(history).execute()
      const gone = await app.inject({ method: 'GET', url: `/notes?changed_since=${retained.next}`, headers: alice })
      assert.equal(gone.statusCode, 410)
    })

    test('OpenAPI documents changed_since, its answer as a oneOf and its 410; the linters report no error',
      async (t) => {
        const { app } = await notesApp(t, dialect)
        const document = app.swagger() as unknown as OpenApiDocument
        const list = (document as any).paths['/notes'].get
        const parameter = list.parameters.find((p: any) => p.name === 'changed_since')
        assert.equal(parameter.schema.type, 'string')
        const answer = list.responses['200'].content['application/json'].schema
        assert.equal(answer.oneOf.length, 2)
        assert.deepEqual(answer.oneOf[1].required, ['changes', 'deleted', 'next'])
        assert.ok(list.responses['410'])
        const errors = [...await redoclyProblems(document), ...await spectralProblems(document)]
          .filter((problem) => problem.severity === 'error')
        assert.deepEqual(errors, [])
      })
  })
}

describe('changes option', () => {
  test('changes needs history, and is true, false or an object: both fail at construction, naming the options', async (t) => {
    const { db } = await testDatabase(t, { name: 'sqlite', url: 'sqlite::memory:' })
    const base = { db, table: 'notes', schema: Note }
    assert.throws(() => createViewset({ ...base, changes: true } as any), /changes: needs the history option/)
    assert.throws(() => createViewset({ ...base, history: true, changes: 'yes' } as any), /changes: expected true, false or an object/)
    assert.throws(() => createViewset({ ...base, history: { table: 'a b' }, changes: true } as any), /history\.table/)
  })
})
