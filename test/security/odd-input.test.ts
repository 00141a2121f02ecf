import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { createViewset, viewsetFrameworkErrors } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

async function itemsApp (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  const app = testApp(t, { frameworkErrors: viewsetFrameworkErrors })
  await app.register(createViewset({
    db: database.db,
    table: 'items',
    schema: Item,
    methods: ['LIST', 'GET', 'POST', 'BULK', 'PUT', 'PATCH', 'DELETE'],
    filterFields: { name: ['eq', 'contains'] },
  }), { prefix: '/items' })
  await app.ready()
  await database.db.insertInto('items').values({ name: 'Bread', price: 2 }).execute()
  const stored = async () => await database.db.selectFrom('items').select(['id', 'name', 'description']).execute()
  return { app, stored }
}

const json = { 'content-type': 'application/json' }
const unchanged = [{ id: 1, name: 'Bread', description: null }]

/** The README's Errors table: each documented code with its status. */
const documented = new Set(
  [...readFileSync(new URL('../../README.md', import.meta.url), 'utf8').matchAll(/^\| `(FST_VIEWSET_\w+)` \| (\d{3}) \|/gm)]
    .map(([, code, status]) => `${code} ${status}`)
)

function fieldsOf (response: LightMyRequestResponse): string[] | undefined {
  return problemOf(response).errors?.map((error) => `${error.in}:${error.field}`)
}

