import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { Generated } from 'kysely'
import { createViewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

/** People are upserted by email; the owner is the server's (beforeWrite), the version counts updates. */
const Person = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  email: Type.Optional(Type.String({ maxLength: 255 })),
  name: Type.String({ minLength: 1, maxLength: 100 }),
  nickname: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
  owner: Type.Optional(Type.Union([Type.String({ readOnly: true }), Type.Null()])),
  version: Type.Optional(Type.Integer({ readOnly: true })),
})

interface PeopleDB {
  people: {
    id: Generated<number>
    email: string
    name: string
    nickname: string | null
    owner: string | null
    version: Generated<number>
  }
}
type PeopleOptions = Partial<ViewsetOptions<PeopleDB, 'people', typeof Person>>
interface Stored {
  id: number
  email: string
  name: string
  nickname: string | null
  owner: string | null
  version: number
}

const merge = { prefer: 'resolution=merge-duplicates' }

/** The owner is the `x-user` header, set by beforeWrite; the methods that change rows are scoped to it. */
const owned = {
  beforeWrite: (values, { request }) => ({ ...values, owner: String(request.headers['x-user'] ?? 'nobody') }),
  scope: (eb, { request, method }) =>
    method === 'LIST' || method === 'GET' ? undefined : eb('owner', '=', String(request.headers['x-user'] ?? 'nobody')),
} satisfies PeopleOptions

async function createPeople ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema
    .createTable('people')
    .addColumn('id', idType as 'integer', id)
    .addColumn('email', 'varchar(255)', (column) => column.notNull().unique())
    .addColumn('name', 'varchar(100)', (column) => column.notNull())
    .addColumn('nickname', 'varchar(100)')
    .addColumn('owner', 'varchar(64)')
    .addColumn('version', 'integer', (column) => column.notNull().defaultTo(1))
    .execute()
}

/** `upsert: false`: no conflictFields. */
async function peopleApp (t: TestContext, dialect: TestDialect, options: PeopleOptions = {}, upsert = true) {
  const database = await testDatabase(t, dialect)
  await createPeople(database)
  const app = testApp(t)
  await app.register(viewsetDocs)
  await app.register(
    createViewset({
      db: database.db,
      table: 'people',
      schema: Person,
      methods: ['LIST', 'GET', 'POST', 'BULK', 'PATCH'],
      ...(upsert ? { conflictFields: ['email'] } : {}),
      versionField: 'version',
      // The rules read the x-user header, not a token.
      withoutTokens: true,
      ...options,
    }),
    { prefix: '/people' }
  )
  await app.ready()
  database.queries.length = 0
  return { app, ...database }
}

/** The app's startup error, or `undefined` when it starts. */
async function startupError (
  t: TestContext,
  database: TestDatabase,
  table: string,
  options: Record<string, unknown>
): Promise<Error | undefined> {
  const app = testApp(t)
  const schema = Type.Object({
    id: Type.Optional(Type.Integer({ readOnly: true })),
    a: Type.String(),
    b: Type.String(),
    // Nullable as its column is (the startup check of schema against columns would refuse a non-null field).
    c: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  })
  try {
    await app.register(
      createViewset({ db: database.db, table, schema, ...options } as ViewsetOptions<any, string, typeof schema>),
      { prefix: `/${table}` }
    ) // tables made by the test
    await app.ready()
  } catch (error) {
    return error as Error // createViewset and registration throw errors
  }
  return undefined
}

