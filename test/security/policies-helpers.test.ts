import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance, FastifyReply } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { ExpressionBuilder, Generated, Updateable } from 'kysely'
import { Viewset, ViewsetErrors } from 'fastify-viewsets'
import type {
  CreateRequest, ElementRequest, ListRequest, RowContext, ScopedMethod, UpdateRequest, ViewsetToken, WriteMethod,
} from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase, timestamp } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'

// The helpers of overrides and custom routes apply the rule of the request they serve (issue 35, item 6): an issue
// tracker whose `/issues` viewset overrides `list` exactly as the README's "Overriding handlers" section shows, and
// has the README's protected `/export` and `/stats` custom routes, scoped per organization. Before, org A's user
// listed the 37 issues of org B through the override while GET, PUT, PATCH and DELETE answered 404.

const secret = 'test-secret-that-is-long-enough-for-hs256'

const Issue = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' }),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
  created_at: Type.Optional(Type.String({ format: 'date-time', readOnly: true })),
  org: Type.String({ maxLength: 16 }),
})

interface IssuesDB {
  issues: {
    id: Generated<number>
    name: string
    description: string | null
    created_at: Generated<string>
    org: string
  }
}

/** The organization a token belongs to: its `org` claim. */
function orgOf (token: ViewsetToken | null): string {
  const org: unknown = token?.org
  return typeof org === 'string' ? org : ''
}

/** Each organization reaches only its own issues, whatever the method. */
function orgRule (eb: ExpressionBuilder<IssuesDB, 'issues'>, { token }: RowContext<ScopedMethod>) {
  return eb('org', '=', orgOf(token))
}

/** The README's "Overriding handlers" viewset, on issues, with the README's custom routes. */
class IssueViewset extends Viewset<IssuesDB, 'issues', typeof Issue> {
  static override listQuery = Type.Object({
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
    search: Type.Optional(Type.String()),
    order_by: Type.Optional(Type.String({ default: '-created_at' })),
  })

  override async list (request: ListRequest<{ limit: number, offset: number, search?: string, order_by: string }>) {
    const { limit, offset, search, order_by: orderBy } = request.query
    let query = this.query().limit(limit).offset(offset)
    if (search) query = query.where((eb) => this.contains(eb.ref('name'), search))
    for (const key of orderBy.split(',')) {
      const field = key.replace(/^-/, '')
      if (field !== 'name' && field !== 'created_at') {
        throw new ViewsetErrors.UnsupportedOrdering(JSON.stringify(key), 'name, created_at')
      }
      query = query.orderBy(field, key.startsWith('-') ? 'desc' : 'asc')
    }
    return await query.orderBy('id').execute()
  }

  override async createElement (request: CreateRequest<typeof Issue>) {
    const values = this.writable(request.body)
    try {
      return await this.transaction(async (trx) => await this.insert(values, trx))
    } catch (error) {
      if (this.classify(error)?.kind === 'unique') throw new ViewsetErrors.Conflict('an issue with that name exists')
      throw error
    }
  }

  override async getElement (request: ElementRequest<typeof Issue>) {
    return (await this.findById(request.params.id)) ?? this.notFound(request.params.id)
  }

  override async updateElement (request: UpdateRequest<typeof Issue>) {
    const values = this.writable(request.body)
    return (await this.update(request.params.id, values, this.db, this.precondition(request))) ??
      this.notFound(request.params.id)
  }

  override async deleteElement (request: ElementRequest<typeof Issue>, _reply: FastifyReply) {
    if (!(await this.deleteById(request.params.id, this.db, this.precondition(request)))) {
      this.notFound(request.params.id)
    }
  }

