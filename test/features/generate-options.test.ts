import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rm } from 'node:fs/promises'
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

// Issue 42 item 4 and issue 36 item 8: what generate leaves out of real schemas (secrets, unservable keys, duplicate
// foreign keys, substring matches and counts on large tables) and its --help.
const run = promisify(execFile)
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const output = join(root, 'test-output', `generate-options-${randomBytes(4).toString('hex')}`)
after(async () => {
  await rm(output, { recursive: true, force: true })
})

async function command (...args: string[]) {
  return await run(process.execPath, [join(root, 'bin', 'fastify-viewsets.js'), ...args], {
    cwd: root,
    env: { ...process.env, FASTIFY_VIEWSETS_SOURCE: '1' },
  })
}

async function database (t: TestContext, dialect: TestDialect): Promise<{ db: Kysely<any>; url: string }> {
  if (dialect.name !== 'sqlite') return await testDatabase(t, dialect)
  await mkdir(output, { recursive: true })
  const url = `sqlite:${join(output, `${randomBytes(4).toString('hex')}.db`)}`
  const db = createDatabase<any>(url)
  t.after(() => db.destroy())
  return { db, url }
}

function schemaSql (dialect: TestDialect['name']): string[] {
  const id = {
    sqlite: 'integer primary key autoincrement',
    postgres: 'serial primary key',
    mysql: 'integer primary key auto_increment',
  }[dialect]
  const binary = { sqlite: 'blob', postgres: 'bytea', mysql: 'varbinary(16)' }[dialect]
  // The same foreign key declared twice, as tt-rss's MariaDB schema does.
  const twice = dialect === 'sqlite'
    ? 'event_id integer not null references events (id), foreign key (event_id) references events (id)'
    : 'event_id integer not null, foreign key (event_id) references events (id), ' +
      'foreign key (event_id) references events (id)'
  return [
    `create table accounts (id ${id}, login varchar(50) not null unique, password_hash varchar(100) not null,
      reset_token varchar(100), API_Secret varchar(100))`,
    `create table events (id ${id}, title varchar(100) not null, note text)`,
    'create index events_title on events (title)',
    `create table notes (id ${id}, body varchar(100) not null)`,
    `create table comments (id ${id}, body varchar(100) not null, ${twice})`,
    `create table blobs (k ${binary} not null primary key, v varchar(20))`,
  ]
}

type Build = (options?: { db?: Kysely<any>; env?: Record<string, string | undefined> }) => Promise<FastifyInstance>

async function start (t: TestContext, out: string, db: Kysely<any>): Promise<FastifyInstance> {
  const { build } = (await import(pathToFileURL(join(out, 'server.ts')).href)) as { build: Build }
  const app = await build({ db, env: {} })
  t.after(() => app.close())
  return app
}

