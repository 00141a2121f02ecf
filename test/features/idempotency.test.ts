import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { createDatabase, createViewset, viewsetDocs } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import type { OpenApiDocument } from '../helpers/contract.js'
import { redoclyProblems, spectralProblems } from '../helpers/openapi-lint.js'
import { injections } from '../helpers/hostile-corpus.js'
import {
  owned, Project, projectRelations, secret, seedTenants, Tag, Task, taskRelations, tenantsApp,
} from '../helpers/tenants.js'
import type { TenantsDB } from '../helpers/tenants.js'

// Idempotency-Key (issue 38, item 5; draft-ietf-httpapi-idempotency-key-header) on the tenants' tasks: the first
// completed answer is stored in the write's own transaction, keyed by key + caller + method + path; a retry of the
// same request answers it again (Idempotent-Replayed: true) without writing, another request with the key is a 422,
// a retry while the first is in flight a 409 with Retry-After; two processes (two apps, two pools, one database)
// write once. Every test asserts the rows in the database.

const keys = 'viewset_idempotency_keys'

interface KeyRow { owner: string | null; status: number | null; body: string | null }

async function keyRows (db: Kysely<any>): Promise<KeyRow[]> {
  const rows = await db.selectFrom(keys).select(['owner', 'status', 'body']).execute()
  return rows.map((row) => ({ ...row, status: row.status === null ? null : Number(row.status) }))
}

async function tasksOf (db: Kysely<any>): Promise<Array<[number, string, string]>> {
  const rows = await db.selectFrom('tasks').select(['id', 'title', 'owner']).orderBy('id').execute()
  return rows.map((row) => [Number(row.id), String(row.title), String(row.owner)])
}

async function idempotentApp (t: TestContext, dialect: TestDialect, tasks: Record<string, unknown> = {}) {
  return await tenantsApp(t, dialect, { tasks: { idempotency: { createTable: true }, ...tasks } })
}

function post (app: FastifyInstance, who: { authorization: string }, key: string | undefined, payload: object,
  url = '/tasks') {
  const headers = { ...who, ...(key === undefined ? {} : { 'idempotency-key': key }) }
  return app.inject({ method: 'POST', url, headers, payload })
}

/** A gate a beforeWrite waits at: the test holds a request in flight, then lets it go. */
function gate () {
  let open = () => {}
  let entered = () => {}
  const opened = new Promise<void>((resolve) => { open = resolve })
  const reached = new Promise<void>((resolve) => { entered = resolve })
  return { open, reached, wait: async () => { entered(); await opened } }
}

/** A database URL two apps open with two pools: a file for SQLite (an in-memory database is one connection's). */
async function sharedDatabase (t: TestContext, dialect: TestDialect): Promise<TestDatabase> {
  if (dialect.name !== 'sqlite') return await testDatabase(t, dialect)
  const file = join(tmpdir(), `idempotency-${process.pid}-${Math.random().toString(36).slice(2)}.db`)
  const db = createDatabase<any>(`sqlite:${file}`)
  t.after(async () => {
    await db.destroy()
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
  })
  return { db, dialect: 'sqlite', url: `sqlite:${file}`, queries: [] }
}

/** The tenants' three viewsets over `db`, the tasks' with `tasks` merged in, on `app` (with `viewsetDocs` first). */
async function registerTenants (app: FastifyInstance, db: Kysely<any>, tasks: Record<string, unknown>, docs = false) {
  await app.register(fastifyJwt, { secret })
  if (docs) await app.register(viewsetDocs)
  const create = (given: object) => createViewset({ db, ...given } as ViewsetOptions<TenantsDB, 'tasks', typeof Task>)
  await app.register(create({ ...owned('projects', Project), relatedConfig: projectRelations }), { prefix: '/projects' })
  await app.register(create({ ...owned('tasks', Task), relatedConfig: taskRelations, ...tasks }), { prefix: '/tasks' })
  await app.register(create(owned('tags', Tag)), { prefix: '/tags' })
  await app.ready()
}

