import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { sql } from 'kysely'
import { softDeleteMethods, Viewset, viewsetBatch } from 'fastify-viewsets'
import type { RelatedConfig, ViewsetMethod, ViewsetOptions } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// Issue 39 item 3: soft delete wherever a row is removed. On a viewset with `softDelete`, the `deleteById` helper (its
// scoped and unscoped forms, by the key's parts or by an object of its columns) marks the row deleted and leaves it
// stored; `purgeById` is the hard delete. DELETE_MANY, a batch's DELETE and PURGE record `delete` in the history. Two
// tenants: a helper never reaches the other's rows. The table has a composite key (list_id, item).

const Link = Type.Object({
  list_id: Type.Integer(),
  item: Type.String({ maxLength: 50 }),
  tenant: Type.Optional(Type.String({ readOnly: true })),
  note: Type.Optional(Type.Union([Type.String(), Type.Null()])),
})
type LinkKey = ['list_id', 'item']

const secret = 'test-secret-that-is-long-enough-for-hs256'
const methods: ViewsetMethod[] = [
  'LIST', 'GET', 'POST', 'PATCH', 'DELETE', 'DELETE_MANY', 'HISTORY', ...softDeleteMethods,
]

function timestampType (dialect: TestDatabase['dialect']): string {
  return dialect === 'postgres' ? 'timestamptz' : dialect === 'mysql' ? 'datetime(3)' : 'datetime'
}

interface Params { list: string, item: string }

/** The helpers as an override's custom routes call them: 204 when they found the row, else 404. */
class Links extends Viewset<any, 'sh_links', typeof Link, RelatedConfig<any>, LinkKey> {
  override customRoutes (fastify: FastifyInstance) {
    const parts = (params: Params): [number, string] => [Number(params.list), params.item]
    const answer = (done: boolean) => ({ done })
    const config = { protected: true }
    fastify.delete<{ Params: Params }>('/helper/:list/:item', { config }, async (request) =>
      answer(await this.deleteById(parts(request.params))))
    fastify.delete<{ Params: Params }>('/by-object/:list/:item', { config }, async (request) =>
      answer(await this.deleteById({ list_id: Number(request.params.list), item: request.params.item })))
    fastify.delete<{ Params: Params }>('/unscoped/:list/:item', { config }, async (request) =>
      answer(await this.unscoped.deleteById(parts(request.params))))
    fastify.delete<{ Params: Params }>('/purge/:list/:item', { config }, async (request) =>
      answer(await this.purgeById(parts(request.params))))
    fastify.get('/wrong-shape', { config }, async () => {
      const wrong: unknown[] = [{ list_id: 1 }, [1], { list_id: 1, item: 'a', note: 'x' }, 1]
      const messages: string[] = []
      for (const key of wrong) {
        await this.findById(key as { list_id: number, item: string })
          .catch((error: Error) => messages.push(error.message))
      }
      return messages
    })
  }
}

async function fixture (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  const { db } = database
  await db.schema.createTable('sh_links')
    .addColumn('list_id', 'integer', (column) => column.notNull())
    .addColumn('item', 'varchar(50)', (column) => column.notNull())
    .addColumn('tenant', 'varchar(20)', (column) => column.notNull())
    .addColumn('note', 'varchar(50)')
    .addColumn('deleted_at', sql.raw(timestampType(dialect.name)))
    .addPrimaryKeyConstraint('sh_links_pk', ['list_id', 'item'])
    .execute()
  await db.insertInto('sh_links').values([
    { list_id: 1, item: 'a', tenant: 'alice' }, { list_id: 1, item: 'b', tenant: 'alice' },
    { list_id: 1, item: 'c', tenant: 'alice' }, { list_id: 1, item: 'd', tenant: 'alice' },
    { list_id: 1, item: 'e', tenant: 'alice' }, { list_id: 2, item: 'a', tenant: 'bob' },
  ]).execute()
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  const links = new Links({
    db,
    table: 'sh_links',
    schema: Link,
    methods,
    softDelete: 'deleted_at',
    filterFields: { item: ['eq'] },
    protectedMethods: methods,
    scope: (eb: any, { token }: any) => eb('tenant', '=', token?.sub ?? 'none'),
    beforeWrite: (values: any, { token }: any) => ({ ...values, tenant: token?.sub }),
    history: { createTable: true },
  } as ViewsetOptions<any, 'sh_links', typeof Link>)
  await app.register(links.register(), { prefix: '/links' })
  await app.register(viewsetBatch())
  await app.ready()
  /** Every row as stored: [list_id, item, deleted]. */
  const rows = async () => (await db.selectFrom('sh_links').selectAll().orderBy('list_id').orderBy('item').execute())
    .map((row) => [Number(row.list_id), row.item, row.deleted_at !== null])
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { ...database, app, links, rows, alice: bearer('alice'), bob: bearer('bob') }
}

