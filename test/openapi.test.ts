import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { compileErrors, validate } from '@readme/openapi-parser'
import fastifySwagger from '@fastify/swagger'
import { createViewset, securitySchemeName, viewsetDocs } from 'fastify-viewsets'
import { dialects, testDatabase } from './helpers/database.js'
import { testApp } from './helpers/app.js'
import { createItemsTable, Item } from './helpers/items.js'

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
      const get = document.paths['/items/{id}'].get
      assert.equal(get.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/Items')
      assert.ok(get.responses['404'])
      assert.deepEqual(get.parameters.map((parameter: any) => [parameter.in, parameter.name, parameter.required]), [['query', 'fields', false], ['path', 'id', true]])

      const list = document.paths['/items'].get
      const limit = list.parameters.find((parameter: any) => parameter.name === 'limit')
      const offset = list.parameters.find((parameter: any) => parameter.name === 'offset')
      assert.deepEqual([limit.in, limit.schema.minimum, limit.schema.maximum, limit.schema.default], ['query', 1, 100, 20])
      assert.deepEqual([offset.schema.minimum, offset.schema.default], [0, 0])
      assert.equal(list.responses['200'].content['application/json'].schema.items.$ref, '#/components/schemas/Items')

      const post = document.paths['/items'].post
      assert.ok(post.requestBody.content['application/json'].schema.properties.name)
      assert.deepEqual(post.requestBody.content['application/json'].schema.required, ['name'])
      assert.ok(post.responses['201'])
      assert.ok(post.responses['409'])
      assert.equal(document.paths['/items/{id}'].patch.requestBody.content['application/json'].schema.required, undefined)
      assert.ok(document.paths['/items/{id}'].delete.responses['204'])

      // unprotected viewsets carry no security; the scheme is declared for protected ones
      assert.ok(operations.every((operation) => operation.security === undefined))
      assert.equal(document.components.securitySchemes[securitySchemeName].flows.password.tokenUrl, '/token')

      const ui = await app.inject('/docs/')
      assert.equal(ui.statusCode, 200)
      assert.match(String(ui.headers['content-type']), /text\/html/)
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
