import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import Fastify from 'fastify'
import type { FastifyInstance, FastifyReply } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { validate } from '@readme/openapi-parser'
import {
  createViewset,
  securitySchemeName,
  Viewset,
  viewsetDocs,
  ViewsetErrors,
  viewsetMethods,
} from 'fastify-viewsets'
import type {
  AuthorizedMethod,
  CreateRequest,
  ElementRequest,
  ListRequest,
  UpdateRequest,
  ViewsetMethod,
  ViewsetOptions,
  ViewsetToken,
} from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

const secret = 'test-secret-that-is-long-enough-for-hs256'
const writes: ViewsetMethod[] = ['POST', 'PUT', 'PATCH', 'DELETE']

type AuthOptions = Pick<
  ViewsetOptions<ItemsDB, 'items', typeof Item>,
  'protectedMethods' | 'authenticate' | 'authorize' | 'methods'
>

interface AuthApp extends TestDatabase {
  app: FastifyInstance
  /** The id of the seeded row that PUT, PATCH and DELETE address. */
  id: number
}

/** A database with one item, @fastify/jwt (unless `jwt` is false) and the items viewset. */
async function authApp (
  t: TestContext,
  dialect: TestDialect,
  options: AuthOptions,
  {
    jwt = true,
    docs = false,
    viewset,
  }: { jwt?: boolean; docs?: boolean; viewset?: Viewset<ItemsDB, 'items', typeof Item> } = {}
): Promise<AuthApp> {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  await database.db.insertInto('items').values({ name: 'Bread' }).execute()
  const { id } = await database.db
    .selectFrom('items')
    .select('id')
    .where('name', '=', 'Bread')
    .executeTakeFirstOrThrow()
  const app = testApp(t)
  if (docs) await app.register(viewsetDocs)
  if (jwt) await app.register(fastifyJwt, { secret })
  const plugin =
    viewset === undefined
      ? createViewset({ db: database.db, table: 'items', schema: Item, ...options } as ViewsetOptions<
          ItemsDB,
          'items',
          typeof Item
        >)
      : viewset.register(options.methods)
  await app.register(plugin, { prefix: '/items' })
  await app.ready()
  return { app, ...database, id: Number(id) }
}

/** A request for each method, with a body that would change the row if it got through. */
function requestFor (
  method: ViewsetMethod,
  id: number
): { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; url: string; payload?: object } {
  switch (method) {
    case 'LIST':
      return { method: 'GET', url: '/items' }
    case 'GET':
      return { method: 'GET', url: `/items/${id}` }
    case 'POST':
      return { method: 'POST', url: '/items', payload: { name: 'Cake', price: 3 } }
    case 'BULK':
      return { method: 'POST', url: '/items/bulk', payload: [{ name: 'Cake', price: 3 }] }
    case 'PUT':
      return { method: 'PUT', url: `/items/${id}`, payload: { name: 'Rye', price: 2 } }
    case 'PATCH':
      return { method: 'PATCH', url: `/items/${id}`, payload: { price: 9 } }
    case 'DELETE':
      return { method: 'DELETE', url: `/items/${id}` }
    case 'AGGREGATE':
      return { method: 'GET', url: '/items/aggregate?count=true' }
    case 'PATCH_MANY':
      return { method: 'PATCH', url: '/items?name=Bread', payload: { price: 9 } }
    case 'BULK_PATCH':
      return { method: 'PATCH', url: '/items/bulk', payload: [{ id, price: 9 }] }
    case 'DELETE_MANY':
      return { method: 'DELETE', url: '/items?name=Bread' }
    // Soft delete's methods: not in viewsetMethods (these items do not soft-delete), never requested here.
    case 'RESTORE':
      return { method: 'POST', url: `/items/${id}/restore` }
    case 'PURGE':
      return { method: 'DELETE', url: `/items/${id}/purge` }
    case 'HISTORY':
      return { method: 'GET', url: `/items/${id}/history` }
  }
}

const successStatus: Record<ViewsetMethod, number> = {
  LIST: 200,
  GET: 200,
  POST: 201,
  BULK: 201,
  PUT: 200,
  PATCH: 200,
  DELETE: 204,
  AGGREGATE: 200,
  PATCH_MANY: 200,
  BULK_PATCH: 200,
  DELETE_MANY: 200,
  RESTORE: 200,
  PURGE: 204,
  HISTORY: 200,
}