for (const dialect of dialects) {
  describe(`soft delete wherever a row is removed (${dialect.name})`, () => {
    test('deleteById marks the row deleted (by its parts or an object of its key), purgeById removes it', async (t) => {
      const { app, rows, alice, bob } = await fixture(t, dialect)
      const del = async (url: string, headers: Record<string, string>) => {
        const response = await app.inject({ method: 'DELETE', url, headers })
        assert.equal(response.statusCode, 200, response.body)
        return response.json().done as boolean
      }
      assert.equal(await del('/links/helper/1/a', alice), true)
      assert.equal(await del('/links/by-object/1/b', alice), true)
      // Deleted already: absent to the helper as to DELETE; bob never reaches alice's rows.
      assert.equal(await del('/links/helper/1/a', alice), false)
      assert.equal(await del('/links/helper/1/c', bob), false)
      assert.equal(await del('/links/by-object/1/c', bob), false)
      assert.equal(await del('/links/purge/1/c', bob), false)
      assert.equal((await app.inject({ url: '/links/1,a', headers: alice })).statusCode, 404)
      assert.deepEqual(await rows(), [
        [1, 'a', true], [1, 'b', true], [1, 'c', false], [1, 'd', false], [1, 'e', false], [2, 'a', false],
      ])
      // The unscoped helper marks any tenant's live row, never a deleted one twice.
      assert.equal(await del('/links/unscoped/2/a', alice), true)
      assert.equal(await del('/links/unscoped/2/a', alice), false)
      // purgeById removes a row for good, a deleted one too.
      assert.equal(await del('/links/purge/1/a', alice), true)
      assert.equal(await del('/links/purge/1/c', alice), true)
      assert.deepEqual(await rows(), [[1, 'b', true], [1, 'd', false], [1, 'e', false], [2, 'a', true]])
      const shapes = await app.inject({ url: '/links/wrong-shape', headers: alice })
      assert.equal(shapes.statusCode, 200, shapes.body)
      assert.equal(shapes.json().length, 4)
      for (const message of shapes.json()) assert.match(message, /A key of list_id, item is its parts in that order/)
    })

    test('outside a request, unscoped.deleteById marks the row; purgeById is refused', async (t) => {
      const { links, rows } = await fixture(t, dialect)
      assert.equal(await links.unscoped.deleteById([1, 'a']), true)
      assert.equal(await links.unscoped.deleteById({ list_id: 1, item: 'a' }), false)
      await assert.rejects(links.purgeById([1, 'b']), /this\.unscoped\.purgeById\(\)/)
      assert.equal(await links.unscoped.purgeById([1, 'a']), true)
      assert.deepEqual((await rows()).slice(0, 2), [[1, 'b', false], [1, 'c', false]])
    })

    test('DELETE, DELETE_MANY and a batch DELETE mark rows deleted and record `delete`; PURGE removes', async (t) => {
      const { app, db, rows, alice, bob } = await fixture(t, dialect)
      let response = await app.inject({ method: 'DELETE', url: '/links/1,a', headers: alice })
      assert.equal(response.statusCode, 204, response.body)
      response = await app.inject({ method: 'DELETE', url: '/links?item=b', headers: alice })
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.json().affected, 1)
      response = await app.inject({ method: 'DELETE', url: '/links?item=a', headers: bob })
      assert.equal(response.json().affected, 1)
      const operations = [{ method: 'DELETE', path: '/links/1,c' }, { method: 'DELETE', path: '/links/1,d/purge' }]
      response = await app.inject({ method: 'POST', url: '/batch', headers: alice, payload: { operations } })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(await rows(), [[1, 'a', true], [1, 'b', true], [1, 'c', true], [1, 'e', false], [2, 'a', true]])
      const recorded = await db.selectFrom('viewset_history').select(['row_key', 'operation', 'actor', 'after'])
        .where('table_name', '=', 'sh_links').orderBy('position').execute()
      const summary = recorded.map((entry) => [JSON.parse(entry.row_key), entry.operation, entry.actor, entry.after])
      assert.deepEqual(summary, [
        [{ list_id: 1, item: 'a' }, 'delete', 'alice', null],
        [{ list_id: 1, item: 'b' }, 'delete', 'alice', null],
        [{ list_id: 2, item: 'a' }, 'delete', 'bob', null],
        [{ list_id: 1, item: 'c' }, 'delete', 'alice', null],
        [{ list_id: 1, item: 'd' }, 'delete', 'alice', null],
      ])
      // Deleted, the row's history is absent as the row is; restored, the row is live again and its history says so.
      assert.equal((await app.inject({ url: '/links/1,a/history', headers: alice })).statusCode, 404)
      response = await app.inject({ method: 'POST', url: '/links/1,a/restore', headers: alice })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual((await rows())[0], [1, 'a', false])
      response = await app.inject({ url: '/links/1,a/history', headers: alice })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json().map((entry: any) => [entry.operation, entry.before?.item, entry.after?.item]),
        [['restore', 'a', 'a'], ['delete', 'a', undefined]])
      assert.equal((await app.inject({ url: '/links/1,a/history', headers: bob })).statusCode, 404)
    })
  })
}
