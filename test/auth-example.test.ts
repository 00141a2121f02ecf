import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { promisify } from 'node:util'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { validate } from '@readme/openapi-parser'
import { securitySchemeName } from 'fastify-viewsets'
import { build, tokenLifetime } from '../examples/auth/app.js'
import { authConfig, authDefaults } from '../examples/auth/config.js'
import { dialects, testDatabase } from './helpers/database.js'
import type { TestDatabase, TestDialect } from './helpers/database.js'
import { problemOf } from './helpers/app.js'

const env = { JWT_SECRET: 'example-test-secret-of-at-least-32-chars' }
const form = { 'content-type': 'application/x-www-form-urlencoded' }

async function exampleApp (t: TestContext, dialect: TestDialect, settings: Record<string, string> = env): Promise<{ app: FastifyInstance } & TestDatabase> {
  const database = await testDatabase(t, dialect)
  const app = await build({ db: database.db, env: settings })
  t.after(() => app.close())
  return { app, ...database }
}

/** What Swagger UI's Authorize button sends for the password flow (an empty scope included). */
function passwordForm (username: string, password: string, extra = ''): string {
  return `grant_type=password&scope=&username=${encodeURIComponent(username)}&password=${encodeURIComponent(password)}${extra}`
}

async function tokenOf (app: FastifyInstance, username: string = authDefaults.DEMO_USERNAME, password: string = authDefaults.DEMO_PASSWORD): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/token', payload: passwordForm(username, password), headers: form })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().access_token
}

const decode = (segment: string | undefined) => JSON.parse(Buffer.from(segment ?? '', 'base64url').toString())
const b64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
const now = () => Math.floor(Date.now() / 1000)

async function rows (db: TestDatabase['db']) {
  return await db.selectFrom('items').selectAll().orderBy('id').execute()
}

