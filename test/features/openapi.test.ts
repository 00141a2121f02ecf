import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { compileErrors, validate } from '@readme/openapi-parser'
import fastifySwagger from '@fastify/swagger'
import { createViewset, securitySchemeName, Viewset, viewsetDocs } from 'fastify-viewsets'
import type { FastifyInstance } from 'fastify'
import { dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
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
      // An answer's row requires the key: it is always sent. A `?fields=` row requires nothing.
      assert.deepEqual(document.components.schemas.Items.required, ['id', 'name'])
      assert.equal(document.components.schemas.ItemsPartial.required, undefined)
      const rowOrPartial = { anyOf: [{ $ref: '#/components/schemas/Items' }, { $ref: '#/components/schemas/ItemsPartial' }] }
      const get = document.paths['/items/{id}'].get
      assert.deepEqual(get.responses['200'].content['application/json'].schema.anyOf, rowOrPartial.anyOf)
      assert.ok(get.responses['404'])
      assert.deepEqual(get.parameters.map((parameter: any) => [parameter.in, parameter.name, parameter.required]), [['query', 'fields', false], ['path', 'id', true]])

      const list = document.paths['/items'].get
      const limit = list.parameters.find((parameter: any) => parameter.name === 'limit')
      const offset = list.parameters.find((parameter: any) => parameter.name === 'offset')
      assert.deepEqual([limit.in, limit.schema.minimum, limit.schema.maximum, limit.schema.default], ['query', 1, 100, 20])
      assert.deepEqual([offset.schema.minimum, offset.schema.default], [0, 0])
      assert.deepEqual(list.responses['200'].content['application/json'].schema.items.anyOf, rowOrPartial.anyOf)

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