async function rows (db: TestDatabase['db']) {
  return await db.selectFrom('items').selectAll().orderBy('id').execute()
}

const b64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
const now = () => Math.floor(Date.now() / 1000)

/** Flips one character of a base64url segment, so it still decodes but to other bytes. */
function flip (segment: string): string {
  const first = segment[0] === 'A' ? 'B' : 'A'
  return first + segment.slice(1)
}

/** A JWT signed by another key: a second app with its own secret. */
async function foreignToken (t: TestContext, claims: object): Promise<string> {
  const other = Fastify()
  t.after(() => other.close())
  await other.register(fastifyJwt, { secret: 'another-secret-that-nobody-here-trusts' })
  await other.ready()
  return other.jwt.sign(claims)
}

interface BadCredential {
  name: string
  authorization: string | undefined
  /** RFC 6750 error attribute in WWW-Authenticate; undefined when no bearer token was sent. */
  error: 'invalid_token' | 'invalid_request' | undefined
}

async function badCredentials (t: TestContext, app: FastifyInstance): Promise<BadCredential[]> {
  const valid = app.jwt.sign({ sub: 'alice' })
  const [header, payload, signature] = valid.split('.') as [string, string, string]
  return [
    { name: 'no Authorization header', authorization: undefined, error: undefined },
    {
      name: 'Basic scheme',
      authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}`,
      error: undefined,
    },
    { name: 'a JWT under another scheme', authorization: `Token ${valid}`, error: undefined },
    { name: 'Bearer with an empty token', authorization: 'Bearer ', error: 'invalid_request' },
    { name: 'Bearer with only spaces', authorization: 'Bearer    ', error: 'invalid_request' },
    { name: 'not a JWT', authorization: 'Bearer not-a-jwt', error: 'invalid_token' },
    { name: 'three segments of garbage', authorization: 'Bearer a.b.c', error: 'invalid_token' },
    { name: 'two tokens', authorization: `Bearer ${valid} ${valid}`, error: 'invalid_token' },
    {
      name: 'expired',
      authorization: `Bearer ${app.jwt.sign({ sub: 'alice', iat: now() - 7200, exp: now() - 3600 })}`,
      error: 'invalid_token',
    },
    {
      name: 'not yet valid',
      authorization: `Bearer ${app.jwt.sign({ sub: 'alice', nbf: now() + 3600 })}`,
      error: 'invalid_token',
    },
    {
      name: 'wrong signature',
      authorization: `Bearer ${header}.${payload}.${flip(signature)}`,
      error: 'invalid_token',
    },
    {
      name: 'claims changed after signing',
      authorization: `Bearer ${header}.${b64url({ sub: 'admin', iat: now() })}.${signature}`,
      error: 'invalid_token',
    },
    {
      name: 'alg none, no signature',
      authorization: `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ sub: 'alice', iat: now() })}.`,
      error: 'invalid_token',
    },
    {
      name: 'alg none with the real signature',
      authorization: `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.${signature}`,
      error: 'invalid_token',
    },
    {
      name: 'signed by another key',
      authorization: `Bearer ${await foreignToken(t, { sub: 'alice' })}`,
      error: 'invalid_token',
    },
  ]
}

function assertChallenge (
  response: { headers: Record<string, unknown> },
  error: BadCredential['error'],
  label: string
): void {
  const challenge = String(response.headers['www-authenticate'])
  assert.match(challenge, /^Bearer realm="api"/, `${label}: WWW-Authenticate is a Bearer challenge`)
  if (error === undefined) {
    assert.doesNotMatch(
      challenge,
      /error=/,
      `${label}: no error attribute when no bearer token was sent (RFC 6750 §3.1)`
    )
  } else {
    assert.match(challenge, new RegExp(`error="${error}"`), `${label}: error="${error}"`)
    assert.match(challenge, /error_description="[^"\\]+"/, `${label}: error_description`)
  }
}

for (const dialect of dialects) {
  describe(`auth on ${dialect.name}`, () => {
    test('a valid token is accepted on every protected method, the Bearer scheme in any case', async (t) => {
      const { app, db, id } = await authApp(t, dialect, { protectedMethods: writes })
      const token = app.jwt.sign({ sub: 'alice' })
      for (const [method, scheme] of [
        ['POST', 'Bearer'],
        ['PUT', 'bearer'],
        ['PATCH', 'BEARER'],
        ['DELETE', 'Bearer'],
      ] as const) {
        const response = await app.inject({
          ...requestFor(method, id),
          headers: { authorization: `${scheme} ${token}` },
        })
        assert.equal(response.statusCode, successStatus[method], `${method}: ${response.body}`)
        assert.equal(response.headers['www-authenticate'], undefined)
      }
      assert.deepEqual(
        (await rows(db)).map((row) => row.name),
        ['Cake']
      )
    })

    test('every bad credential is rejected on every protected method with 401 problem+json, and nothing runs', async (t) => {
      const { app, db, id, queries } = await authApp(t, dialect, { protectedMethods: writes })
      const before = await rows(db)
      queries.length = 0
      for (const credential of await badCredentials(t, app)) {
        for (const method of writes) {
          const label = `${method} with ${credential.name}`
          const headers = credential.authorization === undefined ? {} : { authorization: credential.authorization }
          const response = await app.inject({ ...requestFor(method, id), headers })
          assert.equal(response.statusCode, 401, `${label}: ${response.body}`)
          const problem = problemOf(response)
          assert.equal(problem.code, 'FST_VIEWSET_UNAUTHORIZED', label)
          assert.equal(problem.status, 401, label)
          assert.equal(problem.title, 'Unauthorized', label)
          assert.equal(problem.type, 'urn:fastify-viewsets:problem:unauthorized', label)
          assert.doesNotMatch(problem.detail, /eyJ/, `${label}: the detail does not echo the token`)
          assertChallenge(response, credential.error, label)
        }
      }
      assert.deepEqual(queries, [], 'no SQL ran for a rejected request')
      assert.deepEqual(await rows(db), before)
    })

    test('the token is checked before the body: a bad body without a token is a 401, not a 400', async (t) => {
      const { app, id } = await authApp(t, dialect, { protectedMethods: writes })
      for (const payload of ['{not json', JSON.stringify({ name: '' })]) {
        const response = await app.inject({
          method: 'PUT',
          url: `/items/${id}`,
          payload,
          headers: { 'content-type': 'application/json' },
        })
        assert.equal(response.statusCode, 401)
        assert.equal(problemOf(response).code, 'FST_VIEWSET_UNAUTHORIZED')
      }
    })

    test('open methods work without a token and ignore other schemes, but an invalid bearer token is a 401', async (t) => {
      const { app, id } = await authApp(t, dialect, { protectedMethods: writes })
      for (const headers of [
        {},
        { authorization: 'Basic abc' },
        { authorization: `Bearer ${app.jwt.sign({ sub: 'alice' })}` },
      ]) {
        const list = await app.inject({ method: 'GET', url: '/items', headers })
        assert.equal(list.statusCode, 200)
        assert.deepEqual(
          list.json().map((item: { name: string }) => item.name),
          ['Bread']
        )
        const one = await app.inject({ method: 'GET', url: `/items/${id}`, headers })
        assert.equal(one.statusCode, 200)
        assert.equal(one.json().name, 'Bread')
        assert.equal(one.headers['www-authenticate'], undefined)
      }
      // An expired token must not silently turn a "my rows" list into an anonymous one.
      const expired = app.jwt.sign({ sub: 'alice', iat: now() - 7200, exp: now() - 3600 })
      for (const [authorization, reason] of [
        ['Bearer not-a-jwt', 'The token signature or claims are not valid'],
        [`Bearer ${expired}`, 'The token has expired'],
      ]) {
        for (const url of ['/items', `/items/${id}`]) {
          const response = await app.inject({ method: 'GET', url, headers: { authorization } })
          assert.equal(response.statusCode, 401, `${url} with ${reason}`)
          assert.equal(problemOf(response).code, 'FST_VIEWSET_UNAUTHORIZED')
          assert.match(
            String(response.headers['www-authenticate']),
            new RegExp(`^Bearer realm="api", error="invalid_token", error_description="${reason}"`)
          )
        }
      }
    })

    test('protected reads are protected on HEAD too', async (t) => {
      const { app, id } = await authApp(t, dialect, { protectedMethods: ['LIST', 'GET'] })
      for (const url of ['/items', `/items/${id}`]) {
        const anonymous = await app.inject({ method: 'HEAD', url })
        assert.equal(anonymous.statusCode, 401, `HEAD ${url}`)
        assert.match(String(anonymous.headers['www-authenticate']), /^Bearer realm="api"/)
        const signed = await app.inject({
          method: 'HEAD',
          url,
          headers: { authorization: `Bearer ${app.jwt.sign({ sub: 'alice' })}` },
        })
        assert.equal(signed.statusCode, 200, `HEAD ${url} with a token`)
      }
      const write = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Cake' } })
      assert.equal(write.statusCode, 201, 'unlisted methods stay open')
    })

    test('handler overrides receive the decoded claims as token, also on open methods when one is sent, else null', async (t) => {
      const seen: Array<[string, ViewsetToken | null]> = []
      class SeeingItems extends Viewset<ItemsDB, 'items', typeof Item> {
        override async list (request: ListRequest, reply: FastifyReply, token: ViewsetToken | null) {
          seen.push(['LIST', token])
          return await super.list(request, reply, token)
        }

        override async getElement (request: ElementRequest, reply: FastifyReply, token: ViewsetToken | null) {
          seen.push(['GET', token])
          return await super.getElement(request, reply, token)
        }

        override async createElement (
          request: CreateRequest<typeof Item>,
          reply: FastifyReply,
          token: ViewsetToken | null
        ) {
          seen.push(['POST', token])
          // What an owner filter would do: write the subject of the token.
          return await this.insert({ ...this.writable(request.body), description: `by ${String(token?.sub)}` })
        }

        override async updateElement (
          request: UpdateRequest<typeof Item>,
          reply: FastifyReply,
          token: ViewsetToken | null,
          partial: boolean
        ) {
          seen.push([partial ? 'PATCH' : 'PUT', token])
          return await super.updateElement(request, reply, token, partial)
        }

        override async deleteElement (request: ElementRequest, reply: FastifyReply, token: ViewsetToken | null) {
          seen.push(['DELETE', token])
          return await super.deleteElement(request, reply, token)
        }
      }
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      const items = new SeeingItems({ db: database.db, table: 'items', schema: Item, protectedMethods: writes })
      await app.register(items.register(), { prefix: '/items' })
      const token = app.jwt.sign({ sub: 'alice', role: 'editor' })
      const authorization = `Bearer ${token}`

      const created = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Cake' },
        headers: { authorization },
      })
      assert.equal(created.statusCode, 201)
      assert.equal(created.json().description, 'by alice')
      const id = created.json().id as number
      assert.equal((await app.inject({ method: 'GET', url: '/items' })).statusCode, 200)
      assert.equal(
        (await app.inject({ method: 'GET', url: `/items/${id}`, headers: { authorization } })).statusCode,
        200
      )
      assert.equal(
        (await app.inject({ method: 'PUT', url: `/items/${id}`, payload: { name: 'Pie' }, headers: { authorization } }))
          .statusCode,
        200
      )
      assert.equal(
        (await app.inject({ method: 'PATCH', url: `/items/${id}`, payload: { price: 1 }, headers: { authorization } }))
          .statusCode,
        200
      )
      assert.equal(
        (await app.inject({ method: 'DELETE', url: `/items/${id}`, headers: { authorization } })).statusCode,
        204
      )

      assert.deepEqual(
        seen.map(([method]) => method),
        ['POST', 'LIST', 'GET', 'PUT', 'PATCH', 'DELETE']
      )
      for (const [method, claims] of seen) {
        if (method === 'LIST') {
          assert.equal(claims, null, 'LIST is open and no token was sent: token is null')
        } else {
          assert.equal(claims?.sub, 'alice', method)
          assert.equal(claims?.role, 'editor', method)
          assert.equal(typeof claims?.iat, 'number', `${method}: the decoded claims, iat included`)
        }
      }
    })

    test('authorize(token, method) returning false answers 403 and changes nothing', async (t) => {
      const calls: Array<[unknown, AuthorizedMethod]> = []
      const { app, db, id } = await authApp(t, dialect, {
        protectedMethods: writes,
        authorize: async (token, method) => {
          calls.push([token.sub, method])
          return method !== 'DELETE' || token.role === 'admin'
        },
      })
      const user = `Bearer ${app.jwt.sign({ sub: 'alice' })}`
      const admin = `Bearer ${app.jwt.sign({ sub: 'root', role: 'admin' })}`

      const denied = await app.inject({ method: 'DELETE', url: `/items/${id}`, headers: { authorization: user } })
      assert.equal(denied.statusCode, 403)
      const problem = problemOf(denied)
      assert.equal(problem.code, 'FST_VIEWSET_FORBIDDEN')
      assert.equal(problem.detail, 'The token does not allow DELETE')
      assert.equal(denied.headers['www-authenticate'], 'Bearer realm="api", error="insufficient_scope"')
      assert.equal((await rows(db)).length, 1)

      const patched = await app.inject({
        method: 'PATCH',
        url: `/items/${id}`,
        payload: { price: 4 },
        headers: { authorization: user },
      })
      assert.equal(patched.statusCode, 200)
      const deleted = await app.inject({ method: 'DELETE', url: `/items/${id}`, headers: { authorization: admin } })
      assert.equal(deleted.statusCode, 204)
      assert.deepEqual(calls, [
        ['alice', 'DELETE'],
        ['alice', 'PATCH'],
        ['root', 'DELETE'],
      ])

      const invalid = await app.inject({
        method: 'DELETE',
        url: `/items/${id}`,
        headers: { authorization: 'Bearer nope' },
      })
      assert.equal(invalid.statusCode, 401, 'authorize only sees verified tokens')
      assert.equal(calls.length, 3)
    })

    test('authenticate(request) replaces jwtVerify', async (t) => {
      const { app, db, id } = await authApp(t, dialect, {
        protectedMethods: ['POST', 'DELETE'],
        // An opaque API token that jwtVerify would reject: only the custom verifier can accept it.
        authenticate: async (request) => {
          if (request.headers.authorization === 'Bearer opaque-service-token') { return { sub: 'service', scope: 'items:write' } }
          if (request.headers.authorization === 'Bearer revoked') {
            throw new ViewsetErrors.Unauthorized('The token "revoked" was revoked\\')
          }
          if (request.headers.authorization === 'Bearer read-only') throw new ViewsetErrors.Forbidden('writes')
          if (request.headers.authorization === 'Bearer outage') throw new ViewsetErrors.Unavailable()
          // A verifier may throw anything, even null.
          // eslint-disable-next-line no-throw-literal
          if (request.headers.authorization === 'Bearer null') throw null
          throw new Error('unknown token')
        },
      })
      const created = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Cake' },
        headers: { authorization: 'Bearer opaque-service-token' },
      })
      assert.equal(created.statusCode, 201)

      const jwt = await app.inject({
        method: 'DELETE',
        url: `/items/${id}`,
        headers: { authorization: `Bearer ${app.jwt.sign({ sub: 'alice' })}` },
      })
      assert.equal(jwt.statusCode, 401, 'a JWT is not enough once authenticate replaces jwtVerify')
      assert.match(String(jwt.headers['www-authenticate']), /error="invalid_token"/)
      assert.equal(problemOf(jwt).detail, 'The token is not valid', 'the thrown message is not echoed')

      const revoked = await app.inject({
        method: 'DELETE',
        url: `/items/${id}`,
        headers: { authorization: 'Bearer revoked' },
      })
      assert.equal(revoked.statusCode, 401)
      assert.equal(problemOf(revoked).detail, 'The token "revoked" was revoked\\')
      assert.equal(
        revoked.headers['www-authenticate'],
        'Bearer realm="api", error="invalid_token", error_description="The token \'revoked\' was revoked\'"',
        'no " or \\ inside the quoted description (RFC 6750 §3)'
      )

      const readOnly = await app.inject({
        method: 'DELETE',
        url: `/items/${id}`,
        headers: { authorization: 'Bearer read-only' },
      })
      assert.equal(readOnly.statusCode, 403)
      assert.equal(problemOf(readOnly).code, 'FST_VIEWSET_FORBIDDEN')
      assert.equal(readOnly.headers['www-authenticate'], 'Bearer realm="api", error="insufficient_scope"')

      const nothing = await app.inject({
        method: 'DELETE',
        url: `/items/${id}`,
        headers: { authorization: 'Bearer null' },
      })
      assert.equal(nothing.statusCode, 401)
      assert.match(String(nothing.headers['www-authenticate']), /error="invalid_token"/)

      const outage = await app.inject({
        method: 'DELETE',
        url: `/items/${id}`,
        headers: { authorization: 'Bearer outage' },
      })
      assert.equal(outage.statusCode, 503, "a failing auth service is not the client's fault")
      assert.equal(problemOf(outage).code, 'FST_VIEWSET_UNAVAILABLE')

      const missing = await app.inject({ method: 'DELETE', url: `/items/${id}` })
      assert.equal(missing.statusCode, 401, 'the Bearer header is still required')
      assert.equal((await rows(db)).length, 2)
    })

    test('authenticate works without @fastify/jwt, and its claims reach authorize', async (t) => {
      const { app } = await authApp(
        t,
        dialect,
        {
          protectedMethods: ['POST'],
          authenticate: (request) => ({
            sub: 'service',
            scope: request.headers.authorization === 'Bearer rw' ? 'items:write' : 'items:read',
          }),
          authorize: (token) => token.scope === 'items:write',
        },
        { jwt: false }
      )
      const ok = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Cake' },
        headers: { authorization: 'Bearer rw' },
      })
      assert.equal(ok.statusCode, 201)
      const readOnly = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Pie' },
        headers: { authorization: 'Bearer ro' },
      })
      assert.equal(readOnly.statusCode, 403)
      assert.equal(problemOf(readOnly).code, 'FST_VIEWSET_FORBIDDEN')
    })

    test('authenticate returning something other than claims is a 401', async (t) => {
      const { app } = await authApp(
        t,
        dialect,
        { protectedMethods: ['POST'], authenticate: () => null as never },
        { jwt: false }
      )
      const response = await app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'Cake' },
        headers: { authorization: 'Bearer x' },
      })
      assert.equal(response.statusCode, 401)
      assert.match(String(response.headers['www-authenticate']), /error="invalid_token"/)
    })

    test('startup fails when protectedMethods names a method that is not registered', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      app.register(
        createViewset({
          db: database.db,
          table: 'items',
          schema: Item,
          methods: ['LIST', 'GET'],
          protectedMethods: ['GET', 'DELETE', 'PUT'],
        }),
        { prefix: '/items' }
      )
      await assert.rejects(
        async () => {
          await app.ready()
        },
        (error: { code: string; message: string }) => {
          assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
          assert.equal(
            error.message,
            'Invalid viewset option protectedMethods: PUT, DELETE are not registered (registered: LIST, GET)'
          )
          return true
        }
      )
    })

    test('startup fails when register(methods) leaves out a protected method', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      const items = new Viewset({ db: database.db, table: 'items', schema: Item, protectedMethods: ['DELETE'] })
      app.register(items.register(['LIST', 'GET']), { prefix: '/items' })
      await assert.rejects(
        async () => {
          await app.ready()
        },
        { code: 'FST_VIEWSET_INVALID_OPTION', message: /protectedMethods: DELETE is not registered/ }
      )
    })

    test('startup fails when protectedMethods is set with neither @fastify/jwt nor authenticate', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      app.register(createViewset({ db: database.db, table: 'items', schema: Item, protectedMethods: ['POST'] }), {
        prefix: '/items',
      })
      await assert.rejects(
        async () => {
          await app.ready()
        },
        {
          code: 'FST_VIEWSET_INVALID_OPTION',
          message:
            'Invalid viewset option protectedMethods: register @fastify/jwt before the viewset, or pass an authenticate(request) function',
        }
      )
    })

    test('startup fails when authorize is given but nothing is protected; authenticate alone serves open methods', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const refused = testApp(t)
      await refused.register(fastifyJwt, { secret })
      refused.register(createViewset({ db: database.db, table: 'items', schema: Item, authorize: () => true }), {
        prefix: '/items',
      })
      await assert.rejects(
        async () => {
          await refused.ready()
        },
        {
          code: 'FST_VIEWSET_INVALID_OPTION',
          message:
            'Invalid viewset option authorize: no method is protected: list them in protectedMethods, or protect a custom route with config: { protected: true }',
        }
      )
      const app = testApp(t)
      const seen: unknown[] = []
      class Seeing extends Viewset<ItemsDB, 'items', typeof Item> {
        override async list (request: ListRequest, reply: FastifyReply, token: ViewsetToken | null) {
          seen.push(token)
          return await super.list(request, reply, token)
        }
      }
      const authenticate = (request: { headers: { authorization?: string | undefined } }) => {
        if (request.headers.authorization !== 'Bearer good') throw new Error('bad token')
        return { sub: 'alice' }
      }
      await app.register(new Seeing({ db: database.db, table: 'items', schema: Item, authenticate }).register(), {
        prefix: '/items',
      })
      assert.equal((await app.inject({ method: 'GET', url: '/items' })).statusCode, 200)
      assert.equal(
        (await app.inject({ method: 'GET', url: '/items', headers: { authorization: 'Bearer good' } })).statusCode,
        200
      )
      const bad = await app.inject({ method: 'GET', url: '/items', headers: { authorization: 'Bearer bad' } })
      assert.equal(bad.statusCode, 401)
      assert.equal(problemOf(bad).code, 'FST_VIEWSET_UNAUTHORIZED')
      assert.deepEqual(seen, [null, { sub: 'alice' }])
    })

    test('protectedMethods, authenticate and authorize are checked when the viewset is created', async (t) => {
      const database = await testDatabase(t, dialect)
      const base = { db: database.db, table: 'items', schema: Item }
      assert.throws(() => createViewset({ ...base, protectedMethods: ['FETCH'] as never }), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /protectedMethods: unknown method "FETCH"/,
      })
      assert.throws(() => createViewset({ ...base, protectedMethods: 'POST' as never }), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /protectedMethods: expected an array/,
      })
      assert.throws(() => createViewset({ ...base, authenticate: 'jwt' as never }), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /authenticate: expected a function/,
      })
      assert.throws(() => createViewset({ ...base, authorize: true as never }), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /authorize: expected a function/,
      })
    })

    test('OpenAPI: security on exactly the protected operations, the password flow, 401 and 403; open ones take an optional token (401 only)', async (t) => {
      const { app } = await authApp(t, dialect, { protectedMethods: ['GET', 'POST', 'DELETE'] }, { docs: true })
      const document = app.swagger() as any
      assert.deepEqual(document.components.securitySchemes, {
        [securitySchemeName]: { type: 'oauth2', flows: { password: { tokenUrl: '/token', scopes: {} } } },
      })
      assert.equal(document.security, undefined, 'no global security')
      const protectedIds = new Set(['getItems', 'createItems', 'deleteItems'])
      const operations: string[] = []
      for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
        for (const [verb, operation] of Object.entries(item)) {
          const label = `${verb.toUpperCase()} ${path} (${String(operation.operationId)})`
          operations.push(operation.operationId)
          if (protectedIds.has(operation.operationId)) {
            assert.deepEqual(operation.security, [{ [securitySchemeName]: [] }], label)
            assert.deepEqual(Object.keys(operation.responses['401'].content), ['application/problem+json'], label)
            assert.equal(operation.responses['401'].description, 'Missing or invalid bearer token', label)
            assert.ok(operation.responses['403'], `${label} documents 403`)
          } else {
            // @fastify/jwt is registered: a token is verified when one is sent, so an invalid one is a 401.
            assert.deepEqual(operation.security, [{}, { [securitySchemeName]: [] }], label)
            assert.ok(operation.responses['401'], `${label} documents 401`)
            assert.equal(operation.responses['403'], undefined, label)
          }
        }
      }
      assert.deepEqual(operations.sort(), [
        'createItems',
        'deleteItems',
        'getItems',
        'listItems',
        'replaceItems',
        'updateItems',
      ])
      const result = await validate(structuredClone(document))
      assert.equal(result.valid, true, JSON.stringify(result))
    })

    test('OpenAPI: viewsetDocs({ tokenUrl }) sets the password flow token URL; Swagger UI is served', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      const app = testApp(t)
      await app.register(viewsetDocs, { tokenUrl: '/auth/token', routePrefix: '/api-docs' })
      await app.register(fastifyJwt, { secret })
      await app.register(
        createViewset({
          db: database.db,
          table: 'items',
          schema: Item,
          methods: viewsetMethods,
          protectedMethods: viewsetMethods,
          // HISTORY too: its route is documented as protected like every other.
          history: { createTable: true },
        }),
        { prefix: '/items' }
      )
      const response = await app.inject({ method: 'GET', url: '/api-docs/json' })
      assert.equal(response.statusCode, 200)
      const document = response.json()
      assert.equal(document.components.securitySchemes[securitySchemeName].flows.password.tokenUrl, '/auth/token')
      for (const item of Object.values(document.paths as Record<string, Record<string, any>>)) {
        for (const operation of Object.values(item)) {
          assert.deepEqual(operation.security, [{ [securitySchemeName]: [] }])
        }
      }
      const ui = await app.inject({ method: 'GET', url: '/api-docs' })
      assert.equal(ui.statusCode, 200)
      assert.match(ui.body, /swagger-ui/)
    })
  })
}
