import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { Writable } from 'node:stream'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { validate } from '@readme/openapi-parser'
import { Ajv } from 'ajv'
import { securitySchemeName, viewsetDocs } from 'fastify-viewsets'
import { build } from '../../examples/auth/app.js'
import type { BuildOptions } from '../../examples/auth/app.js'
import { tokenLifetime } from '../../examples/auth/app.js'
import { authConfig, authDefaults, publishedSecrets } from '../../examples/auth/config.js'
import { tokenAudience, tokenIssuer } from '../../examples/auth/jwt.js'
import { loginLimits, passwordGrant } from '../../examples/auth/token.js'
import type { UserStore } from '../../examples/auth/users.js'
import { build as buildBasic } from '../../examples/basic/app.js'
import { build as buildOverride } from '../../examples/override/app.js'
import { build as buildRelations } from '../../examples/relations/app.js'
import { serverTimeouts } from '../../examples/shared.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf } from '../helpers/app.js'

// Made per run: a secret or password written in this file would be a published one.
const secret = randomBytes(48).toString('base64')
const password = randomBytes(15).toString('base64url')
const env = { JWT_SECRET: secret, DEMO_PASSWORD: password }
const form = { 'content-type': 'application/x-www-form-urlencoded' }

/** A logger that keeps its JSON lines, to read what the app logged. */
function logCapture (): { logger: { level: string; stream: Writable }; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line))
      done()
    },
  })
  return { logger: { level: 'info', stream }, lines }
}

async function exampleApp (
  t: TestContext,
  dialect: TestDialect,
  settings: Record<string, string> = env,
  options: Omit<BuildOptions, 'db' | 'env'> = {}
): Promise<{ app: FastifyInstance } & TestDatabase> {
  const database = await testDatabase(t, dialect)
  const app = await build({ db: database.db, env: settings, ...options })
  t.after(() => app.close())
  return { app, ...database }
}

/** What Swagger UI's Authorize button sends for the password flow (an empty scope included). */
function passwordForm (username: string, password: string, extra = ''): string {
  return `grant_type=password&scope=&username=${encodeURIComponent(username)}&password=${encodeURIComponent(password)}${extra}`
}

async function tokenOf (
  app: FastifyInstance,
  username: string = authDefaults.DEMO_USERNAME,
  given: string = password
): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/token',
    payload: passwordForm(username, given),
    headers: form,
  })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().access_token
}

async function login (app: FastifyInstance, username: string, given: string, remoteAddress = '127.0.0.1') {
  return await app.inject({
    method: 'POST',
    url: '/token',
    payload: passwordForm(username, given),
    headers: form,
    remoteAddress,
  })
}

const decode = (segment: string | undefined) => JSON.parse(Buffer.from(segment ?? '', 'base64url').toString())
const b64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
const now = () => Math.floor(Date.now() / 1000)

