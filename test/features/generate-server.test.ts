import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { mkdir, rm } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { after, describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'

const run = promisify(execFile)
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const output = join(root, 'test-output', `generate-server-${randomBytes(4).toString('hex')}`)
after(async () => {
  await rm(output, { recursive: true, force: true })
})

const secret = randomBytes(48).toString('base64')

/** An HS256 token signed with `key`, with the claims given. */
function token (claims: Record<string, unknown>, key = secret): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const body = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`
}

type Build = (options?: {
  db?: Kysely<any>
  env?: Record<string, string | undefined>
}) => Promise<FastifyInstance>

async function database (t: TestContext, dialect: TestDialect): Promise<{ db: Kysely<any>; url: string }> {
  if (dialect.name !== 'sqlite') return await testDatabase(t, dialect)
  await mkdir(output, { recursive: true })
  const url = `sqlite:${join(output, `server-${randomBytes(4).toString('hex')}.db`)}`
  const db = createDatabase<any>(url)
  t.after(() => db.destroy())
  return { db, url }
}

async function generated (url: string, out: string, ...extra: string[]): Promise<Build> {
  await run(process.execPath, [join(root, 'bin', 'fastify-viewsets.js'), 'generate', '--url', url, '--out', out, ...extra], {
    cwd: root,
    env: { ...process.env, FASTIFY_VIEWSETS_SOURCE: '1' },
  })
  const { build } = (await import(pathToFileURL(join(out, 'server.ts')).href)) as { build: Build }
  return build
}

async function count (db: Kysely<any>): Promise<number> {
  const row = await db.selectFrom('items').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

for (const dialect of dialects) {
  describe(`the generated server on ${dialect.name}`, () => {
    test('reads only without JWT_SECRET; writes need an HS256 token with exp when it is set', async (t) => {
      const { db, url } = await database(t, dialect)
      const id = { sqlite: 'integer primary key autoincrement', postgres: 'serial primary key', mysql: 'integer primary key auto_increment' }[dialect.name]
      await sql.raw(`create table items (id ${id}, name varchar(50) not null)`).execute(db)
      await db.insertInto('items').values({ name: 'first' }).execute()
      const build = await generated(url, join(output, dialect.name))

      const reads = await build({ db, env: {} })
      t.after(() => reads.close())
      assert.equal((await reads.inject({ method: 'GET', url: '/items' })).statusCode, 200)
      const refused = await reads.inject({ method: 'POST', url: '/items', payload: { name: 'x' } })
      // The write methods are not registered: the library answers 405 with the methods the path has.
      assert.equal(refused.statusCode, 405, refused.body)
      assert.equal(refused.headers.allow, 'GET, HEAD, OPTIONS')
      assert.equal((await reads.inject({ method: 'DELETE', url: '/items/1' })).statusCode, 405)
      assert.equal(await count(db), 1)

      const app = await build({ db, env: { JWT_SECRET: secret } })
      t.after(() => app.close())
      const exp = Math.floor(Date.now() / 1000) + 600
      const post = (authorization?: string) => app.inject({
        method: 'POST',
        url: '/items',
        payload: { name: 'second' },
        headers: authorization === undefined ? {} : { authorization },
      })
      assert.equal((await post()).statusCode, 401)
      assert.equal((await post(`Bearer ${token({ sub: 'a' })}`)).statusCode, 401, 'a token without exp')
      assert.equal((await post(`Bearer ${token({ sub: 'a', exp }, randomBytes(48).toString('base64'))}`)).statusCode, 401)
      assert.equal(await count(db), 1, 'nothing written')
      const created = await post(`Bearer ${token({ sub: 'a', exp })}`)
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json().name, 'second')
      assert.equal(await count(db), 2)
      assert.equal((await app.inject({ method: 'GET', url: '/items' })).statusCode, 200, 'reads stay open')

      await assert.rejects(build({ db, env: { JWT_SECRET: 'short' } }), /JWT_SECRET must be 32 bytes or more/)
    })

    test('--writable opens writes without JWT_SECRET, and refuses to start so in production', async (t) => {
      const { db, url } = await database(t, dialect)
      const id = { sqlite: 'integer primary key autoincrement', postgres: 'serial primary key', mysql: 'integer primary key auto_increment' }[dialect.name]
      await sql.raw(`create table items (id ${id}, name varchar(50) not null)`).execute(db)
      const out = join(output, `${dialect.name}-writable`)
      const build = await generated(url, out, '--writable')
      const app = await build({ db, env: {} })
      t.after(() => app.close())
      const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'open' } })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(await count(db), 1)
      await assert.rejects(
        build({ db, env: { NODE_ENV: 'production' } }),
        /refusing to start with NODE_ENV=production; set JWT_SECRET/
      )
      if (dialect.name !== 'sqlite') return
      // The script itself exits non-zero with the message.
      const started = await run(process.execPath, ['--conditions=source', '--import', 'tsx', join(out, 'server.ts')], {
        cwd: root,
        env: { ...process.env, NODE_ENV: 'production', JWT_SECRET: '', PORT: '0' },
      }).then(() => ({ code: 0, stderr: '' }), (error: { code?: number; stderr?: string }) => error)
      assert.equal(started.code, 1)
      assert.match(started.stderr ?? '', /cannot start: writes are open to anyone \(generated with --writable\)/)
    })
  })
}