for (const dialect of dialects) {
  describe(`odd input (${dialect.name})`, () => {
    test('a lone surrogate in any body string is a 400 naming the field; nothing is stored', async (t) => {
      const { app, stored } = await itemsApp(t, dialect)
      const cases: Array<[InjectOptions, string]> = [
        [{ method: 'POST', url: '/items', payload: '{"name":"lone-\\ud800-x"}' }, 'body:name'],
        [{ method: 'POST', url: '/items', payload: '{"name":"ok","description":"\\udc00"}' }, 'body:description'],
        [{ method: 'POST', url: '/items', payload: '{"name":"ok","extra":{"deep":["a","\\udfff"]}}' }, 'body:extra.deep.1'],
        // A key is a string too (answered escaped: JSON.stringify writes a lone surrogate as \ud83d).
        [{ method: 'POST', url: '/items', payload: '{"name":"ok","\\ud83d":1}' }, 'body:\ud83d'],
        [{ method: 'POST', url: '/items/bulk', payload: '[{"name":"a"},{"name":"b\\ud800"}]' }, 'body:/1/name'],
        [{ method: 'PUT', url: '/items/1', payload: '{"name":"\\udbff"}' }, 'body:name'],
        [{ method: 'PATCH', url: '/items/1', payload: '{"name":"x\\ud800"}' }, 'body:name'],
      ]
      for (const [request, field] of cases) {
        const response = await app.inject({ ...request, headers: json })
        assert.equal(response.statusCode, 400, `${request.method} ${String(request.payload)}: ${response.body}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
        assert.deepEqual(fieldsOf(response), [field])
      }
      const merge = await app.inject({
        method: 'PATCH',
        url: '/items/1',
        headers: { 'content-type': 'application/merge-patch+json' },
        payload: '{"description":"\\ud800"}',
      })
      assert.equal(merge.statusCode, 400, merge.body)
      assert.deepEqual(fieldsOf(merge), ['body:description'])
      assert.deepEqual(await stored(), unchanged)
      // A well-formed pair written as escapes, and an escaped backslash before `ud800`, are stored as sent.
      const pair = await app.inject({ method: 'POST', url: '/items', headers: json, payload: '{"name":"\\ud83d\\ude00 \\\\ud800"}' })
      assert.equal(pair.statusCode, 201, pair.body)
      assert.equal(pair.json().name, '\u{1F600} \\ud800')
    })

    test('a body that is not UTF-8 is a 400; nothing is stored', async (t) => {
      const { app, stored } = await itemsApp(t, dialect)
      const bodies = [
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff]), Buffer.from('"}')]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), // a surrogate
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3]), Buffer.from('"}')]), // a cut sequence
      ]
      for (const payload of bodies) {
        for (const [method, url] of [['POST', '/items'], ['PUT', '/items/1'], ['POST', '/items/bulk']] as const) {
          const response = await app.inject({ method, url, headers: json, payload })
          assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`)
          assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
          assert.deepEqual(fieldsOf(response), ['body:'])
          assert.match(problemOf(response).detail, /UTF-8/)
        }
      }
      assert.deepEqual(await stored(), unchanged)
      const accented = await app.inject({ method: 'POST', url: '/items', headers: json, payload: '{"name":"crème brûlée ☕ 😀"}' })
      assert.equal(accented.statusCode, 201)
      assert.equal(accented.json().name, 'crème brûlée ☕ 😀')
    })

    test('a query parameter that is not UTF-8 once decoded is a 400 naming it; in a path, FST_VIEWSET_BAD_URL', async (t) => {
      const { app } = await itemsApp(t, dialect)
      for (const [query, field] of [
        ['name=%ED%A0%80', 'name'],
        ['name=%FF', 'name'],
        ['name__contains=ok&name=a%C3', 'name'],
        ['limit=5&%FF=1', '%FF'],
      ]) {
        const response = await app.inject({ url: `/items?${query}` })
        assert.equal(response.statusCode, 400, `${query}: ${response.body}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_VALIDATION')
        assert.deepEqual(fieldsOf(response), [`querystring:${field}`])
      }
      const fine = await app.inject({ url: '/items?name=Br%65ad&name__contains=%E2%98%95+x' })
      assert.equal(fine.statusCode, 200, fine.body)
      for (const url of ['/items/%ED%A0%80', '/items/%FF']) {
        const response = await app.inject({ method: 'DELETE', url })
        assert.equal(response.statusCode, 400)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_BAD_URL')
      }
    })

    test('a body with a Content-Encoding other than identity is a 415; nothing is stored', async (t) => {
      const { app, stored } = await itemsApp(t, dialect)
      for (const encoding of ['gzip', 'br', 'deflate', 'identity, gzip', 'x-unknown']) {
        for (const [method, url, payload] of [
          ['POST', '/items', { name: 'gz' }],
          ['POST', '/items/bulk', [{ name: 'gz' }]],
          ['PUT', '/items/1', { name: 'gz' }],
          ['PATCH', '/items/1', { name: 'gz' }],
        ] as const) {
          const response = await app.inject({ method, url, payload, headers: { ...json, 'content-encoding': encoding } })
          assert.equal(response.statusCode, 415, `${encoding} ${method} ${url}`)
          assert.equal(problemOf(response).code, 'FST_VIEWSET_UNSUPPORTED_MEDIA_TYPE')
          assert.equal(response.headers['accept-encoding'], 'identity')
        }
      }
      assert.deepEqual(await stored(), unchanged)
      const identity = await app.inject({
        method: 'POST', url: '/items', payload: { name: 'plain' }, headers: { ...json, 'content-encoding': 'identity' },
      })
      assert.equal(identity.statusCode, 201)
      // No body: nothing to decode.
      const read = await app.inject({ url: '/items/1', headers: { 'content-encoding': 'gzip' } })
      assert.equal(read.statusCode, 200)
    })

    test('every method a path does not serve is a 405 with Allow, whatever its Content-Type', async (t) => {
      const { app, stored } = await itemsApp(t, dialect)
      const collection = 'GET, HEAD, POST, OPTIONS'
      const row = 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS'
      const methods = ['TRACE', 'QUERY', 'PROPFIND', 'PURGE', 'MKCOL', 'LOCK', 'REPORT', 'SEARCH', 'COPY', 'MOVE']
      const contentTypes = [undefined, 'application/json', 'text/plain', 'nonsense']
      for (const [url, allow] of [['/items', collection], ['/items/1', row], ['/items/1?x=1', row]] as const) {
        for (const method of [...methods, ...(url === '/items' ? ['PUT', 'PATCH', 'DELETE'] : ['POST'])]) {
          for (const type of contentTypes) {
            const response = await app.inject({
              method: method as 'GET', // any method: the router answers it
              url,
              ...(type === undefined ? {} : { headers: { 'content-type': type }, payload: '{"name":"x"}' }),
            })
            assert.equal(response.statusCode, 405, `${method} ${url} ${type}: ${response.body}`)
            assert.equal(response.headers.allow, allow, `${method} ${url}`)
            assert.equal(problemOf(response).code, 'FST_VIEWSET_METHOD_NOT_ALLOWED')
          }
        }
      }
      assert.deepEqual(await stored(), unchanged)
      // Not a served path: still 404, with our code.
      for (const method of ['QUERY', 'PROPFIND', 'GET']) {
        const response = await app.inject({ method: method as 'GET', url: '/items/1/deeper' })
        assert.equal(response.statusCode, 404, `${method}: ${response.body}`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_ROUTE_NOT_FOUND')
      }
    })

    test('a corpus of odd requests answers only documented codes, never FST_ERR_*', async (t) => {
      const { app, stored } = await itemsApp(t, dialect)
      const big = 'x'.repeat(8000)
      const corpus: InjectOptions[] = [
        { method: 'QUERY', url: '/items' },
        { method: 'QUERY', url: '/items/nope/nope' },
        { method: 'QUERY', url: '/items', headers: { 'content-type': 'application/json' }, payload: '{}' },
        { method: 'TRACE', url: '/items/1' },
        { method: 'POST', url: '/items', payload: 'name=x' },
        { method: 'POST', url: '/items', headers: { 'content-type': '' }, payload: '{"name":"x"}' },
        { method: 'POST', url: '/items', headers: { 'content-type': '/' }, payload: '{"name":"x"}' },
        { method: 'POST', url: '/items', headers: { 'content-type': 'application/json; charset=' }, payload: '{"name":""}' },
        { method: 'POST', url: '/items', headers: { 'content-type': 'application/json; charset=latin1' }, payload: '{}' },
        { method: 'POST', url: '/items', headers: { 'content-type': 'multipart/form-data; boundary=x' }, payload: '--x--' },
        { method: 'POST', url: '/items', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=b' },
        { method: 'POST', url: '/items', headers: json, payload: '' },
        { method: 'POST', url: '/items', headers: json, payload: '{"name":' },
        { method: 'POST', url: '/items', headers: json, payload: '{"__proto__":{"x":1},"name":"p"}' },
        { method: 'POST', url: '/items', headers: json, payload: '{"constructor":{"prototype":{}},"name":"p"}' },
        { method: 'POST', url: '/items', headers: json, payload: 'null' },
        { method: 'POST', url: '/items/bulk', headers: json, payload: '{}' },
        { method: 'PATCH', url: '/items/1', headers: { 'content-type': 'application/merge-patch+json' }, payload: '[' },
        { method: 'POST', url: '/items', headers: { 'content-type': 'application/merge-patch+json' }, payload: '{}' },
        { method: 'POST', url: '/items', headers: { ...json, 'content-encoding': 'gzip' }, payload: 'not gzip' },
        { method: 'GET', url: '/items?name=%FF' },
        { method: 'GET', url: '/items?%' },
        { method: 'GET', url: '/items/%ZZ' },
        { method: 'GET', url: `/items/${'9'.repeat(200)}` },
        { method: 'GET', url: '/items', headers: { 'x-big': big, accept: big } },
        { method: 'GET', url: '/items', headers: { accept: 'application/xml' } },
        { method: 'DELETE', url: '/items/1', headers: json, payload: '{' },
        { method: 'DELETE', url: '/items/2', headers: { 'content-type': 'text/plain' }, payload: 'x' },
        { method: 'OPTIONS', url: '/items/1', headers: json, payload: '{' },
        { method: 'HEAD', url: '/items/nope/nope' },
        { method: 'PROPFIND', url: '/items/nope/nope' },
      ]
      for (const request of corpus) {
        const response = await app.inject(request)
        const what = `${request.method} ${request.url} ${JSON.stringify(request.headers ?? {}).slice(0, 80)}`
        assert.ok(response.statusCode < 500, `${what}: ${response.statusCode} ${response.body}`)
        assert.doesNotMatch(response.body, /FST_ERR_/, what)
        if (response.statusCode >= 400 && request.method !== 'HEAD') {
          const { code } = problemOf(response)
          assert.ok(documented.has(`${code} ${response.statusCode}`), `${what}: ${code} ${response.statusCode} is documented`)
        }
      }
      assert.deepEqual(await stored(), unchanged)
    })
  })
}
