import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { ExpressionBuilder, Generated } from 'kysely'
import {
  createViewset,
  securitySchemeName,
  Viewset,
  viewsetDocs,
  ViewsetErrors,
  viewsetMethods,
} from 'fastify-viewsets'
import type { AuthorizedMethod, RowContext, ScopedMethod, ViewsetOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

const secret = 'test-secret-that-is-long-enough-for-hs256'
/** The methods registered by default: all but those that write many rows per request, AGGREGATE and HISTORY. */
const manyRowMethods: readonly string[] = ['BULK', 'PATCH_MANY', 'BULK_PATCH', 'DELETE_MANY', 'AGGREGATE', 'HISTORY']
const singleRowMethods = viewsetMethods.filter((method) => !manyRowMethods.includes(method))

const Comment = Type.Object({ id: Type.Integer(), note_id: Type.Integer(), text: Type.String() })
/** A note has an owner, set from the token by `beforeWrite`: read-only, so a body never writes it. */
const Note = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String({ minLength: 1, maxLength: 100 }),
  owner: Type.Optional(Type.Union([Type.String({ readOnly: true }), Type.Null()])),
  comments: Type.Optional(Type.Array(Comment)),
})

interface NotesDB {
  notes: { id: Generated<number>; title: string; owner: string | null }
  comments: { id: Generated<number>; note_id: number; text: string }
}

type NotesOptions = Partial<ViewsetOptions<NotesDB, 'notes', typeof Note>>

interface NotesApp extends TestDatabase {
  app: FastifyInstance
  /** `Authorization` headers of real tokens signed by the app's @fastify/jwt. */
  alice: { authorization: string }
  bob: { authorization: string }
  /** The ids of alice's notes (three) and bob's (two). */
  ids: { alice: number[]; bob: number[] }
}

/** Every method protected, so that each request has a token; the owner comes from it. */
const owned: NotesOptions = {
  protectedMethods: singleRowMethods,
  beforeWrite: (values, { token }) => ({ ...values, owner: token?.sub ?? null }),
  scope: (eb, { token }) => eb('owner', '=', token?.sub ?? ''),
}

const relatedConfig = {
  prefetchRelated: { comments: { table: 'comments', foreignKey: 'note_id', orderBy: 'id' } },
} as const

/** Notes of alice (3) and bob (2), a comment on each, @fastify/jwt, and the notes viewset at /notes (plus, if asked, an
 * unscoped one at /all). */
async function notesApp (
  t: TestContext,
  dialect: TestDialect,
  options: NotesOptions,
  {
    unscoped = false,
    viewset,
    docs = false,
  }: {
    unscoped?: boolean
    viewset?: (db: TestDatabase['db']) => Viewset<NotesDB, 'notes', typeof Note>
    docs?: boolean
  } = {}
): Promise<NotesApp> {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema
    .createTable('notes')
    .addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(100)', (column) => column.notNull().unique())
    .addColumn('owner', 'varchar(64)')
    .execute()
  await db.schema
    .createTable('comments')
    .addColumn('id', idType as 'integer', id)
    .addColumn('note_id', 'integer', (column) => column.notNull())
    .addColumn('text', 'varchar(100)', (column) => column.notNull())
    .execute()
  const ids = { alice: [] as number[], bob: [] as number[] }
  for (const [owner, title] of [
    ['alice', 'a1'],
    ['bob', 'b1'],
    ['alice', 'a2'],
    ['bob', 'b2'],
    ['alice', 'a3'],
  ] as const) {
    await db.insertInto('notes').values({ title, owner }).execute()
    const { id: noteId } = await db
      .selectFrom('notes')
      .select('id')
      .where('title', '=', title)
      .executeTakeFirstOrThrow()
    ids[owner].push(Number(noteId))
    await db
      .insertInto('comments')
      .values({ note_id: noteId, text: `on ${title}` })
      .execute()
  }
  const app = testApp(t)
  if (docs) await app.register(viewsetDocs)
  await app.register(fastifyJwt, { secret })
  const plugin =
    viewset === undefined
      ? createViewset({ db, table: 'notes', schema: Note, relatedConfig, ...options } as ViewsetOptions<
          NotesDB,
          'notes',
          typeof Note
        >)
      : viewset(db).register()
  await app.register(plugin, { prefix: '/notes' })
  if (unscoped) {
    await app.register(
      createViewset({
        db,
        table: 'notes',
        schema: Note,
        relatedConfig,
        name: 'AllNotes',
        protectedMethods: singleRowMethods,
      }),
      { prefix: '/all' }
    )
  }
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { ...database, app, alice: bearer('alice'), bob: bearer('bob'), ids }
}

