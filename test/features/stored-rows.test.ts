import { strict as assert } from 'node:assert'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { AddressInfo } from 'node:net'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import { createViewset } from '../../lib/index.js'
import { testApp } from '../helpers/app.js'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import { openSse } from '../helpers/sse.js'

// The stored versions read back as the table's rows (DialectSyntax.storedRows, one seam for the HISTORY route's rule,
// changed_since and the live feed): a JSON column's document is read back as the table holds it, on every database
// (MariaDB's JSON_TABLE reads an object as NULL in a text column: it is read from a JSON column of its own).

const secret = 'stored-rows-secret-that-is-long-enough'
const table = 'su_stored_docs'

const Doc = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  tenant: Type.Optional(Type.String({ readOnly: true })),
  doc: Type.Object({ color: Type.String() }),
})

async function docsApp (t: TestContext, dialect: (typeof dialects)[number]) {
  const { db } = await testDatabase(t, dialect)
  const [idType, id] = autoIncrement(dialect.name)
  await db.schema.createTable(table).addColumn('id', idType as 'integer', id)
    .addColumn('tenant', 'varchar(16)', (column) => column.notNull())
    .addColumn('doc', dialect.name === 'postgres' ? 'jsonb' : 'json', (column) => column.notNull())
    .execute()
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  await app.register(createViewset({
    db,
    table,
    schema: Doc,
    history: { createTable: true },
    changes: { pollInterval: 25 },
    methods: ['LIST', 'GET', 'POST', 'DELETE', 'HISTORY'],
    protectedMethods: ['LIST', 'GET', 'POST', 'DELETE', 'HISTORY'],
    beforeWrite: (values: Record<string, unknown>, { token }: { token: { sub?: string } | null }) =>
      ({ ...values, tenant: token?.sub ?? '' }),
    // A rule that reads the JSON column: true for every document, unless the column read back NULL.
    scope: (eb: any, { token }: { token: { sub?: string } | null }) =>
      eb.and([eb('tenant', '=', token?.sub ?? ''), eb('doc', 'is not', null)]),
  } as any), { prefix: '/docs' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { app, db, base: `http://127.0.0.1:${port}`, bearer }
}

for (const dialect of dialects) {
  describe(`stored rows (${dialect.name})`, () => {
    test('a JSON column of a stored version: the feed\'s row, changed_since\'s deletion, a deleted row\'s history',
      async (t) => {
        const { app, db, base, bearer } = await docsApp(t, dialect)
        const stream = await openSse(`${base}/docs`, bearer('alice'))
        t.after(() => { stream.close() })
        const post = async (sub: string, color: string) => {
          const response = await app.inject({ method: 'POST', url: '/docs', headers: bearer(sub), payload: { doc: { color } } })
          assert.equal(response.statusCode, 201, response.body)
          return response.json()
        }
        await post('bob', 'blue')
        const mine = await post('alice', 'red')
        const insert = await stream.next()
        assert.equal(insert.event, 'insert')
        assert.deepEqual(JSON.parse(insert.data), { id: mine.id, tenant: 'alice', doc: { color: 'red' } })
        const bobs = await post('bob', 'green')
        for (const [sub, id] of [['alice', mine.id], ['bob', bobs.id]]) {
          const gone = await app.inject({ method: 'DELETE', url: `/docs/${id}`, headers: bearer(sub) })
          assert.equal(gone.statusCode, 204)
        }
        assert.deepEqual(await stream.next().then(({ event, data }) => [event, JSON.parse(data)]),
          ['delete', { key: { id: mine.id } }])
        const changes = await app.inject({ url: '/docs?changed_since=0', headers: bearer('alice') })
        assert.equal(changes.statusCode, 200, changes.body)
        assert.deepEqual(changes.json().deleted, [{ id: mine.id }])
        const history = await app.inject({ url: `/docs/${mine.id}/history`, headers: bearer('alice') })
        assert.equal(history.statusCode, 200, history.body)
        assert.deepEqual(history.json().map((entry: { operation: string }) => entry.operation), ['delete', 'create'])
        // bob's deleted row stays his: not in alice's deletions, a 404 on its history.
        const hidden = await app.inject({ url: `/docs/${bobs.id}/history`, headers: bearer('alice') })
        assert.equal(hidden.statusCode, 404)
        assert.equal((await db.selectFrom(table).selectAll().execute()).length, 1)
      })
  })
}
