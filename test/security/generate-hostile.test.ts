import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { after, describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { hostileColumns, hostileNames, hostileSchema } from '../helpers/hostile-names.js'
import { routeSegment } from '../../lib/generate/naming.js'

const run = promisify(execFile)
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
// Inside the repository (test-output/ is ignored), so that the generated code resolves 'fastify-viewsets' here.
const output = join(root, 'test-output', `generate-hostile-${randomBytes(4).toString('hex')}`)
after(async () => {
  await rm(output, { recursive: true, force: true })
})

async function database (t: TestContext, dialect: TestDialect): Promise<{ db: Kysely<any>; url: string }> {
  if (dialect.name !== 'sqlite') return await testDatabase(t, dialect)
  await mkdir(output, { recursive: true })
  const url = `sqlite:${join(output, `hostile-${randomBytes(4).toString('hex')}.db`)}`
  const db = createDatabase<any>(url)
  t.after(() => db.destroy())
  return { db, url }
}

/** Compiles the generated files under the repository's strict settings; returns tsc's report ('' when clean). */
async function compile (out: string): Promise<string> {
  const config = join(out, 'tsconfig.json')
  await writeFile(config, JSON.stringify({ extends: '../../../tsconfig.json', include: ['./*.ts'], exclude: [] }))
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const result = await run(process.execPath, [tsc, '-p', config, '--noEmit'], { cwd: root }).catch(
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) })
  )
  return result.stdout.trim()
}

/** Starts `server.ts` as the README's step 3 does, in `cwd`; resolves with its origin once it listens. */
function start (t: TestContext, server: string, cwd: string) {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', server], {
    cwd,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', JWT_SECRET: '', NODE_ENV: 'development' },
  })
  let log = ''
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.after(() => {
    if (child.exitCode === null) child.kill()
  })
  const listening = new Promise<string>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      log += chunk.toString()
      const origin = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(log)?.[1]
      if (origin !== undefined) resolve(origin)
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    void exited.then((code) => reject(new Error(`the server exited with ${code} before listening:\n${log}`)))
  })
  return { child, listening, exited, log: () => log }
}

for (const dialect of dialects) {
  describe(`generate from hostile names on ${dialect.name}`, () => {
    test('writes code that compiles under strict, runs no name, and serves every table', async (t) => {
      const { db, url } = await database(t, dialect)
      for (const statement of hostileSchema(dialect.name)) await sql.raw(statement).execute(db)
      const out = join(output, dialect.name)
      const { stdout } = await run(
        process.execPath,
        [join(root, 'bin', 'fastify-viewsets.js'), 'generate', '--url', url, '--out', out,
          '--key', `${hostileNames.newlineView}=id`,
          // Full-text search over hostile tables and columns: quoted in the migration, literals in the code.
          '--full-text', `${hostileNames.quotes}:label`, '--full-text', `${hostileNames.template}:label`,
          '--full-text', `${hostileNames.columns}:${hostileColumns.quoted},${hostileColumns.backtick}`],
        { cwd: root, env: { ...process.env, FASTIFY_VIEWSETS_SOURCE: '1' } }
      )
      const served = Object.values(hostileNames).filter(
        (name) => name !== hostileNames.dot && name !== hostileNames.skippedView
      )
      for (const name of served) assert.ok(stdout.includes(name), `served: ${JSON.stringify(name)}\n${stdout}`)
      assert.match(stdout, /skipped dot\.name: its name holds a dot, which Kysely reads as schema\.table/)
      assert.ok(stdout.includes(`skipped ${hostileNames.skippedView}: a view`), stdout)

      // No name reaches the source raw: no line terminator but LF, no template literal, no `*/` but ours.
      for (const file of ['db.ts', 'schemas.ts', 'viewsets.ts', 'server.ts']) {
        const text = await readFile(join(out, file), 'utf8')
        assert.doesNotMatch(text, /[\r\u2028\u2029]/u, file)
        if (file !== 'server.ts') assert.doesNotMatch(text, /`\$\{|\$\{prefix\}/, `${file}: a template literal`)
      }
      const schemas = await readFile(join(out, 'schemas.ts'), 'utf8')
      // order_items and orderItems PascalCase alike; `type` would take TypeBox's import.
      assert.match(schemas, /export const OrderItems = Type\.Object/)
      assert.match(schemas, /\/\/ 'order_items' is OrderItems2: OrderItems is taken by another table or an import\./)
      assert.match(schemas, /export const Type2 = Type\.Object/)
      assert.match(schemas, /export const U65e5U672c = /)
      assert.match(schemas, /export const T2fast = /)

      assert.equal(await compile(out), '')

      // The migration's statements (one a line) create every index; a row written after it is found by ?q=.
      const migration = await readFile(join(out, `full-text.${dialect.name}.sql`), 'utf8')
      for (const statement of migration.split('\n').filter((line) => line !== '' && !line.startsWith('--'))) {
        await sql.raw(statement).execute(db)
      }
      await db.insertInto(hostileNames.quotes).values({ label: 'hostile bread' }).execute()

      const cwd = join(out, 'cwd')
      await mkdir(cwd, { recursive: true })
      const server = start(t, join(out, 'server.ts'), cwd)
      const origin = await server.listening
      assert.match(server.log(), /JWT_SECRET is not set: serving reads only \(LIST, GET\)/)
      for (const name of served) {
        const path = `/${routeSegment(name)}`
        const list = await fetch(`${origin}${path}`)
        const body = await list.text()
        assert.equal(list.status, 200, `LIST ${JSON.stringify(name)} ${path}: ${body}`)
        assert.ok(Array.isArray(JSON.parse(body)), body)
      }
      const found = await fetch(`${origin}/${routeSegment(hostileNames.quotes)}?q=bread`)
      assert.equal(found.status, 200, await found.clone().text())
      const rows: Array<{ label: string }> = await found.json() as Array<{ label: string }>
      assert.deepEqual(rows.map((row) => row.label), ['hostile bread'])
      const write = await fetch(`${origin}/${routeSegment(hostileNames.snake)}`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      })
      assert.equal(write.status, 405, 'reads only')
      assert.equal(write.headers.get('allow'), 'GET, HEAD, OPTIONS')
      assert.equal(server.child.exitCode, null, `the server is still running:\n${server.log()}`)
      server.child.kill('SIGTERM')
      const code = await server.exited
      assert.ok(code === 0 || code === null, `exit code ${code}:\n${server.log()}`)
      assert.equal(existsSync(join(cwd, 'PWNED')), false, 'no payload wrote its file')
    })
  })
}