for (const dialect of dialects) {
  describe(`examples/auth on ${dialect.name}`, () => {
    test('POST /token answers a bearer token that every protected method accepts', async (t) => {
      const { app, db } = await exampleApp(t, dialect)
      const response = await app.inject({ method: 'POST', url: '/token', payload: passwordForm('demo', 'demo-password', '&client_id=swagger-ui'), headers: form })
      assert.equal(response.statusCode, 200, response.body)
      assert.match(String(response.headers['content-type']), /^application\/json/)
      assert.equal(response.headers['cache-control'], 'no-store', 'RFC 6749 §5.1')
      assert.equal(response.headers.pragma, 'no-cache')
      const body = response.json()
      assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'token_type'])
      assert.equal(body.token_type, 'bearer')
      assert.equal(body.expires_in, tokenLifetime)
      const [header, payload] = body.access_token.split('.')
      assert.deepEqual(decode(header), { alg: 'HS256', typ: 'JWT' })
      const claims = decode(payload)
      assert.equal(claims.sub, 'demo')
      assert.equal(claims.exp - claims.iat, body.expires_in)

      const authorization = `Bearer ${body.access_token}`
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread', owner: 'mallory' }, headers: { authorization } })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json().owner, 'demo', 'the owner comes from the token, never from the body')
      const id = created.json().id
      const replaced = await app.inject({ method: 'PUT', url: `/items/${id}`, payload: { name: 'Rye', price: 3 }, headers: { authorization } })
      assert.equal(replaced.statusCode, 200, replaced.body)
      const patched = await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { price: 4 }, headers: { authorization } })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.deepEqual(patched.json(), { id, name: 'Rye', description: null, price: 4, owner: 'demo' })
      const deleted = await app.inject({ method: 'DELETE', url: `/items/${id}`, headers: { authorization } })
      assert.equal(deleted.statusCode, 204)
      assert.deepEqual(await rows(db), [])
    })

    test('Swagger UI\'s Basic client header on /token is ignored', async (t) => {
      const { app } = await exampleApp(t, dialect)
      const response = await app.inject({ method: 'POST', url: '/token', payload: passwordForm('demo', 'demo-password'), headers: { ...form, authorization: `Basic ${btoa('undefined:undefined')}` } })
      assert.equal(response.statusCode, 200)
    })

    test('a wrong password or an unknown user gets 401 invalid_grant, the same answer', async (t) => {
      const { app } = await exampleApp(t, dialect)
      const answers = []
      for (const [username, password] of [['demo', 'wrong'], ['demo', 'DEMO-PASSWORD'], ['nobody', 'demo-password'], ['Demo', 'demo-password']] as const) {
        const response = await app.inject({ method: 'POST', url: '/token', payload: passwordForm(username, password), headers: form })
        assert.equal(response.statusCode, 401, `${username}/${password}`)
        assert.equal(response.headers['cache-control'], 'no-store')
        assert.equal(response.json().error, 'invalid_grant')
        answers.push(response.body)
      }
      assert.equal(new Set(answers).size, 1, 'the body does not tell whether the user exists')
    })

    test('other grant types get 400 unsupported_grant_type; malformed requests 400 invalid_request', async (t) => {
      const { app, queries } = await exampleApp(t, dialect)
      queries.length = 0
      for (const grant of ['client_credentials', 'authorization_code', 'refresh_token', 'PASSWORD']) {
        const response = await app.inject({ method: 'POST', url: '/token', payload: `grant_type=${grant}&username=demo&password=demo-password`, headers: form })
        assert.equal(response.statusCode, 400, grant)
        assert.deepEqual(response.json(), { error: 'unsupported_grant_type', error_description: 'Only grant_type=password is supported' })
      }
      const malformed: Array<[string, { payload?: string | object, headers?: Record<string, string> }]> = [
        ['no body', {}],
        ['no grant_type', { payload: 'username=demo&password=demo-password', headers: form }],
        ['no password', { payload: 'grant_type=password&username=demo', headers: form }],
        ['empty username', { payload: 'grant_type=password&username=&password=demo-password', headers: form }],
        ['a repeated parameter', { payload: 'grant_type=password&username=demo&username=x&password=demo-password', headers: form }],
        ['a JSON body', { payload: { grant_type: 'password', username: 'demo', password: 'demo-password' } }],
      ]
      for (const [name, request] of malformed) {
        const response = await app.inject({ method: 'POST', url: '/token', ...request })
        assert.equal(response.statusCode, 400, `${name}: ${response.body}`)
        assert.equal(response.json().error, 'invalid_request', name)
        assert.equal(response.headers['cache-control'], 'no-store', name)
      }
      assert.deepEqual(queries, [], 'the token endpoint does not touch the database')
    })

    test('the demo user comes from DEMO_USERNAME and DEMO_PASSWORD', async (t) => {
      const { app } = await exampleApp(t, dialect, { ...env, DEMO_USERNAME: 'alice', DEMO_PASSWORD: 'through the looking glass' })
      const token = await tokenOf(app, 'alice', 'through the looking glass')
      assert.equal(decode(token.split('.')[1]).sub, 'alice')
      const defaults = await app.inject({ method: 'POST', url: '/token', payload: passwordForm('demo', 'demo-password'), headers: form })
      assert.equal(defaults.statusCode, 401)
    })

    test('bad tokens are rejected on every protected method; reads stay open', async (t) => {
      const { app, db } = await exampleApp(t, dialect)
      const valid = await tokenOf(app)
      const seeded = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread' }, headers: { authorization: `Bearer ${valid}` } })
      const id = seeded.json().id
      const other = Fastify()
      t.after(() => other.close())
      await other.register(fastifyJwt, { secret: 'a-different-secret-of-at-least-32-chars' })
      const [header, payload, signature] = valid.split('.') as [string, string, string]
      const bad: Array<[string, string | undefined]> = [
        ['no header', undefined],
        ['Basic', `Basic ${btoa('demo:demo-password')}`],
        ['empty Bearer', 'Bearer '],
        ['not a JWT', 'Bearer demo-password'],
        ['expired', `Bearer ${app.jwt.sign({ sub: 'demo', iat: now() - 7200, exp: now() - 3600 })}`],
        ['wrong signature', `Bearer ${header}.${payload}.${signature.split('').reverse().join('')}`],
        ['alg none', `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.`],
        ['HS512 with the right secret (only HS256 is allowed)', `Bearer ${app.jwt.sign({ sub: 'demo' }, { algorithm: 'HS512' })}`],
        ['signed by another key', `Bearer ${other.jwt.sign({ sub: 'demo' })}`],
      ]
      const before = await rows(db)
      for (const [name, authorization] of bad) {
        for (const request of [
          { method: 'POST' as const, url: '/items', payload: { name: 'Cake' } },
          { method: 'PUT' as const, url: `/items/${id}`, payload: { name: 'Cake' } },
          { method: 'PATCH' as const, url: `/items/${id}`, payload: { price: 9 } },
          { method: 'DELETE' as const, url: `/items/${id}` },
        ]) {
          const label = `${request.method} with ${name}`
          const response = await app.inject({ ...request, headers: authorization === undefined ? {} : { authorization } })
          assert.equal(response.statusCode, 401, label)
          assert.equal(problemOf(response).code, 'FST_VIEWSET_UNAUTHORIZED', label)
          const challenge = String(response.headers['www-authenticate'])
          assert.match(challenge, /^Bearer realm="api"/, label)
          if (name === 'empty Bearer') assert.match(challenge, /error="invalid_request"/, label)
          else if (name !== 'no header' && name !== 'Basic') assert.match(challenge, /error="invalid_token"/, label)
        }
      }
      assert.deepEqual(await rows(db), before)
      const list = await app.inject({ method: 'GET', url: '/items' })
      assert.equal(list.statusCode, 200)
      assert.deepEqual(list.json(), [{ id, name: 'Bread', description: null, price: 0, owner: 'demo' }])
      assert.equal((await app.inject({ method: 'GET', url: `/items/${id}` })).statusCode, 200)
    })

    test('OpenAPI: security on the four writes only, the password flow at /token', async (t) => {
      const { app } = await exampleApp(t, dialect)
      const response = await app.inject({ method: 'GET', url: '/docs/json' })
      assert.equal(response.statusCode, 200)
      const document = response.json()
      assert.deepEqual(document.components.securitySchemes[securitySchemeName], { type: 'oauth2', flows: { password: { tokenUrl: '/token', scopes: {} } } })
      const secured: string[] = []
      const open: string[] = []
      for (const item of Object.values(document.paths as Record<string, Record<string, any>>)) {
        for (const operation of Object.values(item)) {
          if (operation.security === undefined) {
            open.push(operation.operationId)
            continue
          }
          assert.deepEqual(operation.security, [{ [securitySchemeName]: [] }])
          assert.ok(operation.responses['401'] && operation.responses['403'], `${operation.operationId} documents 401 and 403`)
          secured.push(operation.operationId)
        }
      }
      assert.deepEqual(secured.sort(), ['createItems', 'deleteItems', 'replaceItems', 'updateItems'])
      assert.deepEqual(open.sort(), ['getItems', 'listItems', 'token'])
      assert.deepEqual(Object.keys(document.paths['/token'].post.requestBody.content), ['application/x-www-form-urlencoded'])
      const result = await validate(document)
      assert.equal(result.valid, true, JSON.stringify(result))
      const ui = await app.inject({ method: 'GET', url: '/docs' })
      assert.equal(ui.statusCode, 200)
    })

    test('the migration creates the table once: a second start on the same database keeps the rows', async (t) => {
      const { app, db } = await exampleApp(t, dialect)
      await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread' }, headers: { authorization: `Bearer ${await tokenOf(app)}` } })
      await app.close()
      const again = await build({ db, env })
      t.after(() => again.close())
      const list = await again.inject({ method: 'GET', url: '/items' })
      assert.deepEqual(list.json().map((item: { name: string }) => item.name), ['Bread'])
    })

    test('production refuses to start without JWT_SECRET, before touching the database', async (t) => {
      const database = await testDatabase(t, dialect)
      database.queries.length = 0
      await assert.rejects(build({ db: database.db, env: { NODE_ENV: 'production', DEMO_PASSWORD: 'a-real-password' } }), {
        message: 'JWT_SECRET is required when NODE_ENV=production: set it to a random string of 32 characters or more (openssl rand -base64 48)',
      })
      await assert.rejects(build({ db: database.db, env: { NODE_ENV: 'production', JWT_SECRET: 'short', DEMO_PASSWORD: 'a-real-password' } }), { message: /JWT_SECRET is too short for production/ })
      await assert.rejects(build({ db: database.db, env: { NODE_ENV: 'production', JWT_SECRET: env.JWT_SECRET } }), { message: /DEMO_PASSWORD is required when NODE_ENV=production/ })
      assert.deepEqual(database.queries, [])
      const app = await build({ db: database.db, env: { NODE_ENV: 'production', JWT_SECRET: env.JWT_SECRET, DEMO_PASSWORD: 'a-real-password' } })
      t.after(() => app.close())
      assert.equal(decode((await tokenOf(app, 'demo', 'a-real-password')).split('.')[1]).sub, 'demo')
    })
  })
}

describe('examples/auth settings', () => {
  test('outside production, every setting has its documented default', () => {
    assert.deepEqual(authConfig({}), { jwtSecret: authDefaults.JWT_SECRET, demoUsername: 'demo', demoPassword: 'demo-password' })
    assert.deepEqual(authConfig({ NODE_ENV: 'development', JWT_SECRET: '', DEMO_USERNAME: 'alice' }).demoUsername, 'alice')
  })

  test('npm run example:auth exits with a clear message when JWT_SECRET is missing in production', async () => {
    const run = promisify(execFile)
    await assert.rejects(
      run(process.execPath, ['--conditions=source', '--import', 'tsx', 'examples/auth/server.ts'], {
        cwd: new URL('..', import.meta.url),
        // Empty values win over a local .env: dotenv never overrides what is already set.
        env: { ...process.env, NODE_ENV: 'production', JWT_SECRET: '', DEMO_PASSWORD: '', DATABASE_URL: 'sqlite::memory:', PORT: '0' },
      }),
      (error: { code: number, stderr: string }) => {
        assert.equal(error.code, 1)
        assert.match(error.stderr, /^cannot start: JWT_SECRET is required when NODE_ENV=production/)
        return true
      },
    )
  })
})
