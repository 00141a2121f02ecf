import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { after, test } from 'node:test'
import type { TestContext } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { createDatabase } from 'fastify-viewsets'
import { generate as generateCode } from '../../lib/generate/command.js'
import type { GenerateResult } from '../../lib/generate/command.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'

// Issue 42's acceptance: `generate` over three real open-source schemas nobody here wrote (test/fixtures/<name>/,
// from Debian 12's packages, with their licences), on every database the project ships a schema for; then one
// `tsc --strict` per dialect over everything generated, and a start of each generated server that answers LIST on
// every served table. tt-rss ships no SQLite schema.
const run = promisify(execFile)
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const fixtures = join(root, 'test', 'fixtures')
const output = join(root, 'test-output', `generate-real-${randomBytes(4).toString('hex')}`)
after(async () => {
  await rm(output, { recursive: true, force: true })
})

const projects: ReadonlyArray<{ name: string; dialects: ReadonlyArray<TestDialect['name']> }> = [
  { name: 'mediawiki', dialects: ['sqlite', 'postgres', 'mysql'] },
  { name: 'roundcube', dialects: ['sqlite', 'postgres', 'mysql'] },
  { name: 'tt-rss', dialects: ['postgres', 'mysql'] },
]

/** An isolated database holding a project's schema, loaded by the driver as the project's installer would. */
async function loaded (
  t: TestContext,
  dialect: TestDialect,
  script: string
): Promise<{ db: Kysely<any>; url: string }> {
  if (dialect.name === 'sqlite') {
    await mkdir(output, { recursive: true })
    const file = join(output, `${randomBytes(4).toString('hex')}.db`)
    const raw = new Database(file)
    raw.exec(script)
    raw.close()
    const url = `sqlite:${file}`
    const db = createDatabase<any>(url)
    t.after(() => db.destroy())
    return { db, url }
  }
  const { db, url } = await testDatabase(t, dialect)
  if (dialect.name === 'postgres') {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(script).finally(() => client.end())
  } else {
    const connection = await mysql.createConnection({ uri: url, multipleStatements: true })
    await connection.query(script).finally(() => connection.end())
  }
  return { db, url }
}

// In the test's own process: the command line's parsing and printing are generate.test.ts's; here a child process
// per schema would only add its start-up to the run.
async function generate (url: string, out: string): Promise<GenerateResult> {
  return await generateCode({ url, out })
}

type Build = (options?: { db?: Kysely<any>; env?: Record<string, string | undefined> }) => Promise<FastifyInstance>

/** Starts the generated server (reads only: no JWT_SECRET) and asks every served table for its LIST. */
async function listEvery (t: TestContext, out: string, db: Kysely<any>, served: readonly string[]): Promise<void> {
  const { build } = (await import(pathToFileURL(join(out, 'server.ts')).href)) as { build: Build }
  const app = await build({ db, env: {} })
  t.after(() => app.close())
  await app.ready()
  for (const table of served) {
    const segment = table.replace(/[^A-Za-z0-9_-]/g, (char) => `~${char.charCodeAt(0).toString(16).toUpperCase()}`)
    const response = await app.inject({ method: 'GET', url: `/${segment}?limit=5` })
    assert.equal(response.statusCode, 200, `${table}: ${response.body}`)
    assert.ok(Array.isArray(response.json()), table)
  }
}

/** tsc --strict (the repository's settings) over everything generated, every dialect at once; '' when clean. */
async function typeCheck (folder: string): Promise<string> {
  const config = join(folder, 'tsconfig.json')
  await writeFile(config, JSON.stringify({ extends: '../../tsconfig.json', include: ['./*/*/*.ts'], exclude: [] }))
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const result = await run(process.execPath, [tsc, '-p', config, '--noEmit'], { cwd: root }).catch(
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) })
  )
  return result.stdout.trim()
}

const generated = new Set<string>()

for (const dialect of dialects) {
  test(`generate over tt-rss, MediaWiki and Roundcube on ${dialect.name}: compiles, starts, lists`, async (t) => {
    const folder = join(output, dialect.name)
    const results = new Map<string, GenerateResult>()
    for (const project of projects.filter((entry) => entry.dialects.includes(dialect.name))) {
      const script = await readFile(join(fixtures, project.name, `${dialect.name}.sql`), 'utf8')
      const { db, url } = await loaded(t, dialect, script)
      const out = join(folder, project.name)
      const started = Date.now()
      const result = await generate(url, out)
      t.diagnostic(`${project.name}: generated in ${Date.now() - started} ms`)
      results.set(project.name, result)
      t.diagnostic(`${project.name}: served ${result.served.length}, skipped ${result.skipped.length}`)
      for (const { table, reason } of result.skipped) t.diagnostic(`  skipped ${table}: ${reason}`)
      assert.ok(result.served.length > 5, `${project.name}: ${result.served.join(', ')}`)
      await listEvery(t, out, db, result.served)
    }
    generated.add(dialect.name)

    const mediawiki = results.get('mediawiki')
    assert.ok(mediawiki !== undefined)
    // A key JSON cannot carry is never served broken: such a table is skipped, saying why.
    for (const { reason } of mediawiki.skipped) {
      assert.match(reason, /more than one column|is binary|looks like a secret|no primary key/)
    }
    const schemas = await readFile(join(folder, 'mediawiki', 'schemas.ts'), 'utf8')
    const user = /export const User = Type\.Object\(\{([^]*?)\n\}\)/.exec(schemas)?.[1] ?? ''
    assert.match(user, /user_email:/)
    assert.doesNotMatch(user, /user_password|user_newpassword|user_token/, 'secrets are left out')
    assert.match(schemas, /Left out as secret-looking[^]*'user_password'/)
    if (results.has('tt-rss')) {
      const ttrss = await readFile(join(folder, 'tt-rss', 'schemas.ts'), 'utf8')
      const users = /export const TtrssUsers = Type\.Object\(\{([^]*?)\n\}\)/.exec(ttrss)?.[1] ?? ''
      assert.match(users, /login:/)
      assert.doesNotMatch(users, /pwd_hash|salt|resetpass_token/)
    }
  })
}

// One tsc run over every dialect's output: the check costs the same for one file set as for three.
test('the code generated from the three schemas type-checks under strict', async (t) => {
  assert.equal(generated.size, dialects.length, 'every dialect generated')
  const started = Date.now()
  assert.equal(await typeCheck(output), '')
  t.diagnostic(`tsc in ${Date.now() - started} ms`)
})
