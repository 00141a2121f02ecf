import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { compileErrors, validate } from '@readme/openapi-parser'
import fastifySwagger from '@fastify/swagger'
import { createViewset, securitySchemeName, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { FastifyInstance } from 'fastify'
import { dialects, testDatabase } from '../helpers/database.js'
import fc from 'fast-check'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

for (const dialect of dialects) {
  describe(`OpenAPI on ${dialect.name}`, () => {
    test('the document validates and describes every route, with no collisions between two viewsets of one table', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(viewsetDocs, { title: 'Shop API', version: '2.0.0' })
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item, tags: ['items'] }), { prefix: '/items' })
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item, tags: ['admin'] }), { prefix: '/admin/items' })

      const response = await app.inject('/docs/json')
      assert.equal(response.statusCode, 200)
      const document = response.json()
      const result = await validate(structuredClone(document))
      assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
      assert.equal(document.openapi, '3.1.0')
      assert.deepEqual(document.info, { title: 'Shop API', version: '2.0.0' })

      assert.deepEqual(Object.keys(document.paths).sort(), ['/admin/items', '/admin/items/{id}', '/items', '/items/{id}'])
      const operations = Object.values(document.paths).flatMap((path: any) => Object.values(path)) as any[]
      assert.equal(operations.length, 12)
      const ids = operations.map((operation) => operation.operationId)
      assert.equal(new Set(ids).size, 12, `operationIds collide: ${ids.join(', ')}`)
      assert.deepEqual(document.paths['/items'].get.operationId, 'listItems')
      assert.deepEqual(document.paths['/admin/items/{id}'].patch.operationId, 'updateAdminItems')
      for (const operation of operations) {
        assert.ok(operation.summary, 'every operation has a summary')
        assert.ok(operation.tags.length === 1)
        assert.ok(operation.responses['400'], 'every operation documents 400')
        assert.ok(operation.responses['500'], 'every operation documents 500')
        assert.ok(operation.responses['400'].content['application/problem+json'].schema.$ref.endsWith('/ViewsetProblem'))
      }

      // the item schema is a named component, one per viewset
      assert.ok(document.components.schemas.Items)
      assert.ok(document.components.schemas.AdminItems)
      assert.ok(document.components.schemas.ViewsetProblem)
      assert.equal(document.components.schemas.Items.properties.id.readOnly, true)
      // An answer's whole row requires every field: each is always sent (a NULL as null). A `?fields=` row requires
      // nothing.
      assert.deepEqual(document.components.schemas.Items.required, ['id', 'name', 'description', 'price', 'in_stock'])
      assert.equal(document.components.schemas.ItemsPartial.required, undefined)
      // Issue 34: a whole row is `application/json`, a `?fields=` row has a media type of its own (listed first).
      const partial = 'application/json; profile="urn:fastify-viewsets:partial"'
      const get = document.paths['/items/{id}'].get
      assert.deepEqual(Object.keys(get.responses['200'].content), [partial, 'application/json'])
      assert.deepEqual(get.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Items' })
      assert.deepEqual(get.responses['200'].content[partial].schema, { $ref: '#/components/schemas/ItemsPartial' })
      assert.ok(get.responses['404'])
      assert.deepEqual(get.parameters.map((parameter: any) => [parameter.in, parameter.name, parameter.required]), [['query', 'fields', false], ['path', 'id', true], ['header', 'if-none-match', false]])

      const list = document.paths['/items'].get
      const limit = list.parameters.find((parameter: any) => parameter.name === 'limit')
      const offset = list.parameters.find((parameter: any) => parameter.name === 'offset')
      assert.deepEqual([limit.in, limit.schema.minimum, limit.schema.maximum, limit.schema.default], ['query', 1, 100, 20])
      assert.deepEqual([offset.schema.minimum, offset.schema.default], [0, 0])
      const page = (id: string) => ({ type: 'array', items: { $ref: `#/components/schemas/${id}` }, maxItems: 100 })
      assert.deepEqual(list.responses['200'].content['application/json'].schema, page('Items'))
      assert.deepEqual(list.responses['200'].content[partial].schema, page('ItemsPartial'))

      // The bodies are components derived from the entity, with an example.
      const post = document.paths['/items'].post
      assert.equal(post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/ItemsCreate')
      const create = document.components.schemas.ItemsCreate
      assert.ok(create.properties.name)
      assert.deepEqual(create.required, ['name'])
      assert.deepEqual(create.examples, [{ name: 'string', description: 'string', price: 1, in_stock: true }])
      assert.ok(post.responses['201'].headers.Location)
      assert.equal(post.responses['201'].content['application/json'].schema.$ref, '#/components/schemas/Items')
      assert.ok(post.responses['409'])
      assert.equal(document.paths['/items/{id}'].put.requestBody.content['application/json'].schema.$ref, '#/components/schemas/ItemsReplace')
      assert.equal(document.paths['/items/{id}'].patch.requestBody.content['application/json'].schema.$ref, '#/components/schemas/ItemsPatch')
      assert.equal(document.components.schemas.ItemsPatch.required, undefined)
      assert.ok(document.paths['/items/{id}'].delete.responses['204'])
      assert.equal(get.parameters.find((parameter: any) => parameter.name === 'id').example, 1)
      assert.ok(get.responses['414'])
      assert.equal(get.responses['503'].headers['Retry-After'].schema.type, 'integer')

      // Unprotected viewsets carry no security, and the scheme is not declared when no operation uses it.
      assert.ok(operations.every((operation) => operation.security === undefined))
      assert.equal(document.components.securitySchemes, undefined)
      assert.deepEqual(document.servers, [{ url: '/' }])

      const ui = await app.inject('/docs/')
      assert.equal(ui.statusCode, 200)
      assert.match(String(ui.headers['content-type']), /text\/html/)
    })

    test('the document says what the server does: bounds, patterns, headers and statuses (issue 34, item 8)', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(viewsetDocs, {
        tags: [{ name: 'items', description: 'What the shop sells' }],
        license: { name: 'MIT', identifier: 'MIT' },
        contact: { name: 'Shop team', email: 'api@example.com' },
      })
      await app.register(createViewset({
        db: database.db,
        table: 'items',
        schema: Item,
        tags: ['items'],
        filterFields: { id: ['in'], name: ['contains'] },
        orderingFields: ['name', 'price'],
        searchFields: ['name'],
        maxOffset: 50,
        maxLimit: 30,
      }), { prefix: '/items' })
      const document = (await app.inject('/docs/json')).json()
      assert.deepEqual(document.tags, [{ name: 'items', description: 'What the shop sells' }])
      assert.deepEqual(document.info.license, { name: 'MIT', identifier: 'MIT' })
      assert.deepEqual(document.info.contact, { name: 'Shop team', email: 'api@example.com' })

      const list = document.paths['/items'].get
      const parameter = (name: string) => list.parameters.find((p: any) => p.name === name).schema
      assert.equal(parameter('offset').maximum, 50)
      assert.equal(list.responses['200'].content['application/json'].schema.maxItems, 30)
      // The bound is documented and still answered with the message that points to cursor pagination.
      assert.equal((await app.inject('/items?offset=50')).statusCode, 200)
      const past = await app.inject('/items?offset=51')
      assert.equal(past.statusCode, 400)
      assert.match(problemOf(past).detail, /at most 50 \(maxOffset\).*cursor pagination/)

      await app.inject({ method: 'POST', url: '/items', payload: { name: 'milk', price: 2 } })
      await app.inject({ method: 'POST', url: '/items', payload: { name: 'bread', price: 3 } })
      // Schemathesis-style: every value the document's pattern allows is answered 200; values it refuses, 400.
      const patterns = ['fields', 'order_by', 'id__in', 'name__contains', 'search', 'or', 'not.and'].map((name) => {
        const { pattern } = parameter(name)
        assert.equal(typeof pattern, 'string', `${name} has a pattern`)
        return [name, new RegExp(pattern, 'u')] as const
      })
      for (const [name, pattern] of patterns) {
        // fast-check can't generate from a lookahead (order_by's "no key twice"): values of the pattern without
        // it are generated, and those the whole pattern allows are sent.
        const lookahead = /^\^\(\?!.*?\\1(?:\(\?:\\\.nulls\(\?:first\|last\)\)\?)?\(\?:,\|\$\)\)/
        const generator = new RegExp(pattern.source.replace(lookahead, '^'), 'u')
        const samples = fc
          .sample(fc.stringMatching(generator), { numRuns: 60, seed: 34 })
          .filter((value) => value !== '' && pattern.test(value))
        assert.ok(samples.length >= 10, `${name}: ${samples.length} samples`)
        for (const value of samples) {
          const response = await app.inject({ method: 'GET', url: '/items', query: { [name]: value } })
          assert.equal(response.statusCode, 200, `${name}=${JSON.stringify(value)} is documented: ${response.body}`)
        }
      }
      const refused: Array<[string, string]> = [
        ['fields', '00'], ['fields', 'id,secret'], ['order_by', 'x'], ['order_by', 'name,-name'], ['order_by', 'id'],
        ['id__in', '00'], ['id__in', '1,+2'], ['name__contains', 'a\u0000b'], ['search', '\u0000'],
      ]
      for (const [name, value] of refused) {
        const pattern = patterns.find(([known]) => known === name)?.[1]
        assert.equal(pattern?.test(value), false, `the document refuses ${name}=${JSON.stringify(value)}`)
        const response = await app.inject({ method: 'GET', url: '/items', query: { [name]: value } })
        assert.equal(response.statusCode, 400, `${name}=${JSON.stringify(value)}: ${response.body}`)
        // The LIST parser's own 400 (its message names the field or lists the allowed ones).
        const problem = problemOf(response)
        assert.ok(problem.errors?.[0]?.field === name || problem.code === 'FST_VIEWSET_UNSUPPORTED_ORDERING', response.body)
      }

      // A PostgreSQL `real` is single precision: its range is documented, and a value past it is a 400.
      const price = document.components.schemas.Items.properties.price
      const single = dialect.name === 'postgres'
      assert.equal(price.maximum, single ? 3.4028235e38 : Number.MAX_VALUE)
      const largest = await app.inject({ method: 'POST', url: '/items', payload: { name: 'gold', price: 3.4e38 } })
      assert.equal(largest.statusCode, 201, largest.body)
      if (single) {
        const over = await app.inject({ method: 'POST', url: '/items', payload: { name: 'lead', price: 1e39 } })
        assert.equal(over.statusCode, 400)
        assert.deepEqual(problemOf(over).errors?.map((error) => error.field), ['price'])
      }
      const stored = await database.db.selectFrom('items').select(['name', 'price']).orderBy('id').execute()
      assert.deepEqual(stored.map((row: any) => row.name), ['milk', 'bread', 'gold'], 'nothing else stored')
      assert.ok(Math.abs(Number(stored[2]?.price) / 3.4e38 - 1) < 1e-6)

      // Conditional headers are parameters of the operations that honour them; DELETE documents a body's errors.
      const headers = (operation: any) => operation.parameters.filter((p: any) => p.in === 'header').map((p: any) => p.name)
      const element = document.paths['/items/{id}']
      assert.deepEqual(headers(element.get), ['if-none-match'])
      for (const method of ['put', 'patch', 'delete']) assert.deepEqual(headers(element[method]), ['if-match'])
      assert.ok(element.delete.responses['413'] && element.delete.responses['415'])
      assert.match(element.put.description, /optional field the body leaves out keeps its stored value/)
      const result = await validate(structuredClone(document))
      assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
    })

    test('viewsetDocs declares the security scheme only when an operation uses it; a protected custom route counts', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      class Reports extends Viewset<any, 'items', typeof Item> {
        override customRoutes (fastify: FastifyInstance) {
          fastify.get('/report', { schema: { operationId: 'report', security: [{ [securitySchemeName]: [] }], response: { 200: { type: 'object' } } } }, async () => ({}))
        }
      }
      const documentOf = async (custom: boolean) => {
        const app = testApp(t)
        await app.register(viewsetDocs, { tokenUrl: '/auth/token' })
        const options = { db: database.db, table: 'items' as const, schema: Item }
        await app.register(custom ? new Reports(options).register() : createViewset(options), { prefix: '/items' })
        return (await app.inject('/docs/json')).json()
      }
      assert.equal((await documentOf(false)).components.securitySchemes, undefined, 'no operation uses it, tokenUrl or not')
      const document = await documentOf(true)
      assert.equal(document.components.securitySchemes[securitySchemeName].flows.password.tokenUrl, '/auth/token')
      // The custom route documents the errors the scope's problem handler answers for it.
      assert.deepEqual(Object.keys(document.paths['/items/report'].get.responses), ['200', '401', '403', '500', '503'])
    })

    test('a user-registered @fastify/swagger sees the routes as well', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(fastifySwagger, {
        openapi: { openapi: '3.1.0', info: { title: 'Mine', version: '1' } },
        refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}` },
      })
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item, name: 'Item' }), { prefix: '/api/items' })
      await app.ready()
      const document = app.swagger() as any
      assert.deepEqual(Object.keys(document.paths).sort(), ['/api/items', '/api/items/{id}'])
      assert.equal(document.paths['/api/items'].post.operationId, 'createItem')
      assert.ok(document.components.schemas.Item)
      const result = await validate(structuredClone(document))
      assert.equal(result.valid, true, result.valid ? '' : compileErrors(result))
    })
  })
}