async function rows (db: Kysely<any>, table: string): Promise<number> {
  const row = await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

test('generate --help and -h print the usage and exit 0', async () => {
  for (const flag of ['--help', '-h']) {
    const { stdout } = await command('generate', flag)
    assert.match(stdout, /^Usage: fastify-viewsets generate /)
    assert.match(stdout, /--include-secrets/)
    assert.match(stdout, /--check/)
  }
  assert.match((await command('--help')).stdout, /^Usage: /)
})

for (const dialect of dialects) {
  describe(`generate's choices on ${dialect.name}`, () => {
    test('secrets, binary keys, duplicate foreign keys and large tables', async (t) => {
      const { db, url } = await database(t, dialect)
      for (const statement of schemaSql(dialect.name)) await sql.raw(statement).execute(db)
      await db.insertInto('accounts').values({ login: 'ann', password_hash: 'x1', reset_token: 't1' }).execute()
      for (let batch = 0; batch < 11; batch++) {
        const values = Array.from({ length: batch === 10 ? 1 : 1000 }, (_, index) => ({ title: `e${batch}-${index}` }))
        await db.insertInto('events').values(values).execute()
      }
      await db.insertInto('notes').values({ body: 'hello' }).execute()
      await db.insertInto('comments').values({ body: 'first', event_id: 1 }).execute()

      const out = join(output, dialect.name)
      const { stdout } = await command('generate', '--url', url, '--out', out, '--writable')
      assert.match(stdout, /served: accounts, comments, events, notes\n/)
      assert.match(stdout, /skipped blobs: its primary key k is binary \(.+\), which JSON cannot carry/)
      assert.match(stdout, /over 10,000 rows, so no search, no contains and no exact count .*: events\n/)
      const schemas = await readFile(join(out, 'schemas.ts'), 'utf8')
      const viewsets = await readFile(join(out, 'viewsets.ts'), 'utf8')
      assert.match(schemas, /Left out as secret-looking [^]*?: 'password_hash', 'reset_token', 'API_Secret'/i)
      assert.doesNotMatch(schemas, /^\s+(?:password_hash|reset_token|API_Secret):/im)
      assert.match(viewsets, /No POST: 'password_hash' \(NOT NULL, no default\)/)
      assert.equal(viewsets.match(/event: \{ table: 'events', foreignKey: 'event_id' \}/g)?.length, 1, 'merged')
      assert.equal(viewsets.match(/comments: \{ table: 'comments', foreignKey: 'event_id' \}/g)?.length, 1)

      const app = await start(t, out, db)
      // Secrets: never in a body, never a filter, and no POST that could not set them.
      const account = await app.inject({ method: 'GET', url: '/accounts/1' })
      assert.equal(account.statusCode, 200, account.body)
      assert.deepEqual(account.json(), { id: 1, login: 'ann' })
      const probe = await app.inject({ method: 'GET', url: '/accounts?password_hash__contains=x' })
      assert.equal(probe.statusCode, 400, probe.body)
      assert.equal(probe.headers['content-type'], 'application/problem+json; charset=utf-8')
      const posted = await app.inject({ method: 'POST', url: '/accounts', payload: { login: 'bob' } })
      assert.equal(posted.statusCode, 405, posted.body)
      assert.equal(await rows(db, 'accounts'), 1)
      const patched = await app.inject({ method: 'PATCH', url: '/accounts/1', payload: { login: 'anne' } })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal((await db.selectFrom('accounts').select(['login', 'password_hash']).executeTakeFirst())?.password_hash, 'x1')

      // A large table: equality filters and the index ordering stay; substring matches and exact counts do not.
      const byTitle = await app.inject({ method: 'GET', url: '/events?title=e3-7&order_by=title' })
      assert.equal(byTitle.statusCode, 200, byTitle.body)
      assert.deepEqual(byTitle.json().map((row: { title: string }) => row.title), ['e3-7'])
      for (const query of ['title__contains=e3', 'note__contains=x', 'search=e3']) {
        const refused = await app.inject({ method: 'GET', url: `/events?${query}` })
        assert.equal(refused.statusCode, 400, `${query}: ${refused.body}`)
      }
      const counted = await app.inject({ method: 'GET', url: '/events?count=true&limit=1' })
      if (dialect.name === 'sqlite') assert.equal(counted.statusCode, 400, counted.body)
      else {
        assert.equal(counted.statusCode, 200, counted.body)
        assert.ok(counted.headers['x-total-count'] !== undefined)
        assert.match(String(counted.headers['preference-applied']), /count=(?:estimated|exact)/)
      }
      // A small table keeps them.
      const small = await app.inject({ method: 'GET', url: '/notes?body__contains=ell&search=hel&count=true' })
      assert.equal(small.statusCode, 200, small.body)
      assert.equal(small.headers['x-total-count'], '1')

      // --include-secrets serves them, and POST with them.
      const open = join(output, `${dialect.name}-secrets`)
      await command('generate', '--url', url, '--out', open, '--writable', '--include-secrets', '--tables', 'accounts')
      assert.match(await readFile(join(open, 'schemas.ts'), 'utf8'), /password_hash: Type\.String\(\{ maxLength: 100 \}\)/)
      const withSecrets = await start(t, open, db)
      const created = await withSecrets.inject({
        method: 'POST',
        url: '/accounts',
        payload: { login: 'bob', password_hash: 'x2' },
      })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(await rows(db, 'accounts'), 2)
    })
  })
}