/** One "process": its own pool over `url`, the tasks viewset with idempotency, a `beforeWrite` that may wait. */
async function processApp (t: TestContext, url: string, wait?: () => Promise<void>) {
  const db = createDatabase<TenantsDB>(url)
  const app = testApp(t)
  t.after(() => db.destroy())
  const stamp = owned('tasks', Task).beforeWrite as (values: object, context: object) => object
  await registerTenants(app, db, {
    idempotency: { createTable: true },
    beforeWrite: async (values: object, context: object) => {
      await wait?.()
      return stamp(values, context)
    },
  })
  return { app, alice: { authorization: `Bearer ${app.jwt.sign({ sub: 'alice' })}` } }
}

/** Sends a request over a real socket and drops the connection as soon as the answer starts: the client never reads
 * it (a reset after the commit). */
async function sendAndDrop (app: FastifyInstance, path: string, headers: Record<string, string>, body: object) {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const text = JSON.stringify(body)
  await new Promise<void>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      const lines = Object.entries({ ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) })
        .map(([name, value]) => `${name}: ${value}`)
      socket.write(`POST ${path} HTTP/1.1\r\nhost: localhost\r\n${lines.join('\r\n')}\r\n\r\n${text}`)
    })
    socket.once('data', () => { socket.destroy(); resolve() })
    socket.once('error', reject)
  })
}