  override customRoutes (fastify: FastifyInstance) {
    fastify.get('/export', { onRequest: this.protect }, async () => await this.query().execute())
    fastify.get('/stats', { onRequest: this.protect }, async () => ({
      count: Number((await this.query().clearSelect().select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n),
    }))
    // After a timer and a few awaits the helper still knows its request.
    fastify.get('/later', { onRequest: this.protect }, async () => {
      await sleep(1)
      await new Promise<void>((resolve) => setImmediate(resolve))
      return await this.query().execute()
    })
  }
}

interface IssuesApp extends TestDatabase {
  app: FastifyInstance
  issues: Viewset<IssuesDB, 'issues', typeof Issue>
  alice: { authorization: string }
  bob: { authorization: string }
  /** The ids of org A's and org B's issues. */
  ids: { a: number[]; b: number[] }
}

/** Org A has 3 issues, org B 37; alice is in A, bob in B. */
async function issuesApp (
  t: TestContext,
  dialect: TestDialect,
  extra: Partial<{ beforeWrite: boolean }> = {}
): Promise<IssuesApp> {
  const database = await testDatabase(t, dialect)
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  const [timeType, time] = timestamp(dialect.name)
  await db.schema
    .createTable('issues')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(255)', (column) => column.notNull())
    .addColumn('description', 'varchar(1024)')
    .addColumn('created_at', timeType as 'text', time)
    .addColumn('org', 'varchar(16)', (column) => column.notNull())
    .execute()
  const rows = [
    ...Array.from({ length: 3 }, (_, i) => ({ name: `a-issue-${i + 1}`, org: 'A', description: 'org A' })),
    ...Array.from({ length: 37 }, (_, i) => ({ name: `b-issue-${i + 1}`, org: 'B', description: 'org B secret' })),
  ]
  await db.insertInto('issues').values(rows).execute()
  const stored = await db.selectFrom('issues').select(['id', 'org']).orderBy('id').execute()
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  const options = { db, table: 'issues', schema: Issue, scope: orgRule } as const
  // The generated handlers with a beforeWrite that reads through the helpers: they apply the rule of the request it
  // serves.
  const issues: Viewset<IssuesDB, 'issues', typeof Issue> = extra.beforeWrite === true
    ? new Viewset<IssuesDB, 'issues', typeof Issue>({
      ...options,
      beforeWrite: async (values: Updateable<IssuesDB['issues']>, { method }: RowContext<WriteMethod>) => {
        await sleep(1)
        const visible = (await issues.query().execute()).length
        return method === 'POST' ? { ...values, description: `sees ${visible}` } : values
      },
    })
    : new IssueViewset(options)
  await app.register(issues.register(), { prefix: '/issues' })
  await app.ready()
  const bearer = (sub: string, org: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub, org })}` })
  const ids = (org: string) => stored.filter((row) => row.org === org).map((row) => Number(row.id))
  return { ...database, app, issues, alice: bearer('alice', 'A'), bob: bearer('bob', 'B'), ids: { a: ids('A'), b: ids('B') } }
}

async function snapshot (db: TestDatabase['db']) {
  const rows = await db.selectFrom('issues').select(['id', 'name', 'description', 'org']).orderBy('id').execute()
  return rows.map((row) => ({ ...row, id: Number(row.id) }))
}

for (const dialect of dialects) {
  describe(`the helpers apply the rule of the request they serve (${dialect.name})`, () => {
    test("the README's list override returns the caller's organization only: none of the other 37 rows", async (t) => {
      const { app, alice, bob } = await issuesApp(t, dialect)
      const asAlice = await app.inject({ method: 'GET', url: '/issues?limit=100', headers: alice })
      assert.equal(asAlice.statusCode, 200)
      assert.deepEqual(asAlice.json().map((row: { org: string }) => row.org), ['A', 'A', 'A'])
      const asBob = await app.inject({ method: 'GET', url: '/issues?limit=100&order_by=name', headers: bob })
      assert.equal(asBob.statusCode, 200)
      assert.equal(asBob.json().length, 37)
      assert.ok(asBob.json().every((row: { org: string }) => row.org === 'B'))
      // search and paging run inside the rule too
      const searched = await app.inject({ method: 'GET', url: '/issues?search=issue&limit=100', headers: alice })
      assert.deepEqual(searched.json().map((row: { name: string }) => row.name).sort(), [
        'a-issue-1', 'a-issue-2', 'a-issue-3',
      ])
      const paged = await app.inject({ method: 'GET', url: '/issues?offset=3&limit=100', headers: alice })
      assert.deepEqual(paged.json(), [])
      const anonymous = await app.inject({ method: 'GET', url: '/issues?limit=100' })
      assert.equal(anonymous.statusCode, 200)
      assert.deepEqual(anonymous.json(), [], 'no token: no organization')
    })

    test("the README's protected custom routes (/export, /stats) see the caller's organization only", async (t) => {
      const { app, alice, bob } = await issuesApp(t, dialect)
      const exported = await app.inject({ method: 'GET', url: '/issues/export', headers: alice })
      assert.equal(exported.statusCode, 200)
      assert.deepEqual(exported.json().map((row: { name: string }) => row.name).sort(), [
        'a-issue-1', 'a-issue-2', 'a-issue-3',
      ])
      assert.ok(!exported.body.includes('org B secret'))
      const bobs = await app.inject({ method: 'GET', url: '/issues/export', headers: bob })
      assert.equal(bobs.json().length, 37)
      const stats = await app.inject({ method: 'GET', url: '/issues/stats', headers: alice })
      assert.deepEqual(stats.json(), { count: 3 })
      const later = await app.inject({ method: 'GET', url: '/issues/later', headers: bob })
      assert.equal(later.statusCode, 200)
      assert.equal(later.json().length, 37, 'after a timer and an await, still the request that bob sent')
      assert.ok(later.json().every((row: { org: string }) => row.org === 'B'))
    })

    test('findById, update and deleteById in overrides answer 404 on the other organization, and change nothing', async (t) => {
      const { app, db, alice, ids } = await issuesApp(t, dialect)
      const before = await snapshot(db)
      const bobs = ids.b[0]
      const got = await app.inject({ method: 'GET', url: `/issues/${bobs}`, headers: alice })
      assert.equal(got.statusCode, 404)
      assert.equal(problemOf(got).code, 'FST_VIEWSET_NOT_FOUND')
      for (const method of ['PATCH', 'PUT'] as const) {
        const payload = method === 'PATCH' ? { name: 'taken' } : { name: 'taken', org: 'B' }
        const changed = await app.inject({ method, url: `/issues/${bobs}`, headers: alice, payload })
        assert.equal(changed.statusCode, 404, method)
      }
      const deleted = await app.inject({ method: 'DELETE', url: `/issues/${bobs}`, headers: alice })
      assert.equal(deleted.statusCode, 404)
      assert.deepEqual(await snapshot(db), before, 'nothing changed')
      // The caller's own rows are reached as before.
      const own = ids.a[0]
      assert.equal((await app.inject({ method: 'GET', url: `/issues/${own}`, headers: alice })).statusCode, 200)
      const patched = await app.inject({ method: 'PATCH', url: `/issues/${own}`, headers: alice, payload: { name: 'x' } })
      assert.equal(patched.statusCode, 200)
      assert.equal(patched.json().name, 'x')
      // update checks the row as written against the rule: moving it out is a 403, nothing changed
      const moved = await app.inject({ method: 'PATCH', url: `/issues/${own}`, headers: alice, payload: { org: 'B' } })
      assert.equal(moved.statusCode, 403)
      assert.equal(problemOf(moved).code, 'FST_VIEWSET_FORBIDDEN')
      assert.equal((await app.inject({ method: 'DELETE', url: `/issues/${own}`, headers: alice })).statusCode, 204)
      assert.equal((await snapshot(db)).length, before.length - 1)
    })

    test('insert checks the row stored against the GET rule: a row in another organization is a 403', async (t) => {
      const { app, db, alice } = await issuesApp(t, dialect)
      const before = await snapshot(db)
      const refused = await app.inject({ method: 'POST', url: '/issues', headers: alice, payload: { name: 'spy', org: 'B' } })
      assert.equal(refused.statusCode, 403)
      assert.equal(problemOf(refused).code, 'FST_VIEWSET_FORBIDDEN')
      assert.deepEqual(await snapshot(db), before, 'nothing written')
      const created = await app.inject({ method: 'POST', url: '/issues', headers: alice, payload: { name: 'ok', org: 'A' } })
      assert.equal(created.statusCode, 201)
      assert.equal(created.json().org, 'A')
    })

    test("a beforeWrite's helpers apply the rule of the request it serves", async (t) => {
      const { app, alice, bob } = await issuesApp(t, dialect, { beforeWrite: true })
      const byAlice = await app.inject({ method: 'POST', url: '/issues', headers: alice, payload: { name: 'n', org: 'A' } })
      assert.equal(byAlice.statusCode, 201)
      assert.equal(byAlice.json().description, 'sees 3')
      const byBob = await app.inject({ method: 'POST', url: '/issues', headers: bob, payload: { name: 'n', org: 'B' } })
      assert.equal(byBob.json().description, 'sees 37')
    })

    test('outside any request the helpers refuse, naming this.unscoped; this.unscoped reaches every row', async (t) => {
      const { issues, ids } = await issuesApp(t, dialect)
      const outside = (error: unknown) => {
        assert.ok(error instanceof TypeError)
        assert.equal((error as { code?: string }).code, 'FST_VIEWSET_OUTSIDE_REQUEST')
        assert.match(error.message, /this\.unscoped\.query\(\)/)
        return true
      }
      assert.throws(() => issues.query(), outside)
      await assert.rejects(issues.findById(ids.b[0] ?? 0), /this\.unscoped\.findById\(\)/)
      await assert.rejects(issues.update(ids.b[0] ?? 0, { name: 'x' }), /this\.unscoped\.update\(\)/)
      await assert.rejects(issues.deleteById(ids.b[0] ?? 0), /this\.unscoped\.deleteById\(\)/)
      await assert.rejects(issues.insert({ name: 'x', org: 'B' }), /this\.unscoped\.insert\(\)/)
      assert.equal((await issues.unscoped.query().execute()).length, 40)
      assert.equal((await issues.unscoped.findById(ids.b[0] ?? 0))?.org, 'B')
      const updated = await issues.unscoped.update(ids.b[1] ?? 0, { name: 'by a job' })
      assert.equal(updated?.name, 'by a job')
      const inserted = await issues.unscoped.insert({ name: 'seeded', org: 'B' })
      assert.equal(inserted.org, 'B')
      assert.equal(await issues.unscoped.deleteById(inserted.id ?? 0), true)
    })
  })
}
