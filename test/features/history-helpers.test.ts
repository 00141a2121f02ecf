import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { Generated, Kysely } from 'kysely'
import { Viewset } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// The helpers an override or a custom route writes with record their writes in the history (issue 39 item 3: every
// write of the viewset), in their transaction, with the served request's actor, under the request's rules: another
// tenant's row is not written and leaves no entry. Soft delete through deleteById is a `delete` entry; purgeById too.

const secret = 'test-secret-that-is-long-enough-for-hs256'

const Memo = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  owner: Type.Optional(Type.String({ readOnly: true })),
})

interface MemosDB {
  memos: { id: Generated<number>; title: string; owner: string; deleted_at: string | null }
  viewset_history: {
    table_name: string
    row_key: string
    operation: string
    actor: string | null
    before: string | null
    after: string | null
    position: number
  }
}

class MemoViewset extends Viewset<MemosDB, 'memos', typeof Memo> {
  override customRoutes (fastify: FastifyInstance) {
    fastify.post<{ Body: { title: string } }>('/make', { config: { protected: true } }, async (request) =>
      await this.insert({ title: request.body.title, owner: request.viewsetToken?.sub ?? '' }))
    fastify.post<{ Params: { id: number } }>('/:id/rename', { config: { protected: true } }, async (request, reply) => {
      const renamed = await this.update(Number(request.params.id), { title: 'renamed' })
      return renamed ?? reply.code(404).send({ found: false })
    })
    fastify.post<{ Params: { id: number } }>('/:id/zap', { config: { protected: true } }, async (request) =>
      ({ deleted: await this.deleteById(Number(request.params.id)) }))
    fastify.post<{ Params: { id: number } }>('/:id/purge-now', { config: { protected: true } }, async (request) =>
      ({ purged: await this.purgeById(Number(request.params.id)) }))
  }
}

async function memosApp (t: TestContext, dialect: TestDialect) {
  const { db } = await testDatabase(t, dialect)
  const [type, key] = autoIncrement(dialect.name)
  await db.schema.createTable('memos').addColumn('id', type as 'integer', key)
    .addColumn('title', 'varchar(100)', (column) => column.notNull())
    .addColumn('owner', 'varchar(50)', (column) => column.notNull())
    .addColumn('deleted_at', dialect.name === 'mysql' ? 'datetime(3)' : 'timestamp')
    .execute()
  await db.insertInto('memos').values([{ title: 'a1', owner: 'alice' }, { title: 'b1', owner: 'bob' }]).execute()
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  const options = {
    db,
    table: 'memos',
    schema: Memo,
    methods: ['LIST', 'GET', 'PATCH', 'DELETE'],
    protectedMethods: ['LIST', 'GET', 'PATCH', 'DELETE'],
    softDelete: 'deleted_at',
    history: { createTable: true },
    scope: (eb: any, { token }: any) => eb('owner', '=', token?.sub ?? ''),
  }
  const viewset = new MemoViewset(options as unknown as ViewsetOptions<MemosDB, 'memos', typeof Memo>)
  await app.register(viewset.register(), { prefix: '/memos' })
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { db: db as Kysely<MemosDB>, app, alice: bearer('alice'), bob: bearer('bob') }
}

async function entries (db: Kysely<MemosDB>) {
  const rows = await db.selectFrom('viewset_history').select(['row_key', 'operation', 'actor', 'before', 'after'])
    .where('table_name', '=', 'memos').orderBy('position').execute()
  return rows.map((row) => ({
    key: JSON.parse(row.row_key).id as number,
    operation: row.operation,
    actor: row.actor,
    title: (JSON.parse(row.after ?? row.before ?? '{}') as { title?: string }).title,
  }))
}

for (const dialect of dialects) {
  describe(`the helpers record their writes in the history (${dialect.name})`, () => {
    test('insert, update, deleteById (soft) and purgeById each leave one entry with the actor', async (t) => {
      const { app, db, alice } = await memosApp(t, dialect)
      const made = await app.inject({ method: 'POST', url: '/memos/make', headers: alice, payload: { title: 'n1' } })
      assert.equal(made.statusCode, 200, made.body)
      const id = Number(made.json().id)
      const renamed = await app.inject({ method: 'POST', url: `/memos/${id}/rename`, headers: alice })
      assert.equal(renamed.json().title, 'renamed')
      const zapped = await app.inject({ method: 'POST', url: `/memos/${id}/zap`, headers: alice })
      assert.deepEqual(zapped.json(), { deleted: true })
      const kept = await db.selectFrom('memos').select(['title', 'deleted_at']).where('id', '=', id).executeTakeFirst()
      assert.equal(kept?.title, 'renamed')
      assert.notEqual(kept?.deleted_at, null, 'deleteById marks the row deleted')
      const purged = await app.inject({ method: 'POST', url: `/memos/${id}/purge-now`, headers: alice })
      assert.deepEqual(purged.json(), { purged: true })
      assert.equal(await db.selectFrom('memos').select('id').where('id', '=', id).executeTakeFirst(), undefined)
      assert.deepEqual(await entries(db), [
        { key: id, operation: 'create', actor: 'alice', title: 'n1' },
        { key: id, operation: 'update', actor: 'alice', title: 'renamed' },
        { key: id, operation: 'delete', actor: 'alice', title: 'renamed' },
        { key: id, operation: 'delete', actor: 'alice', title: 'renamed' },
      ])
    })

    test("another tenant's row: not written, no entry", async (t) => {
      const { app, db, bob } = await memosApp(t, dialect)
      const renamed = await app.inject({ method: 'POST', url: '/memos/1/rename', headers: bob })
      assert.equal(renamed.statusCode, 404)
      const zapped = await app.inject({ method: 'POST', url: '/memos/1/zap', headers: bob })
      assert.deepEqual(zapped.json(), { deleted: false })
      const row = await db.selectFrom('memos').select(['title', 'deleted_at']).where('id', '=', 1).executeTakeFirst()
      assert.deepEqual(row, { title: 'a1', deleted_at: null })
      assert.deepEqual(await entries(db), [])
    })
  })
}