for (const dialect of dialects) {
  describe(`Idempotency-Key on ${dialect.name}`, () => {
    test('a retry answers the stored 201 (same body and Location, marked replayed) and writes nothing', async (t) => {
      const { app, db, alice } = await idempotentApp(t, dialect)
      const first = await post(app, alice, 'key-1', { title: 'once', project_id: 1 })
      assert.equal(first.statusCode, 201)
      assert.equal(first.headers['idempotent-replayed'], undefined)
      const retry = await post(app, alice, 'key-1', { project_id: 1, title: 'once' })
      assert.equal(retry.statusCode, 201)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
      assert.equal(retry.headers.location, first.headers.location)
      assert.equal(retry.headers.etag, first.headers.etag)
      assert.match(String(retry.headers['content-type']), /^application\/json/)
      assert.deepEqual(retry.json(), first.json())
      assert.deepEqual((await tasksOf(db)).filter(([, title]) => title === 'once'), [[6, 'once', 'alice']])
      assert.deepEqual(await keyRows(db), [{ owner: null, status: 201, body: first.body }])
      // Without a key, the same request writes again: the header is what makes a retry safe.
      assert.equal((await post(app, alice, undefined, { title: 'once', project_id: 1 })).statusCode, 201)
      assert.equal((await tasksOf(db)).length, 7)
    })

    test('a reset after the commit: the retry writes nothing and gets the first answer', async (t) => {
      const { app, db, alice } = await idempotentApp(t, dialect)
      await sendAndDrop(app, '/tasks', { ...alice, 'idempotency-key': '"reset-1"' }, { title: 'reset', project_id: 1 })
      // The answer had started: the write and its stored answer were committed together before it.
      assert.deepEqual((await tasksOf(db)).slice(5), [[6, 'reset', 'alice']])
      const retry = await post(app, alice, '"reset-1"', { title: 'reset', project_id: 1 })
      assert.equal(retry.statusCode, 201)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
      assert.equal(retry.headers.location, '/tasks/6')
      assert.equal(retry.json().id, 6)
      assert.equal(retry.json().owner, 'alice')
      assert.deepEqual((await tasksOf(db)).slice(5), [[6, 'reset', 'alice']])
    })

    test('the same key with another body, query or path is a 422, nothing written', async (t) => {
      const { app, db, alice } = await idempotentApp(t, dialect)
      assert.equal((await post(app, alice, 'k', { title: 'first', project_id: 1 })).statusCode, 201)
      const other = await post(app, alice, 'k', { title: 'second', project_id: 1 })
      assert.equal(other.statusCode, 422)
      assert.equal(problemOf(other).code, 'FST_VIEWSET_IDEMPOTENCY_KEY_REUSED')
      const query = await post(app, alice, 'k', { title: 'first', project_id: 1 }, '/tasks?x=1')
      assert.notEqual(query.statusCode, 201)
      // The key is per path: on PATCH /tasks/1 it is another key.
      const patch = await app.inject({
        method: 'PATCH', url: '/tasks/1', headers: { ...alice, 'idempotency-key': 'k' }, payload: { title: 'patched' },
      })
      assert.equal(patch.statusCode, 200)
      const patched = await app.inject({
        method: 'PATCH', url: '/tasks/1', headers: { ...alice, 'idempotency-key': 'k' }, payload: { title: 'again' },
      })
      assert.equal(patched.statusCode, 422)
      assert.deepEqual((await tasksOf(db)).filter(([id]) => id === 1 || id > 5),
        [[1, 'patched', 'alice'], [6, 'first', 'alice']])
    })

    test('two tenants with the same key string are two keys; each replay is its caller\'s answer', async (t) => {
      const { app, db, alice, bob } = await idempotentApp(t, dialect)
      const forAlice = await post(app, alice, 'shared', { title: 'same', project_id: 1 })
      const forBob = await post(app, bob, 'shared', { title: 'same', project_id: 2 })
      assert.equal(forAlice.statusCode, 201)
      assert.equal(forBob.statusCode, 201)
      assert.equal(forBob.headers['idempotent-replayed'], undefined)
      assert.deepEqual((await tasksOf(db)).slice(5), [[6, 'same', 'alice'], [7, 'same', 'bob']])
      const bobAgain = await post(app, bob, 'shared', { title: 'same', project_id: 2 })
      assert.equal(bobAgain.headers['idempotent-replayed'], 'true')
      assert.deepEqual(bobAgain.json(), forBob.json())
      assert.equal(bobAgain.json().owner, 'bob')
      // Bob's other body under the key alice used is his own first use of his key: a 422 against his own request.
      assert.equal((await post(app, bob, 'shared', { title: 'other', project_id: 2 })).statusCode, 422)
      assert.equal((await keyRows(db)).length, 2)
      assert.equal((await tasksOf(db)).length, 7)
    })

    test('a failed write stores nothing and leaves the key free; BULK and PATCH replay too', async (t) => {
      const { app, db, alice } = await idempotentApp(t, dialect)
      // Task 3 is bob's: outside alice's rule, a 404, rolled back, the key not burned.
      const missing = await app.inject({
        method: 'PATCH', url: '/tasks/3', headers: { ...alice, 'idempotency-key': 'p' }, payload: { title: 'mine' },
      })
      assert.equal(missing.statusCode, 404)
      assert.deepEqual(await keyRows(db), [])
      const bulk = { method: 'POST' as const, url: '/tasks/bulk', headers: { ...alice, 'idempotency-key': 'b' } }
      const payload = [{ title: 'bulk-1', project_id: 1 }, { title: 'bulk-2', project_id: 3 }]
      const created = await app.inject({ ...bulk, payload })
      assert.equal(created.statusCode, 201)
      const again = await app.inject({ ...bulk, payload })
      assert.equal(again.statusCode, 201)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.deepEqual(again.json(), created.json())
      assert.deepEqual((await tasksOf(db)).slice(5), [[6, 'bulk-1', 'alice'], [7, 'bulk-2', 'alice']])
      const patch = { method: 'PATCH' as const, url: '/tasks/1', headers: { ...alice, 'idempotency-key': 'p' } }
      const patched = await app.inject({ ...patch, payload: { title: 'renamed' } })
      assert.equal(patched.statusCode, 200)
      // Someone else renames it meanwhile; the retry answers the first answer and does not write it back.
      await db.updateTable('tasks').set({ title: 'by-someone' }).where('id', '=', 1).execute()
      const retried = await app.inject({ ...patch, payload: { title: 'renamed' } })
      assert.equal(retried.headers['idempotent-replayed'], 'true')
      assert.equal(retried.json().title, 'renamed')
      assert.deepEqual((await tasksOf(db))[0], [1, 'by-someone', 'alice'])
    })

    test('a key that is empty, too long or not printable ASCII is a 400, nothing written', async (t) => {
      const { app, db, alice } = await idempotentApp(t, dialect)
      for (const key of ['x'.repeat(256), 'caf\u00e9', '""']) {
        const response = await post(app, alice, key, { title: 'bad-key', project_id: 1 })
        assert.equal(response.statusCode, 400, key)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
      }
      assert.equal((await tasksOf(db)).length, 5)
      assert.deepEqual(await keyRows(db), [])
    })

    test('hostile keys: a 201 or a 400, never a 5xx; one row and one key per 201', async (t) => {
      const { app, db, alice } = await idempotentApp(t, dialect)
      let created = 0
      for (const [index, key] of [...injections, ' padded ', 'a'.repeat(255), '"quoted, with comma"'].entries()) {
        let response
        try {
          response = await post(app, alice, key, { title: `hostile-${index}`, project_id: 1 })
        } catch {
          continue // a header value HTTP cannot carry (a line break, a NUL): no server ever sees it
        }
        assert.ok(response.statusCode === 201 || response.statusCode === 400, `${response.statusCode} for ${key}`)
        if (response.statusCode === 201) created++
      }
      assert.ok(created > 0)
      assert.equal((await tasksOf(db)).length, 5 + created)
      assert.equal((await keyRows(db)).length, created)
    })

    test('two processes: a retry in flight is a 409 with Retry-After; a lease that ran out is taken over, one row',
      async (t) => {
        const database = await sharedDatabase(t, dialect)
        await seedTenants(database, dialect)
        const held = gate()
        let holding = true
        const first = await processApp(t, database.url, async () => { if (holding) await held.wait() })
        const second = await processApp(t, database.url)
        const body = { title: 'two-processes', project_id: 1 }
        const inFlight = post(first.app, first.alice, 'k2', body)
        await held.reached
        holding = false
        const busy = await post(second.app, second.alice, 'k2', body)
        assert.equal(busy.statusCode, 409)
        assert.equal(problemOf(busy).code, 'FST_VIEWSET_IDEMPOTENCY_KEY_IN_USE')
        assert.match(String(busy.headers['retry-after']), /^[1-9][0-9]*$/)
        assert.equal((await post(second.app, second.alice, 'k2', { ...body, title: 'other' })).statusCode, 422)
        held.open()
        const done = await inFlight
        assert.equal(done.statusCode, 201)
        const replayed = await post(second.app, second.alice, 'k2', body)
        assert.equal(replayed.headers['idempotent-replayed'], 'true')
        assert.deepEqual(replayed.json(), done.json())
        assert.deepEqual((await tasksOf(database.db)).slice(5), [[6, 'two-processes', 'alice']])
      })

    test('two processes retrying one key at once write one row', async (t) => {
      const database = await sharedDatabase(t, dialect)
      await seedTenants(database, dialect)
      const one = await processApp(t, database.url)
      const two = await processApp(t, database.url)
      const body = { title: 'race', project_id: 1 }
      const answers = await Promise.all([one, two, one, two].map(({ app, alice }) => post(app, alice, 'race', body)))
      const statuses = answers.map((answer) => answer.statusCode)
      assert.ok(statuses.every((status) => status === 201 || status === 409), String(statuses))
      const created = answers.filter((answer) => answer.statusCode === 201)
      const fresh = created.filter((answer) => answer.headers['idempotent-replayed'] !== 'true')
      assert.equal(fresh.length, 1)
      for (const answer of created) assert.deepEqual(answer.json(), fresh[0]?.json())
      for (const answer of answers.filter((each) => each.statusCode === 409)) assert.ok(answer.headers['retry-after'])
      assert.deepEqual((await tasksOf(database.db)).slice(5), [[6, 'race', 'alice']])
      assert.deepEqual((await keyRows(database.db)).map((row) => row.status), [201])
    })

    test('a crashed holder\'s lease runs out: the retry takes the key over, and the late holder writes nothing',
      async (t) => {
        const database = await sharedDatabase(t, dialect)
        await seedTenants(database, dialect)
        const held = gate()
        let holding = true
        const first = await processApp(t, database.url, async () => { if (holding) await held.wait() })
        const second = await processApp(t, database.url)
        const body = { title: 'lease', project_id: 1 }
        const late = post(first.app, first.alice, 'k3', body)
        await held.reached
        holding = false
        // As if the lease had run out (the holder crashed, or ran past it).
        await database.db.updateTable(keys).set({ lease_until: 0 }).execute()
        const retry = await post(second.app, second.alice, 'k3', body)
        assert.equal(retry.statusCode, 201)
        assert.equal(retry.headers['idempotent-replayed'], undefined)
        held.open()
        const lost = await late
        assert.equal(lost.statusCode, 409)
        assert.equal(problemOf(lost).code, 'FST_VIEWSET_IDEMPOTENCY_KEY_IN_USE')
        assert.equal(lost.headers['retry-after'], '1')
        assert.deepEqual((await tasksOf(database.db)).slice(5), [[6, 'lease', 'alice']])
        assert.deepEqual((await keyRows(database.db)).map((row) => row.status), [201])
      })

    test('expired keys are pruned, at most 10 per new key; an expired key is used afresh', async (t) => {
      const { app, db, alice } = await idempotentApp(t, dialect)
      const stale = Array.from({ length: 15 }, (_, index) => ({
        id: `stale-${index}`, fingerprint: 'f', owner: null, lease_until: 0, expires_at: 1, status: 201, body: '',
      }))
      await db.insertInto(keys as any).values(stale).execute()
      assert.equal((await post(app, alice, 'fresh', { title: 'fresh', project_id: 1 })).statusCode, 201)
      assert.equal((await keyRows(db)).length, 6)
      await db.updateTable(keys as any).set({ expires_at: 1 }).execute()
      const again = await post(app, alice, 'fresh', { title: 'fresh', project_id: 1 })
      assert.equal(again.headers['idempotent-replayed'], undefined)
      assert.deepEqual((await tasksOf(db)).slice(5).map(([, title]) => title), ['fresh', 'fresh'])
    })

    test('a missing table fails ready() naming it; OpenAPI documents the header, the 409 and the 422', async (t) => {
      await assert.rejects(tenantsApp(t, dialect, { tasks: { idempotency: true } }), (error: Error) => {
        assert.match(error.message, /idempotency\.table/)
        assert.match(error.message, /viewset_idempotency_keys/)
        return true
      })
      await assert.rejects(tenantsApp(t, dialect, { tasks: { idempotency: { tabel: 'x' } } }), /idempotency\.tabel/)
      const unused = createDatabase('sqlite::memory:')
      t.after(() => unused.destroy())
      for (const [idempotency, named] of [['yes', /idempotency:/], [{ lease: 0 }, /idempotency\.lease/],
        [{ table: 'a b' }, /idempotency\.table/], [{ createTable: 1 }, /idempotency\.createTable/]] as const) {
        assert.throws(() => createViewset({ db: unused, ...owned('tasks', Task), idempotency } as
          unknown as ViewsetOptions<TenantsDB, 'tasks', typeof Task>), named)
      }
      const database = await testDatabase(t, dialect)
      await seedTenants(database, dialect)
      const app = testApp(t)
      await registerTenants(app, database.db, { idempotency: { createTable: true, table: 'task_keys' } }, true)
      const paths = (app.swagger() as any).paths
      for (const [path, method] of [['/tasks', 'post'], ['/tasks/bulk', 'post'], ['/tasks/{id}', 'patch']] as const) {
        const operation = paths[path][method]
        assert.ok(operation.parameters.some((p: any) => p.in === 'header' && p.name === 'idempotency-key'), path)
        assert.ok(operation.responses[409].headers['Retry-After'], path)
        assert.match(operation.responses[422].description, /FST_VIEWSET_IDEMPOTENCY_KEY_REUSED/)
        const created = operation.responses[method === 'post' ? 201 : 200]
        assert.ok(created.headers['Idempotent-Replayed'], path)
      }
      const document = app.swagger() as unknown as OpenApiDocument
      const errors = [...await redoclyProblems(document), ...await spectralProblems(document)]
        .filter((problem) => problem.severity === 'error')
      assert.deepEqual(errors, [])
      const put = paths['/tasks/{id}'].put
      assert.ok(!put.parameters.some((p: any) => p.name === 'idempotency-key'))
      const alice = { authorization: `Bearer ${app.jwt.sign({ sub: 'alice' })}` }
      assert.equal((await post(app, alice, 'd', { title: 'doc', project_id: 1 })).statusCode, 201)
      assert.equal((await database.db.selectFrom('task_keys').selectAll().execute()).length, 1)
    })
  })
}