for (const dialect of dialects) {
  describe(`upsert (${dialect.name})`, () => {
    test('twice with the same email: 201 then 200, one row, Preference-Applied on both, the version incremented', async (t) => {
      const { app, db } = await peopleApp(t, dialect)
      const first = await app.inject({
        method: 'POST',
        url: '/people',
        headers: merge,
        payload: { email: 'ada@example.com', name: 'Ada' },
      })
      assert.equal(first.statusCode, 201, first.body)
      assert.equal(first.headers['preference-applied'], 'resolution=merge-duplicates')
      const created = first.json<Stored>()
      assert.equal(first.headers.location, `/people/${created.id}`)
      assert.equal(first.headers.etag, '"1"')
      assert.deepEqual(created, {
        id: created.id,
        email: 'ada@example.com',
        name: 'Ada',
        nickname: null,
        owner: null,
        version: 1,
      })

      const second = await app.inject({
        method: 'POST',
        url: '/people',
        headers: merge,
        payload: { email: 'ada@example.com', name: 'Ada Lovelace' },
      })
      assert.equal(second.statusCode, 200, second.body)
      assert.equal(second.headers['preference-applied'], 'resolution=merge-duplicates')
      assert.equal(second.headers.location, undefined, 'an update creates no URL')
      assert.equal(second.headers.etag, '"2"')
      assert.deepEqual(second.json(), { ...created, name: 'Ada Lovelace', version: 2 })
      assert.equal((await db.selectFrom('people').selectAll().execute()).length, 1)

      // The preference among others, in any case, after a parameter: still applied (return=minimal too: no body).
      const listed = await app.inject({
        method: 'POST',
        url: '/people',
        headers: { prefer: 'return=minimal; x="a,b", Resolution=Merge-Duplicates' },
        payload: { email: 'ada@example.com', name: 'Ada' },
      })
      assert.equal(listed.statusCode, 204, listed.body)
      assert.equal(listed.body, '')
      assert.equal(listed.headers['preference-applied'], 'resolution=merge-duplicates, return=minimal')
    })

    test('without the header a duplicate is a 409, and nothing says a preference was applied', async (t) => {
      const { app } = await peopleApp(t, dialect)
      const created = await app.inject({
        method: 'POST',
        url: '/people',
        payload: { email: 'ada@example.com', name: 'Ada' },
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.headers['preference-applied'], undefined)
      for (const headers of [{}, { prefer: 'return=minimal' }, { prefer: 'resolution=other' }]) {
        const duplicate = await app.inject({
          method: 'POST',
          url: '/people',
          headers,
          payload: { email: 'ada@example.com', name: 'Ada' },
        })
        assert.equal(duplicate.statusCode, 409, JSON.stringify(headers))
        assert.equal(problemOf(duplicate).code, 'FST_VIEWSET_CONFLICT')
        assert.equal(duplicate.headers['preference-applied'], undefined)
      }
    })

    test('without conflictFields the header is ignored (RFC 7240): 201, then 409, never Preference-Applied', async (t) => {
      const { app } = await peopleApp(t, dialect, {}, false)
      const created = await app.inject({
        method: 'POST',
        url: '/people',
        headers: merge,
        payload: { email: 'ada@example.com', name: 'Ada' },
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.headers['preference-applied'], undefined)
      const duplicate = await app.inject({
        method: 'POST',
        url: '/people',
        headers: merge,
        payload: { email: 'ada@example.com', name: 'Ada' },
      })
      assert.equal(duplicate.statusCode, 409)
      assert.equal(duplicate.headers['preference-applied'], undefined)
      const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
      const post = document.paths['/people'].post
      assert.equal(
        post.parameters?.some((parameter: { name: string }) => parameter.name.toLowerCase() === 'prefer') ?? false,
        false
      )
      assert.equal(post.responses['200'], undefined)
    })

    test('only the fields sent are updated: a field left out keeps its value, a null sent is applied', async (t) => {
      const { app, db } = await peopleApp(t, dialect)
      await app.inject({
        method: 'POST',
        url: '/people',
        headers: merge,
        payload: { email: 'ada@example.com', name: 'Ada', nickname: 'countess' },
      })
      const kept = await app.inject({
        method: 'POST',
        url: '/people',
        headers: merge,
        payload: { email: 'ada@example.com', name: 'Ada L.' },
      })
      assert.equal(kept.statusCode, 200, kept.body)
      assert.equal(kept.json<Stored>().nickname, 'countess')
      const cleared = await app.inject({
        method: 'POST',
        url: '/people',
        headers: merge,
        payload: { email: 'ada@example.com', name: 'Ada L.', nickname: null },
      })
      assert.equal(cleared.statusCode, 200)
      assert.equal(cleared.json<Stored>().nickname, null)
      const [row] = await db.selectFrom('people').select(['name', 'nickname']).execute()
      assert.deepEqual(row, { name: 'Ada L.', nickname: null })
    })

    test('a body without the conflict field is a 400 naming it (bulk: by JSON pointer)', async (t) => {
      const { app, db } = await peopleApp(t, dialect)
      const single = await app.inject({ method: 'POST', url: '/people', headers: merge, payload: { name: 'Ada' } })
      assert.equal(single.statusCode, 400)
      const problem = problemOf(single)
      assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
      assert.deepEqual(
        problem.errors?.map((error) => error.field),
        ['email']
      )
      const bulk = await app.inject({
        method: 'POST',
        url: '/people/bulk',
        headers: merge,
        payload: [{ email: 'a@x', name: 'A' }, { email: 'b@x', name: 'B' }, { email: 'c@x', name: 'C' }, { name: 'D' }],
      })
      assert.equal(bulk.statusCode, 400)
      assert.deepEqual(
        problemOf(bulk).errors?.map((error) => error.field),
        ['/3/email']
      )
      assert.equal((await db.selectFrom('people').selectAll().execute()).length, 0)
    })

    test('ownership: beforeWrite sees POST or PATCH by branch, the update is scoped like PATCH, a row outside the scope is a 409 and unchanged', async (t) => {
      const seen: string[] = []
      const { app, db } = await peopleApp(t, dialect, {
        beforeWrite: (values, context) => {
          seen.push(`beforeWrite ${context.method}`)
          return owned.beforeWrite(values, context)
        },
        scope: (eb, context) => {
          seen.push(`scope ${context.method}`)
          return owned.scope(eb, context)
        },
      })
      const alice = { ...merge, 'x-user': 'alice' }
      const created = await app.inject({
        method: 'POST',
        url: '/people',
        headers: alice,
        payload: { email: 'ada@example.com', name: 'Ada' },
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.json<Stored>().owner, 'alice')
      // The rules of both branches, then beforeWrite told the branch the row takes: it creates.
      assert.deepEqual(seen, ['scope PATCH', 'scope GET', 'beforeWrite POST'])
      seen.length = 0
      const again = await app.inject({
        method: 'POST',
        url: '/people',
        headers: alice,
        payload: { email: 'ada@example.com', name: 'Ada L.' },
      })
      assert.equal(again.statusCode, 200)
      assert.deepEqual(seen, ['scope PATCH', 'scope GET', 'beforeWrite PATCH'], 'an update is a PATCH to beforeWrite')

      const bob = await app.inject({
        method: 'POST',
        url: '/people',
        headers: { ...merge, 'x-user': 'bob' },
        payload: { email: 'ada@example.com', name: 'Bob was here' },
      })
      assert.equal(bob.statusCode, 409, bob.body)
      assert.equal(problemOf(bob).code, 'FST_VIEWSET_CONFLICT')
      assert.equal(bob.headers['preference-applied'], undefined)
      const [row] = await db.selectFrom('people').select(['name', 'owner', 'version']).execute()
      assert.deepEqual(row, { name: 'Ada L.', owner: 'alice', version: 2 })
    })

    test('the update branch writes what beforeWrite returns for PATCH, as a PATCH does (an owner stamped on POST stays)', async (t) => {
      const { app, db } = await peopleApp(t, dialect, {
        beforeWrite: (values, context) => (context.method === 'PATCH' ? values : owned.beforeWrite(values, context)),
      })
      await app.inject({
        method: 'POST',
        url: '/people',
        headers: { ...merge, 'x-user': 'alice' },
        payload: { email: 'ada@example.com', name: 'Ada' },
      })
      const bob = await app.inject({
        method: 'POST',
        url: '/people',
        headers: { ...merge, 'x-user': 'bob' },
        payload: { email: 'ada@example.com', name: 'Renamed' },
      })
      assert.equal(bob.statusCode, 200, bob.body)
      assert.equal(bob.json<Stored>().owner, 'alice')
      const [row] = await db.selectFrom('people').select(['name', 'owner']).execute()
      assert.deepEqual(row, { name: 'Renamed', owner: 'alice' })
    })

    test('bulk: 201 when one element creates a row, 200 when all update; rows in element order; beforeWrite sees BULK or PATCH', async (t) => {
      const methods: string[] = []
      const { app, db } = await peopleApp(t, dialect, {
        beforeWrite: (values, { method }) => {
          methods.push(method)
          return values
        },
      })
      await app.inject({ method: 'POST', url: '/people', payload: { email: 'b@x', name: 'B', nickname: 'bee' } })
      const mixed = await app.inject({
        method: 'POST',
        url: '/people/bulk',
        headers: merge,
        payload: [
          { email: 'a@x', name: 'A' },
          { email: 'b@x', name: 'B2' },
          { email: 'c@x', name: 'C', nickname: 'sea' },
        ],
      })
      assert.equal(mixed.statusCode, 201, mixed.body)
      assert.equal(mixed.headers['preference-applied'], 'resolution=merge-duplicates')
      const rows = mixed.json<Stored[]>()
      assert.deepEqual(
        rows.map((row) => [row.email, row.name, row.nickname, row.version]),
        [
          ['a@x', 'A', null, 1],
          ['b@x', 'B2', 'bee', 2],
          ['c@x', 'C', 'sea', 1],
        ]
      )
      assert.deepEqual(methods.slice(1), ['BULK', 'PATCH', 'BULK'], 'each element told its branch, once')

      const updates = await app.inject({
        method: 'POST',
        url: '/people/bulk',
        headers: merge,
        payload: [
          { email: 'c@x', name: 'C2' },
          { email: 'a@x', name: 'A2' },
        ],
      })
      assert.equal(updates.statusCode, 200, updates.body)
      assert.deepEqual(methods.slice(4), ['PATCH', 'PATCH'])
      assert.equal(updates.headers['preference-applied'], 'resolution=merge-duplicates')
      assert.deepEqual(
        updates.json<Stored[]>().map((row) => [row.email, row.name, row.nickname]),
        [
          ['c@x', 'C2', 'sea'],
          ['a@x', 'A2', null],
        ]
      )
      assert.equal((await db.selectFrom('people').selectAll().execute()).length, 3)

      const plain = await app.inject({ method: 'POST', url: '/people/bulk', payload: [{ email: 'd@x', name: 'D' }] })
      assert.equal(plain.statusCode, 201)
      assert.equal(plain.headers['preference-applied'], undefined)
    })

    test('bulk: a repeated email, or a row outside the scope at element 1, is a 409 naming it, and nothing is written', async (t) => {
      const { app, db } = await peopleApp(t, dialect, owned)
      await app.inject({
        method: 'POST',
        url: '/people',
        headers: { 'x-user': 'bob' },
        payload: { email: 'bob@x', name: 'Bob' },
      })
      const alice = { ...merge, 'x-user': 'alice' }
      const repeated = await app.inject({
        method: 'POST',
        url: '/people/bulk',
        headers: alice,
        payload: [
          { email: 'a@x', name: 'A' },
          { email: 'b@x', name: 'B' },
          { email: 'a@x', name: 'A again' },
        ],
      })
      assert.equal(repeated.statusCode, 409, repeated.body)
      assert.deepEqual(
        problemOf(repeated).errors?.map((error) => error.field),
        ['/2/email']
      )
      const outside = await app.inject({
        method: 'POST',
        url: '/people/bulk',
        headers: alice,
        payload: [
          { email: 'a@x', name: 'A' },
          { email: 'bob@x', name: 'Mine now' },
        ],
      })
      assert.equal(outside.statusCode, 409, outside.body)
      const problem = problemOf(outside)
      assert.equal(problem.code, 'FST_VIEWSET_CONFLICT')
      assert.deepEqual(
        problem.errors?.map((error) => error.field),
        ['/1/email']
      )
      assert.deepEqual(
        await db.selectFrom('people').select(['email', 'name', 'owner']).execute(),
        [{ email: 'bob@x', name: 'Bob', owner: 'bob' }],
        'all or nothing'
      )
    })

    test('statements: a locked read in the write transaction decides each branch, then the write and its check', async (t) => {
      const { app, queries } = await peopleApp(t, dialect, owned)
      const alice = { ...merge, 'x-user': 'alice' }
      // Statements, not the transaction's begin and commit (logged by the drivers here).
      const statements = () => queries.filter((text) => !/^(?:begin|commit|rollback|start transaction)\b/i.test(text))
      const counts: Record<string, number> = {}
      for (const [status, payload] of [
        [201, { email: 'ada@example.com', name: 'Ada' }],
        [200, { email: 'ada@example.com', name: 'Ada L.' }],
      ] as const) {
        queries.length = 0
        const response = await app.inject({ method: 'POST', url: '/people', headers: alice, payload })
        assert.equal(response.statusCode, status, response.body)
        // The branch is decided in the write's transaction (issue 38 item 8: beforeWrite gets it), by a locked read.
        const [decide] = statements()
        assert.match(decide ?? '', /^select .* where [`"]?email[`"]? in/i, queries.join('\n'))
        if (dialect.name !== 'sqlite') assert.match(decide ?? '', /for update$/i, queries.join('\n'))
        const writes = statements().filter((text) => /^(insert|update)/i.test(text))
        assert.equal(writes.length, 1, queries.join('\n'))
        assert.match(writes[0] ?? '', status === 201 ? /^insert/i : /^update/i)
        assert.doesNotMatch(writes[0] ?? '', /on conflict|on duplicate key/i, 'no merge statement: the branch is decided')
        counts[status] = statements().length
      }
      // 201: the locked read and the INSERT (MySQL: and its read-back). 200: the locked read, PATCH's locked read of
      // the row (the version column), its UPDATE (MySQL: its scope's locked read, its read-back), and the write check
      // of the PATCH rule: what a PATCH runs, plus the read that decides.
      const expected = { postgres: { 201: 2, 200: 4 }, sqlite: { 201: 2, 200: 4 }, mysql: { 201: 3, 200: 6 } }
      assert.deepEqual(counts, expected[dialect.name], queries.join('\n'))
      queries.length = 0
      const bulk = await app.inject({
        method: 'POST',
        url: '/people/bulk',
        headers: alice,
        payload: Array.from({ length: 50 }, (_, index) => ({ email: `p${index}@x`, name: `P${index}` })),
      })
      assert.equal(bulk.statusCode, 201, bulk.body)
      assert.equal(statements().filter((text) => /^insert/i.test(text)).length, 1, queries.join('\n'))
      assert.equal(statements().length, { postgres: 2, sqlite: 2, mysql: 3 }[dialect.name], queries.join('\n'))
    })

    test('OpenAPI: Prefer on POST and /bulk, their 200, and Preference-Applied', async (t) => {
      const { app } = await peopleApp(t, dialect)
      const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
      for (const path of ['/people', '/people/bulk']) {
        const operation = document.paths[path].post
        const prefer = operation.parameters.find(
          (parameter: { in: string; name: string }) =>
            parameter.in === 'header' && parameter.name.toLowerCase() === 'prefer'
        )
        assert.ok(prefer, path)
        assert.ok(operation.responses['200'], path)
        assert.ok(operation.responses['200'].headers['Preference-Applied'], path)
        assert.ok(operation.responses['201'].headers['Preference-Applied'], path)
      }
      assert.ok(document.paths['/people'].post.responses['200'].headers.ETag)
    })

    test('startup: conflictFields must be one unique key, none read-only; on MySQL/MariaDB the only one besides AUTO_INCREMENT', async (t) => {
      const database = await testDatabase(t, dialect)
      const { db } = database
      const [idType, id] = autoIncrement(dialect.name)
      await db.schema
        .createTable('pairs')
        .addColumn('id', idType as 'integer', id)
        .addColumn('a', 'varchar(20)', (column) => column.notNull())
        .addColumn('b', 'varchar(20)', (column) => column.notNull())
        .addColumn('c', 'varchar(20)')
        .addUniqueConstraint('pairs_a_b', ['a', 'b'])
        .execute()
      await db.schema
        .createTable('twice')
        .addColumn('id', idType as 'integer', id)
        .addColumn('a', 'varchar(20)', (column) => column.notNull().unique())
        .addColumn('b', 'varchar(20)', (column) => column.notNull().unique())
        .addColumn('c', 'varchar(20)')
        .execute()
      const failures: Array<[string, Record<string, unknown>, RegExp]> = [
        [
          'pairs',
          { conflictFields: ['a'] },
          /conflictFields: \(a\) is not the set of columns of a unique constraint or plain unique index of "pairs" \(its unique keys: \(a, b\)\)/,
        ],
        ['pairs', { conflictFields: ['c'] }, /conflictFields: \(c\) is not the set of columns/],
        ['pairs', { conflictFields: ['id'] }, /conflictFields: id is read-only/],
        ['pairs', { conflictFields: ['a', 'nope'] }, /conflictFields: nope is not a field of the schema/],
        ['pairs', { conflictFields: [] }, /conflictFields: expected a non-empty array/],
        ['pairs', { conflictFields: ['a', 'a'] }, /conflictFields: a field is listed twice/],
      ]
      for (const [table, options, message] of failures) {
        const error = await startupError(t, database, table, options)
        assert.equal(
          (error as { code?: string } | undefined)?.code,
          'FST_VIEWSET_INVALID_OPTION',
          `${JSON.stringify(options)}: ${String(error)}`
        )
        assert.match(String(error?.message), message)
      }
      assert.equal(
        await startupError(t, database, 'pairs', { conflictFields: ['b', 'a'] }),
        undefined,
        'a composite key, in any order'
      )
      const twice = await startupError(t, database, 'twice', { conflictFields: ['a'] })
      if (dialect.name === 'mysql') {
        assert.match(
          String(twice?.message),
          /conflictFields: on MySQL and MariaDB, ON DUPLICATE KEY UPDATE fires on any unique key, so \(a\) must be the only unique key of "twice" besides an AUTO_INCREMENT key; it also has \(b\)/
        )
      } else {
        assert.equal(twice, undefined)
      }
    })
  })
}