/** A token signed with the app's key, header and claims exactly as given (no library fills anything in). */
function signed (header: object, claims: object, key: string = secret): string {
  const input = `${b64url({ alg: 'HS256', typ: 'JWT', ...header })}.${b64url(claims)}`
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`
}

/** Claims the example accepts: a token with them and nothing else wrong is valid. */
const goodClaims = () => ({ sub: 'demo', iat: now(), exp: now() + 600, iss: tokenIssuer, aud: tokenAudience })

async function rows (db: TestDatabase['db']) {
  return await db.selectFrom('items').selectAll().orderBy('id').execute()
}

for (const dialect of dialects) {
  describe(`examples/auth on ${dialect.name}`, () => {
    test('POST /token answers a bearer token that every protected method accepts', async (t) => {
      const { app, db } = await exampleApp(t, dialect)
      const response = await app.inject({
        method: 'POST',
        url: '/token',
        payload: passwordForm('demo', password, '&client_id=swagger-ui'),
        headers: form,
      })
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
      assert.deepEqual(Object.keys(claims).sort(), ['aud', 'exp', 'iat', 'iss', 'sub'])
      assert.equal(claims.sub, 'demo')
      assert.equal(claims.iss, tokenIssuer)
      assert.equal(claims.aud, tokenAudience)
      assert.equal(claims.exp - claims.iat, body.expires_in)

      const authorization = `Bearer ${body.access_token}`
      const created = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Bread', owner: 'mallory' },
        headers: { authorization },
      })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json().owner, 'demo', 'the owner comes from the token, never from the body')
      const id = created.json().id
      const replaced = await app.inject({
        method: 'PUT',
        url: `/items/${id}`,
        payload: { name: 'Rye', price: 3 },
        headers: { authorization },
      })
      assert.equal(replaced.statusCode, 200, replaced.body)
      const patched = await app.inject({
        method: 'PATCH',
        url: `/items/${id}`,
        payload: { price: 4 },
        headers: { authorization },
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.deepEqual(patched.json(), { id, name: 'Rye', description: null, price: 4, owner: 'demo' })
      const deleted = await app.inject({ method: 'DELETE', url: `/items/${id}`, headers: { authorization } })
      assert.equal(deleted.statusCode, 204)
      assert.deepEqual(await rows(db), [])
    })

    test("Swagger UI's Basic client header on /token is ignored", async (t) => {
      const { app } = await exampleApp(t, dialect)
      const response = await app.inject({
        method: 'POST',
        url: '/token',
        payload: passwordForm('demo', password),
        headers: { ...form, authorization: `Basic ${btoa('undefined:undefined')}` },
      })
      assert.equal(response.statusCode, 200)
    })

    test('a wrong password or an unknown user gets 400 invalid_grant (RFC 6749 §5.2), the same answer, and a log line without the password', async (t) => {
      const { logger, lines } = logCapture()
      const { app } = await exampleApp(t, dialect, env, { fastify: { logger } })
      const answers = []
      const attempts = [
        ['demo', 'wrong'],
        ['demo', password.toUpperCase()],
        ['nobody', password],
        ['Demo', password],
      ] as const
      for (const [username, given] of attempts) {
        const response = await login(app, username, given)
        assert.equal(response.statusCode, 400, `${username}/${given}`)
        assert.equal(response.headers['cache-control'], 'no-store')
        assert.equal(response.headers['www-authenticate'], undefined)
        assert.deepEqual(response.json(), {
          error: 'invalid_grant',
          error_description: 'The username or password is wrong',
        })
        answers.push(response.body)
      }
      assert.equal(new Set(answers).size, 1, 'the body does not tell whether the user exists')
      const failed = lines.filter((line) => line.msg === 'failed login')
      assert.deepEqual(
        failed.map((line) => [line.level, line.username, line.ip]),
        attempts.map(([username]) => [40, username, '127.0.0.1'])
      )
      const logged = JSON.stringify(lines)
      for (const [, given] of attempts) assert.ok(!logged.includes(given), 'no password in the log')
    })

    test('POST /token is limited per username: past the limit even the right password gets 429 with Retry-After', async (t) => {
      const { logger, lines } = logCapture()
      const { app } = await exampleApp(t, dialect, env, { fastify: { logger } })
      const { max, timeWindow } = loginLimits.perUsername
      for (let attempt = 1; attempt <= max; attempt++) {
        // Each from its own address: the per-address limit does not come into it.
        const response = await login(app, 'demo', `wrong-${attempt}`, `10.0.0.${attempt}`)
        assert.equal(response.statusCode, 400, `attempt ${attempt}`)
      }
      for (const given of ['wrong-again', password]) {
        const response = await login(app, 'demo', given, '10.0.1.1')
        assert.equal(response.statusCode, 429, given === password ? 'the right password' : 'another wrong one')
        const retryAfter = Number(response.headers['retry-after'])
        assert.ok(
          Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= timeWindow / 1000,
          `Retry-After: ${response.headers['retry-after']}`
        )
        assert.equal(response.headers['cache-control'], 'no-store')
        assert.equal(response.json().error, 'temporarily_unavailable')
      }
      // Another user is not locked out by demo's counter.
      assert.equal((await login(app, 'someone-else', 'wrong', '10.0.1.1')).statusCode, 400)
      assert.ok(
        lines.some((line) => line.msg === 'token requests over the limit per username' && line.username === 'demo')
      )
      assert.ok(!JSON.stringify(lines).includes(password), 'no password in the log')
    })

    test('with REDIS_URL the login limits are counted in Redis, shared by every process of the app', async (t) => {
      // Two builds of the app over one database stand for two processes behind a load balancer.
      const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
      const username = `user-${randomBytes(6).toString('hex')}`
      const shared = { ...env, REDIS_URL: redisUrl, DEMO_USERNAME: username }
      const { app: first, db } = await exampleApp(t, dialect, shared)
      const second = await build({ db, env: shared })
      t.after(() => second.close())
      const { max } = loginLimits.perUsername
      for (let attempt = 1; attempt <= max; attempt++) {
        const app = attempt % 2 === 0 ? second : first
        const response = await login(app, username, `wrong-${attempt}`, `10.0.2.${attempt}`)
        assert.equal(response.statusCode, 400, `attempt ${attempt}`)
      }
      // Each process saw fewer than `max` attempts; together they are over it.
      for (const app of [first, second]) {
        const response = await login(app, username, password, '10.0.3.1')
        assert.equal(response.statusCode, 429, response.body)
        assert.equal(response.json().error, 'temporarily_unavailable')
      }
      const { Redis } = await import('ioredis')
      const redis = new Redis(redisUrl)
      t.after(() => redis.quit())
      const keys = await redis.keys(`auth-token-limit:*username:${username}`)
      assert.equal(keys.length, 1, 'one shared counter for the username')
      assert.equal(Number(await redis.get(keys[0] ?? '')), max + 2)
      await redis.del(...keys)
    })

    test('POST /token is limited per client address, whatever the usernames', async (t) => {
      const { app } = await exampleApp(t, dialect)
      const { max } = loginLimits.perAddress
      for (let attempt = 1; attempt <= max; attempt++) {
        assert.equal((await login(app, `user-${attempt}`, 'wrong', '10.0.0.9')).statusCode, 400, `attempt ${attempt}`)
      }
      const limited = await login(app, 'demo', password, '10.0.0.9')
      assert.equal(limited.statusCode, 429)
      assert.ok(Number(limited.headers['retry-after']) > 0)
      assert.equal(limited.json().error, 'temporarily_unavailable')
      // The limit holds before the body is read: a malformed request from there is refused the same way.
      assert.equal(
        (await app.inject({ method: 'POST', url: '/token', payload: 'x', remoteAddress: '10.0.0.9' })).statusCode,
        429
      )
      assert.equal((await login(app, 'demo', password, '10.0.0.10')).statusCode, 200, 'another address is not limited')
    })

    test('the right password works again once the window has passed', async (t) => {
      const { app } = await exampleApp(t, dialect, env, { loginLimits: { perUsername: { max: 2, timeWindow: 1_000 } } })
      // Each wrong password costs a scrypt run: on a busy machine the three requests can outlast the 1 s window, and
      // the third is then counted in a new one. Such a try says nothing; the next starts once the window has passed.
      let refused
      for (let tries = 1; ; tries++) {
        const started = Date.now()
        // Together: their scrypt runs share libuv's thread pool, and the try takes one run's time rather than two.
        const wrong = await Promise.all(['wrong-1', 'wrong-2'].map((given) => login(app, 'demo', given)))
        assert.deepEqual(wrong.map((response) => response.statusCode), [400, 400])
        refused = await login(app, 'demo', password)
        if (refused.statusCode === 429 || Date.now() - started < 1_000 || tries === 5) break
        await sleep(1_100)
      }
      assert.equal(refused.statusCode, 429)
      assert.equal(refused.headers['retry-after'], '1')
      await sleep(1_100)
      assert.equal((await login(app, 'demo', password)).statusCode, 200)
    })

    test('other grant types get 400 unsupported_grant_type; malformed requests 400 invalid_request', async (t) => {
      const { app, queries } = await exampleApp(t, dialect)
      queries.length = 0
      for (const grant of ['client_credentials', 'authorization_code', 'refresh_token', 'PASSWORD']) {
        const response = await app.inject({
          method: 'POST',
          url: '/token',
          payload: `grant_type=${grant}&username=demo&password=${password}`,
          headers: form,
        })
        assert.equal(response.statusCode, 400, grant)
        assert.deepEqual(response.json(), {
          error: 'unsupported_grant_type',
          error_description: 'Only grant_type=password is supported',
        })
      }
      const malformed: Array<[string, { payload?: string | object; headers?: Record<string, string> }]> = [
        ['no body', {}],
        ['no grant_type', { payload: 'username=demo&password=demo-password', headers: form }],
        ['no password', { payload: 'grant_type=password&username=demo', headers: form }],
        ['empty username', { payload: 'grant_type=password&username=&password=demo-password', headers: form }],
        [
          'a repeated parameter',
          { payload: 'grant_type=password&username=demo&username=x&password=demo-password', headers: form },
        ],
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

    test('the user comes from DEMO_USERNAME and DEMO_PASSWORD', async (t) => {
      const other = randomBytes(15).toString('base64url')
      const { app } = await exampleApp(t, dialect, { ...env, DEMO_USERNAME: 'alice', DEMO_PASSWORD: other })
      const token = await tokenOf(app, 'alice', other)
      assert.equal(decode(token.split('.')[1]).sub, 'alice')
      assert.equal((await login(app, 'demo', authDefaults.DEMO_PASSWORD)).statusCode, 400)
      assert.equal((await login(app, 'demo', other)).statusCode, 400)
    })

    test('DEMO=1 starts with the published demo user, a random key and a loud warning', async (t) => {
      const { logger, lines } = logCapture()
      const { app } = await exampleApp(t, dialect, { DEMO: '1' }, { fastify: { logger } })
      const token = await tokenOf(app, authDefaults.DEMO_USERNAME, authDefaults.DEMO_PASSWORD)
      const warning = lines.find((line) => String(line.msg).startsWith('DEMO MODE'))
      assert.ok(warning !== undefined && warning.level === 40, 'a warning at startup')
      // The key is made at startup: no published value signs a token it accepts.
      for (const key of publishedSecrets) {
        const forged = signed({}, goodClaims(), key)
        const response = await app.inject({
          method: 'POST',
          url: '/items',
          payload: { name: 'Forged' },
          headers: { authorization: `Bearer ${forged}` },
        })
        assert.equal(response.statusCode, 401, key)
      }
      const created = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Demo' },
        headers: { authorization: `Bearer ${token}` },
      })
      assert.equal(created.statusCode, 201)
    })

    test('bad tokens are rejected on every protected method; reads stay open', async (t) => {
      const { app, db } = await exampleApp(t, dialect)
      const valid = await tokenOf(app)
      const seeded = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Bread' },
        headers: { authorization: `Bearer ${valid}` },
      })
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
        ['expired', `Bearer ${signed({}, { ...goodClaims(), iat: now() - 7200, exp: now() - 3600 })}`],
        ['wrong signature', `Bearer ${header}.${payload}.${signature.split('').reverse().join('')}`],
        ['alg none', `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.`],
        [
          'HS512 with the right secret (only HS256 is allowed)',
          `Bearer ${app.jwt.sign({ sub: 'demo' }, { algorithm: 'HS512' })}`,
        ],
        ['signed by another key', `Bearer ${other.jwt.sign({ sub: 'demo' })}`],
        // Signed with the app's own key, but refused by the recommended verify options.
        ['no exp', `Bearer ${signed({}, { ...goodClaims(), exp: undefined })}`],
        ['no iat', `Bearer ${signed({}, { ...goodClaims(), iat: undefined })}`],
        [
          'iat 100 years ahead',
          `Bearer ${signed({}, { ...goodClaims(), iat: now() + 100 * 365 * 86400, exp: now() + 101 * 365 * 86400 })}`,
        ],
        ['iat a minute ahead', `Bearer ${signed({}, { ...goodClaims(), iat: now() + 60 })}`],
        [
          'older than maxAge, exp far ahead',
          `Bearer ${signed({}, { ...goodClaims(), iat: now() - tokenLifetime - 60, exp: now() + 86400 })}`,
        ],
        [
          'an unknown crit header',
          `Bearer ${signed({ crit: ['urn:example:unknown'], 'urn:example:unknown': true }, goodClaims())}`,
        ],
        ['an empty crit header', `Bearer ${signed({ crit: [] }, goodClaims())}`],
        ['another issuer', `Bearer ${signed({}, { ...goodClaims(), iss: 'https://elsewhere.example' })}`],
        ['no issuer', `Bearer ${signed({}, { ...goodClaims(), iss: undefined })}`],
        ['another audience', `Bearer ${signed({}, { ...goodClaims(), aud: 'https://elsewhere.example' })}`],
        ['no audience', `Bearer ${signed({}, { ...goodClaims(), aud: undefined })}`],
      ]
      // The control: the same hand-made signature with good claims is accepted.
      const control = await app.inject({
        method: 'PATCH',
        url: `/items/${id}`,
        payload: { price: 1 },
        headers: { authorization: `Bearer ${signed({}, goodClaims())}` },
      })
      assert.equal(control.statusCode, 200, control.body)
      const before = await rows(db)
      for (const [name, authorization] of bad) {
        for (const request of [
          { method: 'POST' as const, url: '/items', payload: { name: 'Cake' } },
          { method: 'PUT' as const, url: `/items/${id}`, payload: { name: 'Cake' } },
          { method: 'PATCH' as const, url: `/items/${id}`, payload: { price: 9 } },
          { method: 'DELETE' as const, url: `/items/${id}` },
        ]) {
          const label = `${request.method} with ${name}`
          const response = await app.inject({
            ...request,
            headers: authorization === undefined ? {} : { authorization },
          })
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
      assert.deepEqual(list.json(), [{ id, name: 'Bread', description: null, price: 1, owner: 'demo' }])
      assert.equal((await app.inject({ method: 'GET', url: `/items/${id}` })).statusCode, 200)
    })

    test("ownership: beforeWrite sets owner from the token, only the owner may change or delete, ?mine=true lists the caller's items", async (t) => {
      const { app, db } = await exampleApp(t, dialect)
      const demo = { authorization: `Bearer ${await tokenOf(app)}` }
      const bob = { authorization: `Bearer ${app.jwt.sign({ sub: 'bob' })}` }
      const create = async (headers: Record<string, string>, name: string) => {
        const response = await app.inject({
          method: 'POST',
          url: '/items',
          headers,
          payload: { name, owner: 'someone else' },
        })
        assert.equal(response.statusCode, 201, response.body)
        return response.json() as { id: number; owner: string }
      }
      const bread = await create(demo, 'Bread')
      assert.equal(bread.owner, 'demo', 'a body cannot set the owner')
      await create(bob, 'Cake')
      await create(demo, 'Rye')
      const before = await rows(db)
      for (const request of [
        { method: 'PUT' as const, payload: { name: 'Stolen' } },
        { method: 'PATCH' as const, payload: { price: 0 } },
        { method: 'DELETE' as const },
      ]) {
        const response = await app.inject({ ...request, url: `/items/${bread.id}`, headers: bob })
        assert.equal(response.statusCode, 404, `bob's ${request.method} of demo's item`)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_NOT_FOUND')
      }
      assert.deepEqual(await rows(db), before, 'nothing changed')
      // Everyone reads, with or without a token.
      assert.equal((await app.inject({ method: 'GET', url: `/items/${bread.id}`, headers: bob })).statusCode, 200)
      assert.equal((await app.inject({ method: 'GET', url: '/items?count=true' })).headers['x-total-count'], '3')
      const mine = await app.inject({ method: 'GET', url: '/items?mine=true&count=true&limit=1', headers: demo })
      assert.equal(mine.statusCode, 200)
      assert.equal(mine.headers['x-total-count'], '2')
      assert.deepEqual(
        mine.json().map((item: { name: string }) => item.name),
        ['Bread']
      )
      assert.match(String(mine.headers.link), /mine=true.*rel="next"/)
      assert.deepEqual(
        (await app.inject({ method: 'GET', url: '/items?mine=true', headers: bob }))
          .json()
          .map((item: { name: string }) => item.name),
        ['Cake']
      )
      assert.deepEqual(
        (await app.inject({ method: 'GET', url: '/items?mine=true' })).json(),
        [],
        "without a token, mine is nobody's"
      )
      assert.equal(
        (await app.inject({ method: 'GET', url: '/items?mine=true', headers: { authorization: 'Bearer nope' } }))
          .statusCode,
        401
      )
      const patched = await app.inject({
        method: 'PATCH',
        url: `/items/${bread.id}`,
        headers: demo,
        payload: { price: 4 },
      })
      assert.equal(patched.statusCode, 200)
      assert.deepEqual(patched.json(), { ...bread, price: 4 })
      assert.equal((await app.inject({ method: 'DELETE', url: `/items/${bread.id}`, headers: demo })).statusCode, 204)
    })

    test('OpenAPI: security on the four writes only, the password flow at /token', async (t) => {
      const { app } = await exampleApp(t, dialect)
      const response = await app.inject({ method: 'GET', url: '/docs/json' })
      assert.equal(response.statusCode, 200)
      const document = response.json()
      assert.deepEqual(document.components.securitySchemes[securitySchemeName], {
        type: 'oauth2',
        flows: { password: { tokenUrl: '/token', scopes: {} } },
      })
      const secured: string[] = []
      const open: string[] = []
      for (const item of Object.values(document.paths as Record<string, Record<string, any>>)) {
        for (const operation of Object.values(item)) {
          if (operation.security === undefined || operation.security.length === 2) {
            // Reads take an optional token (`?mine=true`): an invalid one is a 401, none is anonymous.
            if (operation.security !== undefined) {
              assert.deepEqual(operation.security, [{}, { [securitySchemeName]: [] }])
            }
            open.push(operation.operationId)
            continue
          }
          assert.deepEqual(operation.security, [{ [securitySchemeName]: [] }])
          assert.ok(
            operation.responses['401'] && operation.responses['403'],
            `${operation.operationId} documents 401 and 403`
          )
          secured.push(operation.operationId)
        }
      }
      assert.deepEqual(secured.sort(), ['createItems', 'deleteItems', 'replaceItems', 'updateItems'])
      assert.deepEqual(open.sort(), ['getItems', 'listItems', 'token'])
      assert.deepEqual(Object.keys(document.paths['/token'].post.requestBody.content), [
        'application/x-www-form-urlencoded',
      ])
      const result = await validate(document)
      assert.equal(result.valid, true, JSON.stringify(result))
      const ui = await app.inject({ method: 'GET', url: '/docs' })
      assert.equal(ui.statusCode, 200)
    })

    test('the migration creates the table once: a second start on the same database keeps the rows', async (t) => {
      const { app, db } = await exampleApp(t, dialect)
      await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Bread' },
        headers: { authorization: `Bearer ${await tokenOf(app)}` },
      })
      await app.close()
      const again = await build({ db, env })
      t.after(() => again.close())
      const list = await again.inject({ method: 'GET', url: '/items' })
      assert.deepEqual(
        list.json().map((item: { name: string }) => item.name),
        ['Bread']
      )
    })

    test('the example refuses to start with a missing, published, short or uniform secret, before touching the database', async (t) => {
      const database = await testDatabase(t, dialect)
      database.queries.length = 0
      const refusals: Array<[Record<string, string>, RegExp]> = [
        [
          { DEMO_PASSWORD: password },
          /^JWT_SECRET is required: generate one with `openssl rand -base64 48`, or run the public demo with DEMO=1$/,
        ],
        [{ NODE_ENV: 'production', DEMO_PASSWORD: password }, /^JWT_SECRET is required/],
        [
          { JWT_SECRET: 'development-only-secret-do-not-use-in-production', DEMO_PASSWORD: password },
          /^JWT_SECRET is a published value/,
        ],
        [
          { JWT_SECRET: 'change-me-to-a-long-random-secret-of-32-chars', DEMO_PASSWORD: password },
          /^JWT_SECRET is a published value/,
        ],
        [{ JWT_SECRET: 'short', DEMO_PASSWORD: password }, /^JWT_SECRET is too short: 5 bytes, 32 or more are needed/],
        [{ JWT_SECRET: ' '.repeat(32), DEMO_PASSWORD: password }, /^JWT_SECRET is not random enough: about 0 bits/],
        [{ JWT_SECRET: 'x'.repeat(64), DEMO_PASSWORD: password }, /^JWT_SECRET is not random enough/],
        [{ JWT_SECRET: secret }, /^DEMO_PASSWORD is required/],
        [{ JWT_SECRET: secret, DEMO_PASSWORD: 'x' }, /^DEMO_PASSWORD is too short: use 15 characters or more/],
        [{ JWT_SECRET: secret, DEMO_PASSWORD: authDefaults.DEMO_PASSWORD }, /^DEMO_PASSWORD is a published value/],
        [{ DEMO: '1', NODE_ENV: 'production' }, /^DEMO=1 is refused when NODE_ENV=production/],
        [
          { DEMO: '1', JWT_SECRET: 'change-me-to-a-long-random-secret-of-32-chars' },
          /^JWT_SECRET is a published value/,
        ],
      ]
      for (const [settings, message] of refusals) {
        await assert.rejects(build({ db: database.db, env: settings }), { message }, JSON.stringify(settings))
      }
      assert.deepEqual(database.queries, [], 'refused before the database is touched')
      const app = await build({ db: database.db, env: { NODE_ENV: 'production', ...env } })
      t.after(() => app.close())
      assert.equal(decode((await tokenOf(app)).split('.')[1]).sub, 'demo')
    })

    test('a guessable JWT_SECRET is refused at startup: a repeated word or pattern, a sequence, common words, a well-known default', async (t) => {
      const database = await testDatabase(t, dialect)
      database.queries.length = 0
      const refusals: Array<[string, RegExp]> = [
        [
          'correct-horse-battery-staple-'.repeat(2),
          /^JWT_SECRET is not random enough: about \d+ bits of entropy \(it repeats a pattern of 29 characters\), 128 or more are needed; generate one with `openssl rand -base64 48`$/,
        ],
        ['passwordpasswordpasswordpassword', /^JWT_SECRET is not random enough: .*it repeats a pattern of 8 characters/],
        ['abc'.repeat(11), /^JWT_SECRET is not random enough: .*it repeats a pattern of 3 characters/],
        ['a'.repeat(40), /^JWT_SECRET is not random enough: about 0 bits of entropy \(it repeats one character\)/],
        ['abcdefghijklmnopqrstuvwxyz0123456789', /^JWT_SECRET is not random enough: about \d+ bits of entropy, 128/],
        ['abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ', /^JWT_SECRET is not random enough: about \d+ bits/],
        ['supersecret-jwt-secret-changeme-your-256-bit-secret', /^JWT_SECRET is not random enough: .*once common words/],
        ['MySuperSecretJwtSigningKeyForProductionPlease!', /^JWT_SECRET is not random enough: .*once common words/],
        ['qwertyuiopasdfghjklzxcvbnm1234567890', /^JWT_SECRET is not random enough: .*once common words/],
        ['your-256-bit-secret', /^JWT_SECRET is a well-known default secret/],
        ['secret', /^JWT_SECRET is a well-known default secret/],
        ['ChangeMe', /^JWT_SECRET is a well-known default secret/],
        ['keyboard cat', /^JWT_SECRET is a well-known default secret/],
      ]
      for (const [JWT_SECRET, message] of refusals) {
        await assert.rejects(build({ db: database.db, env: { ...env, JWT_SECRET } }), { message }, JWT_SECRET)
      }
      assert.deepEqual(database.queries, [], 'refused before the database is touched')
    })

    test('the per-address limit counts an IPv6 /64 as one address and an IPv4-mapped address as its IPv4 address', async (t) => {
      const { logger, lines } = logCapture()
      const max = 3
      const { app } = await exampleApp(t, dialect, env, {
        fastify: { logger },
        loginLimits: { perAddress: { max, timeWindow: 60_000 } },
      })
      // Each attempt names another user: the per-username limit does not come into it.
      let user = 0
      const attempt = async (remoteAddress: string) => await login(app, `user-${++user}`, 'wrong', remoteAddress)
      // Three addresses of one /64 share its counter.
      for (const address of ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:DB8:1:2:0:0:0:3']) {
        assert.equal((await attempt(address)).statusCode, 400, address)
      }
      const limited = await login(app, 'demo', password, '2001:db8:1:2:abcd::9')
      assert.equal(limited.statusCode, 429, 'another address of the same /64, with the right password')
      assert.equal(limited.json().error, 'temporarily_unavailable')
      assert.ok(Number(limited.headers['retry-after']) > 0)
      assert.ok(
        lines.some((line) => line.msg === 'token requests over the limit per address' &&
          line.ip === '2001:db8:1:2:abcd::9' && line.key === '2001:db8:1:2::/64'),
        'the log names the address and the /64'
      )
      assert.equal((await login(app, 'demo', password, '2001:db8:1:3::1')).statusCode, 200, 'the next /64 is not limited')
      // An IPv4-mapped IPv6 address counts with its IPv4 address; IPv4 stays per address.
      assert.equal((await attempt('10.0.0.7')).statusCode, 400)
      assert.equal((await attempt('::ffff:10.0.0.7')).statusCode, 400)
      assert.equal((await attempt('::ffff:a00:7')).statusCode, 400)
      assert.equal((await login(app, 'demo', password, '10.0.0.7')).statusCode, 429, 'three attempts counted on 10.0.0.7')
      assert.equal((await login(app, 'demo', password, '10.0.0.8')).statusCode, 200, 'the next IPv4 address is not limited')
    })

    test('a token whose signature is not canonical base64url is a 401: padding, + or /, other trailing bits', async (t) => {
      const { app, db } = await exampleApp(t, dialect)
      // A signature holding both - and _, so that each can be respelled as + and /.
      let token = ''
      for (let n = 0; !/-.*_|_.*-/.test(token.split('.')[2] ?? ''); n++) token = signed({}, { ...goodClaims(), n })
      const [input, signature] = [token.slice(0, token.lastIndexOf('.')), token.split('.')[2] ?? '']
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
      // 32 bytes are 43 characters, the last carrying 2 unused bits that must be 0: setting one keeps the bytes.
      const last = alphabet.indexOf(signature.slice(-1))
      const respelled: Array<[string, string]> = [
        ['== appended', `${signature}==`],
        ['= appended', `${signature}=`],
        ['+ for -', signature.replaceAll('-', '+')],
        ['/ for _', signature.replaceAll('_', '/')],
        ['an unused trailing bit set', signature.slice(0, -1) + alphabet[last ^ 1]],
        ['a space inside', `${signature.slice(0, 10)} ${signature.slice(10)}`],
        ['a character outside the alphabet', `${signature.slice(0, 10)}!${signature.slice(10)}`],
      ]
      for (const [name, spelling] of respelled) {
        assert.deepEqual(Buffer.from(spelling, 'base64url'), Buffer.from(signature, 'base64url'), `${name}: same bytes`)
        const response = await app.inject({
          method: 'POST',
          url: '/items',
          payload: { name: 'Forged' },
          headers: { authorization: `Bearer ${input}.${spelling}` },
        })
        assert.equal(response.statusCode, 401, name)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_UNAUTHORIZED', name)
        assert.match(String(response.headers['www-authenticate']), /error="invalid_token"/, name)
      }
      assert.deepEqual(await rows(db), [], 'nothing was written')
      // The control: the canonical spelling of the same token is accepted.
      const created = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Bread' },
        headers: { authorization: `Bearer ${token}` },
      })
      assert.equal(created.statusCode, 201, created.body)
      assert.deepEqual((await rows(db)).map((row) => row.name), ['Bread'])
    })

    test("/token's schema: grant_type is the enum ['password'], username and password are required", async (t) => {
      const { app, queries } = await exampleApp(t, dialect)
      const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
      const schema = document.paths['/token'].post.requestBody.content['application/x-www-form-urlencoded'].schema
      assert.deepEqual(schema.properties.grant_type.enum, ['password'])
      assert.deepEqual([...schema.required].sort(), ['grant_type', 'password', 'username'])
      assert.equal(schema.properties.username.minLength, 1)
      assert.equal(schema.properties.password.minLength, 1)
      queries.length = 0
      const answers: Array<[string, string, string]> = [
        ['grant_type=client_credentials', `grant_type=client_credentials&username=demo&password=${password}`, 'unsupported_grant_type'],
        ['grant_type=client_credentials alone', 'grant_type=client_credentials', 'invalid_request'],
        ['no username', `grant_type=password&password=${password}`, 'invalid_request'],
        ['no password', 'grant_type=password&username=demo', 'invalid_request'],
        ['an empty password', 'grant_type=password&username=demo&password=', 'invalid_request'],
      ]
      for (const [name, payload, error] of answers) {
        const response = await app.inject({ method: 'POST', url: '/token', payload, headers: form })
        assert.equal(response.statusCode, 400, name)
        assert.equal(response.headers['cache-control'], 'no-store', name)
        assert.equal(response.json().error, error, name)
      }
      assert.deepEqual(queries, [], 'the token endpoint does not touch the database')
    })

    test('a request trickled slower than requestTimeout is cut off', async (t) => {
      const { app } = await exampleApp(t, dialect, env, { fastify: { requestTimeout: 500 } })
      const address = new URL(await app.listen({ host: '127.0.0.1', port: 0 }))
      const socket = connect(Number(address.port), address.hostname)
      t.after(() => socket.destroy())
      let answer = ''
      socket.on('data', (chunk) => {
        answer += chunk.toString()
      })
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
      // POST /token reads its body (POST /items would answer 401 before reading it).
      socket.write(
        'POST /token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ng'
      )
      // One byte every 200 ms: never idle long enough for connectionTimeout, never done within requestTimeout.
      const trickle = setInterval(() => {
        if (!socket.destroyed) socket.write(' ')
      }, 200)
      t.after(() => clearInterval(trickle))
      const started = Date.now()
      await closed
      clearInterval(trickle)
      // Node checks requestTimeout every connectionsCheckingInterval (2 s in the examples): 0.5 s + at most 2 s.
      assert.ok(Date.now() - started < 5_000, `closed after ${Date.now() - started} ms`)
      assert.match(answer, /^HTTP\/1\.1 408 /, JSON.stringify(answer))
      assert.doesNotMatch(answer, /HTTP\/1\.1 (?!408)/, 'the request never reached a handler')
    })
  })
}

describe('examples/auth settings', () => {
  test('DEMO=1 is the only way to the documented defaults, with a random key each time', () => {
    const demo = authConfig({ DEMO: '1' })
    assert.deepEqual(
      { ...demo, jwtSecret: undefined },
      { jwtSecret: undefined, demoUsername: 'demo', demoPassword: 'demo-password', demo: true }
    )
    assert.ok(Buffer.byteLength(demo.jwtSecret) >= 32)
    assert.notEqual(authConfig({ DEMO: '1' }).jwtSecret, demo.jwtSecret)
    assert.equal(authConfig({ DEMO: '1', DEMO_USERNAME: 'alice', JWT_SECRET: '' }).demoUsername, 'alice')
    assert.equal(authConfig({ DEMO: '1', JWT_SECRET: secret }).jwtSecret, secret)
    assert.throws(() => authConfig({}), { message: /^JWT_SECRET is required/ })
    assert.throws(
      () => authConfig({ DEMO: 'true', DEMO_PASSWORD: password }),
      { message: /^JWT_SECRET is required/ },
      'only DEMO=1 asks for the demo'
    )
    assert.deepEqual(authConfig(env), { jwtSecret: secret, demoUsername: 'demo', demoPassword: password, demo: false })
  })

  test('every published value is refused as JWT_SECRET, and so are secrets without entropy', () => {
    for (const published of publishedSecrets) {
      assert.throws(
        () => authConfig({ JWT_SECRET: published, DEMO_PASSWORD: password }),
        { message: /^JWT_SECRET is (a published value|too short)/ },
        published
      )
    }
    const uniform = [
      ' '.repeat(32),
      '\t'.repeat(40),
      'a'.repeat(32),
      'ab'.repeat(32),
      'passwordpasswordpasswordpassword',
      '0'.repeat(31) + '1',
      'é'.repeat(20),
    ]
    for (const value of uniform) {
      assert.throws(
        () => authConfig({ JWT_SECRET: value, DEMO_PASSWORD: password }),
        { message: /^JWT_SECRET is (not random enough|too short)/ },
        JSON.stringify(value)
      )
    }
    // What the README and .env.example recommend passes, every time.
    for (let i = 0; i < 200; i++) {
      assert.doesNotThrow(() => authConfig({ JWT_SECRET: randomBytes(48).toString('base64'), DEMO_PASSWORD: password }))
      assert.doesNotThrow(() => authConfig({ JWT_SECRET: randomBytes(32).toString('hex'), DEMO_PASSWORD: password }))
    }
  })

  test('npm run example:auth refuses to start without a secret, or with a published one', async () => {
    const run = promisify(execFile)
    for (const [JWT_SECRET, message] of [
      ['', /^cannot start: JWT_SECRET is required/],
      ['change-me-to-a-long-random-secret-of-32-chars', /^cannot start: JWT_SECRET is a published value/],
    ] as const) {
      await assert.rejects(
        run(process.execPath, ['--conditions=source', '--import', 'tsx', 'examples/auth/server.ts'], {
          cwd: new URL('../..', import.meta.url),
          // Empty values win over a local .env: dotenv never overrides what is already set.
          env: {
            ...process.env,
            DEMO: '',
            NODE_ENV: '',
            JWT_SECRET,
            DEMO_PASSWORD: password,
            DATABASE_URL: 'sqlite::memory:',
            PORT: '0',
          },
        }),
        (error: { code: number; stderr: string }) => {
          assert.equal(error.code, 1)
          assert.match(error.stderr, message)
          return true
        }
      )
    }
  })
})

describe('POST /token documents every status it answers', () => {
  /** An app with the token endpoint alone, over a user store that may fail, and its document. */
  async function tokenApp (t: TestContext, check: UserStore['check']) {
    const app = Fastify({ logger: false })
    t.after(() => app.close())
    await app.register(fastifyJwt, { secret })
    await app.register(viewsetDocs, { title: 'token', version: '1.0.0', tokenUrl: '/token' })
    await app.register(passwordGrant, {
      users: { check },
      expiresIn: 60,
      perAddress: { max: 50, timeWindow: 60_000 },
      perUsername: { max: 2, timeWindow: 60_000 },
    })
    await app.ready()
    return app
  }

  test('200, 400, 429 and 500, each answer valid against its documented schema, and no other', async (t) => {
    const app = await tokenApp(t, async (username, given) => {
      if (username === 'broken') throw new Error('the user store is down')
      return username === 'demo' && given === password ? 'demo' : undefined
    })
    const document = app.swagger() as Record<string, any>
    const operation = document.paths['/token'].post
    assert.deepEqual(Object.keys(operation.responses).sort(), ['200', '400', '429', '500'])
    assert.deepEqual(Object.keys(operation.responses['429'].headers), ['retry-after'])
    const ajv = new Ajv({ strict: false })
    const answered = new Set<number>()
    const expect = async (payload: string, status: number, headers: Record<string, string> = form) => {
      const response = await app.inject({ method: 'POST', url: '/token', payload, headers })
      assert.equal(response.statusCode, status, `${payload}: ${response.body}`)
      const documented = operation.responses[String(status)]
      assert.ok(documented !== undefined, `${status} is documented`)
      const media = Object.keys(documented.content)
      assert.deepEqual(media, ['application/json'])
      assert.match(String(response.headers['content-type']), /^application\/json/)
      const valid = ajv.validate(documented.content['application/json'].schema, response.json())
      assert.ok(valid, `${status} ${response.body}: ${JSON.stringify(ajv.errors)}`)
      answered.add(status)
      return response
    }
    await expect(passwordForm('demo', password), 200)
    await expect(passwordForm('demo', 'wrong'), 400)
    await expect(`grant_type=client_credentials&username=demo&password=${password}`, 400)
    await expect('grant_type=password&username=demo', 400)
    await expect('{"grant_type":"password"}', 400, { 'content-type': 'application/json' })
    await expect(`grant_type=password&username=demo&password=${'x'.repeat(2 * 1024 * 1024)}`, 400)
    await expect(passwordForm('demo', 'wrong'), 429)
    const failed = await expect(passwordForm('broken', password), 500)
    assert.deepEqual(failed.json(), { error: 'server_error', error_description: 'An unexpected error occurred' })
    assert.equal(failed.headers['cache-control'], 'no-store')
    assert.deepEqual([...answered].sort(), [200, 400, 429, 500])
  })
})

describe('npm run example:auth with DEMO=1', () => {
  test('starts, listens and logs the demo warning', async (t) => {
    const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'examples/auth/server.ts'], {
      cwd: new URL('../..', import.meta.url),
      env: {
        ...process.env,
        DEMO: '1',
        NODE_ENV: '',
        JWT_SECRET: '',
        DEMO_PASSWORD: '',
        DATABASE_URL: 'sqlite::memory:',
        PORT: '0',
        LOG_LEVEL: 'info',
      },
    })
    t.after(() => child.kill('SIGKILL'))
    let output = ''
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString()
        if (output.includes('Swagger UI:')) resolve()
      })
      child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)))
    })
    const warning = output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .find((line) => String(line.msg).startsWith('DEMO MODE'))
    assert.equal(warning?.level, 40, output)
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    assert.equal(await exited, 0)
  })
})

describe('every example bounds the time a request may take', () => {
  for (const dialect of dialects) {
    test(`requestTimeout and connectionTimeout on ${dialect.name}`, async (t) => {
      for (const [name, builder] of [
        ['basic', buildBasic],
        ['override', buildOverride],
        ['relations', buildRelations],
        ['auth', (options: { db: TestDatabase['db'] }) => build({ ...options, env })],
      ] as const) {
        const { db } = await testDatabase(t, dialect)
        const app = await builder({ db })
        t.after(() => app.close())
        // What the Node server was given: Fastify's defaults would be 0 for both.
        assert.equal(app.server.requestTimeout, serverTimeouts.requestTimeout, name)
        assert.equal(app.server.timeout, serverTimeouts.connectionTimeout, name)
        assert.ok(
          serverTimeouts.requestTimeout > 0 && serverTimeouts.connectionTimeout > 30_000,
          'longer than a statement may run'
        )
      }
    })
  }
})