async function notes (db: TestDatabase['db']) {
  return await db.selectFrom('notes').select(['id', 'title', 'owner']).orderBy('id').execute()
}

for (const dialect of dialects) {
  describe(`ownership (${dialect.name})`, () => {
    test('a row outside the scope is 404 for GET, PUT, PATCH and DELETE, and nothing changes', async (t) => {
      const { app, db, bob, ids } = await notesApp(t, dialect, owned)
      const before = await notes(db)
      const id = ids.alice[0]
      for (const [method, payload] of [
        ['GET', undefined],
        ['PUT', { title: 'taken' }],
        ['PATCH', { title: 'taken' }],
        ['PATCH', {}],
        ['DELETE', undefined],
      ] as const) {
        const response = await app.inject({
          method,
          url: `/notes/${id}`,
          headers: bob,
          ...(payload === undefined ? {} : { payload }),
        })
        assert.equal(response.statusCode, 404, `bob's ${method} of alice's note`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_NOT_FOUND')
      }
      assert.deepEqual(await notes(db), before, 'nothing changed')
    })

    test("the owner's GET, PUT, PATCH and DELETE succeed, and answer the row as stored", async (t) => {
      const { app, db, alice, ids } = await notesApp(t, dialect, owned)
      const [id] = ids.alice
      const get = await app.inject({ method: 'GET', url: `/notes/${id}`, headers: alice })
      assert.equal(get.statusCode, 200)
      assert.deepEqual(get.json(), {
        id,
        title: 'a1',
        owner: 'alice',
        comments: [{ id: 1, note_id: id, text: 'on a1' }],
      })
      const put = await app.inject({
        method: 'PUT',
        url: `/notes/${id}`,
        headers: alice,
        payload: { title: 'a1 again' },
      })
      assert.equal(put.statusCode, 200)
      assert.deepEqual(put.json(), {
        id,
        title: 'a1 again',
        owner: 'alice',
        comments: [{ id: 1, note_id: id, text: 'on a1' }],
      })
      const patch = await app.inject({
        method: 'PATCH',
        url: `/notes/${id}`,
        headers: alice,
        payload: { title: 'a1 patched' },
      })
      assert.equal(patch.statusCode, 200)
      assert.equal(patch.json().title, 'a1 patched')
      const remove = await app.inject({ method: 'DELETE', url: `/notes/${id}`, headers: alice })
      assert.equal(remove.statusCode, 204)
      assert.deepEqual(
        (await notes(db)).map((note) => note.title),
        ['b1', 'a2', 'b2', 'a3']
      )
    })

    test('LIST counts (X-Total-Count) and pages (Link) only the rows in scope, with search, filters and order', async (t) => {
      const { app, alice, bob } = await notesApp(t, dialect, {
        ...owned,
        searchFields: ['title'],
        orderingFields: ['title'],
        filterFields: { title: ['eq', 'ne'] },
      })
      const first = await app.inject({ method: 'GET', url: '/notes?count=true&limit=2', headers: alice })
      assert.equal(first.statusCode, 200)
      assert.equal(first.headers['x-total-count'], '3')
      assert.deepEqual(
        first.json().map((note: { title: string }) => note.title),
        ['a1', 'a2']
      )
      assert.match(String(first.headers.link), /offset=2.*rel="next"/)
      const last = await app.inject({ method: 'GET', url: '/notes?count=true&limit=2&offset=2', headers: alice })
      assert.deepEqual(
        last.json().map((note: { title: string }) => note.title),
        ['a3']
      )
      assert.doesNotMatch(String(last.headers.link), /rel="next"/)
      // The precompiled page statement (limit and offset only) is scoped too.
      const page = await app.inject({ method: 'GET', url: '/notes', headers: bob })
      assert.deepEqual(
        page.json().map((note: { title: string }) => note.title),
        ['b1', 'b2']
      )
      const query = await app.inject({
        method: 'GET',
        url: '/notes?search=2&order_by=-title&title__ne=zz&count=true&fields=title',
        headers: bob,
      })
      assert.equal(query.statusCode, 200)
      assert.equal(query.headers['x-total-count'], '1')
      assert.deepEqual(query.json(), [{ title: 'b2' }])
    })

    test('a scope combines with filters through relations (their subqueries keep their own columns)', async (t) => {
      const { app, alice } = await notesApp(t, dialect, {
        ...owned,
        filterFields: { 'comments.text': ['contains'] },
      } as NotesOptions)
      const response = await app.inject({
        method: 'GET',
        url: '/notes?comments.text__contains=on%20a&count=true',
        headers: alice,
      })
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.headers['x-total-count'], '3')
      const none = await app.inject({
        method: 'GET',
        url: '/notes?comments.text__contains=on%20b&count=true',
        headers: alice,
      })
      assert.equal(none.headers['x-total-count'], '0', "bob's notes match the filter but are outside alice's scope")
    })

    test('a body cannot overwrite what beforeWrite sets; POST is not scoped', async (t) => {
      const { app, db, bob, ids } = await notesApp(t, dialect, owned)
      const created = await app.inject({
        method: 'POST',
        url: '/notes',
        headers: bob,
        payload: { title: 'b3', owner: 'alice' },
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.json().owner, 'bob')
      const patched = await app.inject({
        method: 'PATCH',
        url: `/notes/${ids.bob[0]}`,
        headers: bob,
        payload: { owner: 'alice' },
      })
      assert.equal(patched.statusCode, 200)
      assert.equal(patched.json().owner, 'bob')
      const stored = await db.selectFrom('notes').select('owner').where('title', 'in', ['b1', 'b3']).execute()
      assert.deepEqual(
        stored.map((row) => row.owner),
        ['bob', 'bob']
      )
    })

    test('beforeWrite may answer any thenable (not only a native promise): POST and PATCH write what it resolves to', async (t) => {
      const { app, db, bob, ids } = await notesApp(t, dialect, {
        ...owned,
        // The rows it writes must stay in the rule (a write is checked against it): the owners it stamps are admitted.
        scope: (eb, { token }) => eb('owner', 'in', ['', ':POST', ':PATCH'].map((tail) => `${token?.sub ?? ''}${tail}`)),
        // A PromiseLike of another library, resolved on a later turn.
        beforeWrite: (values, { token, method }) =>
          ({
            then: (resolve: (written: typeof values) => void) => {
              setImmediate(() => {
                resolve({ ...values, owner: `${token?.sub ?? ''}:${method}` })
              })
            },
          }) as unknown as Promise<typeof values>, // the option is typed with Promise; await takes any thenable
      })
      const created = await app.inject({ method: 'POST', url: '/notes', headers: bob, payload: { title: 'b3' } })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json().owner, 'bob:POST')
      const patched = await app.inject({
        method: 'PATCH',
        url: `/notes/${ids.bob[0]}`,
        headers: bob,
        payload: { title: 'b1x' },
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.deepEqual([patched.json().title, patched.json().owner], ['b1x', 'bob:PATCH'])
      const stored = await db
        .selectFrom('notes')
        .select(['title', 'owner'])
        .where('title', 'in', ['b1x', 'b3'])
        .orderBy('title')
        .execute()
      assert.deepEqual(stored, [
        { title: 'b1x', owner: 'bob:PATCH' },
        { title: 'b3', owner: 'bob:POST' },
      ])
    })

    test('beforeWrite receives only the writable fields sent, and a ViewsetErrors error it throws is answered with nothing written', async (t) => {
      const seen: Array<{ values: object; method: string; sub: unknown }> = []
      const { app, db, alice, ids } = await notesApp(t, dialect, {
        ...owned,
        beforeWrite: async (values, { token, method }) => {
          seen.push({ values: { ...values }, method, sub: token?.sub })
          if (values.title === 'forbidden') throw new ViewsetErrors.Forbidden('That title is reserved')
          return { ...values, owner: token?.sub ?? null }
        },
      })
      const before = await notes(db)
      const refused = await app.inject({
        method: 'POST',
        url: '/notes',
        headers: alice,
        payload: { title: 'forbidden' },
      })
      assert.equal(refused.statusCode, 403)
      assert.equal(problemOf(refused).code, 'FST_VIEWSET_FORBIDDEN')
      const put = await app.inject({
        method: 'PUT',
        url: `/notes/${ids.alice[0]}`,
        headers: alice,
        payload: { title: 'forbidden', owner: 'bob', id: 99 },
      })
      assert.equal(put.statusCode, 403)
      assert.deepEqual(await notes(db), before, 'nothing was written')
      await app.inject({ method: 'PATCH', url: `/notes/${ids.alice[0]}`, headers: alice, payload: {} })
      assert.deepEqual(seen, [
        { values: { title: 'forbidden' }, method: 'POST', sub: 'alice' },
        { values: { title: 'forbidden' }, method: 'PUT', sub: 'alice' },
        { values: {}, method: 'PATCH', sub: 'alice' },
      ])
    })

    test("a scope whose subquery reads its own table is checked in the write's transaction (MySQL and MariaDB refuse it in the UPDATE)", async (t) => {
      // Notes whose owner owns a note titled "a1": a subquery on notes itself.
      const { app, db, alice, bob, ids } = await notesApp(t, dialect, {
        protectedMethods: singleRowMethods,
        scope: (eb, { token }) =>
          eb(
            'owner',
            'in',
            eb
              .selectFrom('notes as mine')
              .select('mine.owner')
              .where('mine.title', '=', 'a1')
              .where('mine.owner', '=', token?.sub ?? '')
          ),
      })
      const before = await notes(db)
      for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
        const response = await app.inject({
          method,
          url: `/notes/${ids.alice[1]}`,
          headers: bob,
          ...(method === 'DELETE' ? {} : { payload: { title: 'taken' } }),
        })
        assert.equal(response.statusCode, 404, method)
      }
      assert.deepEqual(await notes(db), before)
      const put = await app.inject({
        method: 'PUT',
        url: `/notes/${ids.alice[1]}`,
        headers: alice,
        payload: { title: 'a2 again' },
      })
      assert.equal(put.statusCode, 200)
      assert.equal(put.json().title, 'a2 again')
      const remove = await app.inject({ method: 'DELETE', url: `/notes/${ids.alice[1]}`, headers: alice })
      assert.equal(remove.statusCode, 204)
      const list = await app.inject({ method: 'GET', url: '/notes?count=true', headers: alice })
      assert.equal(list.headers['x-total-count'], '2')
    })

    test("a scoped LIST runs as many statements as an unscoped one, relations one statement each, and the scope's columns are qualified", async (t) => {
      const { app, alice, queries } = await notesApp(t, dialect, owned, { unscoped: true })
      for (const url of ['?count=true&limit=2', '', '?fields=title,comments', '/1']) {
        queries.length = 0
        const all = await app.inject({ method: 'GET', url: `/all${url}`, headers: alice })
        assert.equal(all.statusCode, 200)
        const unscoped = queries.length
        queries.length = 0
        const mine = await app.inject({ method: 'GET', url: `/notes${url}`, headers: alice })
        assert.equal(mine.statusCode, 200)
        assert.equal(queries.length, unscoped, `${url}: ${queries.join(' ; ')}`)
        // The rows (one or two statements), then one statement for the comments of every row.
        assert.equal(queries.filter((query) => /comments/.test(query)).length, 1, url)
        assert.ok(
          queries.every((query) => /comments/.test(query) || /["`]notes["`]\.["`]owner["`] = /.test(query)),
          queries.join(' ; ')
        )
      }
    })

    test('open methods hand a sent token to scope; ?mine=true, a listQuery parameter read by scope, keeps the query language', async (t) => {
      class Notes extends Viewset<NotesDB, 'notes', typeof Note> {
        static override listQuery = Type.Object({
          mine: Type.Optional(Type.Boolean({ description: "Only the caller's notes" })),
        })

        override scope (eb: ExpressionBuilder<NotesDB, 'notes'>, { request, token, method }: RowContext<ScopedMethod>) {
          if (method === 'LIST') { return (request.query as { mine?: boolean }).mine === true ? eb('owner', '=', token?.sub ?? '') : undefined }
          return method === 'GET' ? undefined : eb('owner', '=', token?.sub ?? '')
        }
      }
      const { app, alice, bob } = await notesApp(
        t,
        dialect,
        {},
        {
          viewset: (db) =>
            new Notes({
              db,
              table: 'notes',
              schema: Note,
              relatedConfig,
              protectedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'],
              searchFields: ['title'],
            }),
        }
      )
      const titles = (response: { json: () => Array<{ title: string }> }) => response.json().map((note) => note.title)
      assert.deepEqual(titles(await app.inject({ method: 'GET', url: '/notes' })), ['a1', 'b1', 'a2', 'b2', 'a3'])
      assert.deepEqual(titles(await app.inject({ method: 'GET', url: '/notes', headers: alice })), [
        'a1',
        'b1',
        'a2',
        'b2',
        'a3',
      ])
      const mine = await app.inject({
        method: 'GET',
        url: '/notes?mine=true&count=true&limit=1&search=a',
        headers: alice,
      })
      assert.equal(mine.statusCode, 200)
      assert.deepEqual(titles(mine), ['a1'])
      assert.equal(mine.headers['x-total-count'], '3')
      assert.match(String(mine.headers.link), /mine=true.*rel="next"/)
      assert.deepEqual(titles(await app.inject({ method: 'GET', url: '/notes?mine=true', headers: bob })), ['b1', 'b2'])
      // Without a token, "mine" is nobody's.
      assert.deepEqual(titles(await app.inject({ method: 'GET', url: '/notes?mine=true' })), [])
      const expired = app.jwt.sign({
        sub: 'alice',
        iat: Math.floor(Date.now() / 1000) - 7200,
        exp: Math.floor(Date.now() / 1000) - 3600,
      })
      const stale = await app.inject({
        method: 'GET',
        url: '/notes?mine=true',
        headers: { authorization: `Bearer ${expired}` },
      })
      assert.equal(stale.statusCode, 401, 'an expired token does not turn "mine" into an anonymous list')
      assert.equal(problemOf(stale).code, 'FST_VIEWSET_UNAUTHORIZED')
    })

    test('a custom route with config: { protected: true }, or onRequest: this.protect, is authenticated like a protected method', async (t) => {
      const calls: AuthorizedMethod[] = []
      class Notes extends Viewset<NotesDB, 'notes', typeof Note> {
        override customRoutes (fastify: FastifyInstance) {
          fastify.get('/export', { config: { protected: true } }, async (request: FastifyRequest) => ({
            sub: request.viewsetToken?.sub ?? null,
            count: (await this.query().execute()).length,
          }))
          fastify.get('/mine', { onRequest: this.protect }, async (request: FastifyRequest) => ({
            sub: request.viewsetToken?.sub ?? null,
          }))
          fastify.get('/public', async (request: FastifyRequest) => ({ sub: request.viewsetToken?.sub ?? null }))
        }
      }
      // No generated method is protected: the protected custom routes are what authorize serves.
      const { app, alice, bob } = await notesApp(
        t,
        dialect,
        {},
        {
          docs: true,
          viewset: (db) =>
            new Notes({
              db,
              table: 'notes',
              schema: Note,
              relatedConfig,
              authorize: (token, method) => {
                calls.push(method)
                return token.sub === 'alice'
              },
            }),
        }
      )
      for (const url of ['/notes/export', '/notes/mine']) {
        const anonymous = await app.inject({ method: 'GET', url })
        assert.equal(anonymous.statusCode, 401, url)
        assert.equal(problemOf(anonymous).code, 'FST_VIEWSET_UNAUTHORIZED')
        assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="api"')
        const forbidden = await app.inject({ method: 'GET', url, headers: bob })
        assert.equal(forbidden.statusCode, 403, url)
        assert.equal(problemOf(forbidden).code, 'FST_VIEWSET_FORBIDDEN')
        const allowed = await app.inject({ method: 'GET', url, headers: alice })
        assert.equal(allowed.statusCode, 200, url)
        assert.equal(allowed.json().sub, 'alice')
      }
      assert.equal((await app.inject({ method: 'GET', url: '/notes/export', headers: alice })).json().count, 5)
      assert.deepEqual(calls, ['CUSTOM', 'CUSTOM', 'CUSTOM', 'CUSTOM', 'CUSTOM'])
      // An unprotected custom route stays as it was written.
      const open = await app.inject({ method: 'GET', url: '/notes/public', headers: bob })
      assert.deepEqual(open.json(), { sub: null })
      const document = app.swagger() as unknown as {
        paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>
      }
      for (const path of ['/notes/export', '/notes/mine']) {
        const operation = document.paths[path]?.get
        assert.deepEqual(operation?.security, [{ [securitySchemeName]: [] }], path)
        assert.ok(
          operation?.responses['401'] !== undefined && operation.responses['403'] !== undefined,
          `${path} documents 401 and 403`
        )
      }
      assert.equal(document.paths['/notes/public']?.get?.security, undefined)
    })

    test('startup: a protected custom route counts as protected, and needs a verifier', async (t) => {
      const database = await testDatabase(t, dialect)
      await database.db.schema
        .createTable('notes')
        .addColumn('id', 'integer', (column) => column.primaryKey())
        .addColumn('title', 'varchar(100)', (column) => column.notNull())
        .addColumn('owner', 'varchar(64)')
        .execute()
      class Notes extends Viewset<NotesDB, 'notes', typeof Note> {
        override customRoutes (fastify: FastifyInstance) {
          fastify.get('/export', { config: { protected: true } }, async () => [])
        }
      }
      const Plain = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), title: Type.String() })
      const unverifiable = testApp(t)
      unverifiable.register(
        new Notes({ db: database.db, table: 'notes', schema: Plain as unknown as typeof Note }).register(['LIST', 'GET']),
        { prefix: '/notes' }
      )
      await assert.rejects(
        async () => {
          await unverifiable.ready()
        },
        {
          code: 'FST_VIEWSET_INVALID_OPTION',
          message: /customRoutes: a route has config: \{ protected: true \}: register @fastify\/jwt/,
        }
      )
      const authorized = testApp(t)
      await authorized.register(fastifyJwt, { secret })
      await authorized.register(
        new Notes({
          db: database.db,
          table: 'notes',
          schema: Plain as unknown as typeof Note,
          authorize: () => true,
          // No POST or BULK: the id is not AUTO_INCREMENT, so MySQL could not read a new row back.
        }).register(['LIST', 'GET', 'PUT', 'PATCH', 'DELETE']),
        { prefix: '/notes' }
      )
      await authorized.ready()
    })
  })
}
