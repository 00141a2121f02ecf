import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { before, describe, test } from 'node:test'

const root = resolve(import.meta.dirname, '../..')
const npm = (args: string[], cwd: string) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_loglevel: 'error' } })

// What we publish must work outside this repository: pack it, install the tarball in a scratch
// project, and use it from plain JavaScript and from TypeScript. kysely, @sinclair/typebox and fastify are peer
// dependencies (issue 42, 1): the app's copies are the library's, on each Kysely minor the peer range names. On
// 0.29 the app names its Kysely and its driver only: npm installs the other peers, fastify and TypeBox, which is
// all `createDatabase` needs (left to itself on Node 20, npm picks 0.28, whose engines fit). On 0.28 the app pins
// all three.

const check = `
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import { createDatabase, createViewset, viewsetDocs, viewsetReadiness, viewsetServerTiming, Viewset, ViewsetErrors, withPreparedStatements } from 'fastify-viewsets'
import { instrumentViewsets } from 'fastify-viewsets/otel'
import { viewsetMetrics } from 'fastify-viewsets/metrics'
const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
if (typeof createViewset !== 'function' || typeof Viewset !== 'function' || !ViewsetErrors.NotFound) throw new Error('exports missing')
// The observability subpaths, over dist/ with their optional peers installed.
const stopTracing = instrumentViewsets()
const observed = Fastify()
await observed.register(viewsetMetrics)
await observed.register(viewsetReadiness)
await observed.register(viewsetServerTiming)
const scraped = await observed.inject('/metrics')
const ready = await observed.inject('/ready')
if (scraped.statusCode !== 200 || !scraped.body.includes('fastify_viewsets_request_duration_seconds') || ready.statusCode !== 200) {
  throw new Error('observability exports do not work: ' + scraped.statusCode + ' ' + ready.statusCode)
}
await observed.close()
stopTracing()
const url = process.env.TEST_POSTGRES_URL
const db = createDatabase(url ?? 'sqlite::memory:')
if (url) {
  // The app's own Kysely instance too, from the app's kysely: the one the library imports.
  const { Kysely, PostgresDialect, sql } = await import('kysely')
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  const own = withPreparedStatements(new Kysely({ dialect: new PostgresDialect({ pool }) }), pool)
  const table = 'pack_' + process.pid
  await sql\`create table \${sql.id(table)} (id serial primary key, name text not null)\`.execute(db)
  try {
    const app = Fastify()
    await app.register(viewsetDocs)
    await app.register(createViewset({ db, table, schema: Item }), { prefix: '/items' })
    await app.register(createViewset({ db: own, table, schema: Item }), { prefix: '/own' })
    const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'packed' } })
    const ownCreated = await app.inject({ method: 'POST', url: '/own', payload: { name: 'own' } })
    const listed = await app.inject('/own')
    const docs = await app.inject('/docs/json')
    console.log(JSON.stringify({
      status: created.statusCode, name: created.json().name, own: ownCreated.statusCode,
      listed: listed.json().map((row) => row.name), paths: Object.keys(docs.json().paths),
    }))
    await app.close()
  } finally {
    await sql\`drop table \${sql.id(table)}\`.execute(db)
    await own.destroy()
  }
} else {
  console.log(JSON.stringify({ plugin: typeof createViewset({ db, table: 'items', schema: Item }) }))
}
await db.destroy()
`

// The app passes its own Kysely instance and its own TypeBox schema: two copies of either would fail here with
// "#private" or symbol-key errors.
const typed = `
import { Type } from '@sinclair/typebox'
import { Kysely, PostgresDialect } from 'kysely'
import type { Generated } from 'kysely'
import pg from 'pg'
import { createDatabase, createViewset, withPreparedStatements } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
interface DB { items: { id: Generated<number>, name: string } }
const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
const db = createDatabase<DB>()
export const plugin = createViewset({ db, table: 'items', schema: Item })
export type Options = ViewsetOptions<DB, 'items', typeof Item>
const pool = new pg.Pool()
const own: Kysely<DB> = withPreparedStatements(new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }), pool)
export const ownPlugin = createViewset({ db: own, table: 'items', schema: Item })
// @ts-expect-error not a table
createViewset({ db, table: 'orders', schema: Item })
`

// dist/ is bundled (scripts/bundle.js): what the bundle finds by path at run time, the SQLite reader thread's script
// (sqlite-readers.ts) and package.json (the CLI's header, generate/header.ts), is found from the built files.
const fromDist = `
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import Database from 'better-sqlite3'
const [dist, file] = process.argv.slice(2)
const { createDatabase, createViewset } = await import(dist)
const raw = new Database(file)
raw.pragma('journal_mode = WAL')
raw.exec('create table items (id integer primary key, name text not null)')
const insert = raw.prepare('insert into items (name) values (?)')
for (let id = 1; id <= 2000; id++) insert.run('item ' + id)
raw.close()
let workers = 0
process.on('worker', () => { workers++ })
const db = createDatabase('sqlite:' + file, { readWorkers: 1 })
const app = Fastify()
const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
await app.register(createViewset({ db, table: 'items', schema: Item, filterFields: { name: ['contains'] }, orderingFields: ['id'] }), { prefix: '/items' })
const before = workers
// A substring match with a count scans the table: a heavy read, run on a reader thread.
const heavy = await app.inject('/items?name__contains=item 19&count=true&order_by=id&limit=3')
console.log(JSON.stringify({ status: heavy.statusCode, ids: heavy.json().map((row) => row.id), total: heavy.headers['x-total-count'], before, workers }))
await app.close()
await db.destroy()
`

const variants = [
  { kysely: '0.29', install: ['kysely@0.29'] },
  { kysely: '0.28', install: ['kysely@0.28', 'fastify@5', '@sinclair/typebox@0.34'] },
]

describe('the packed package', { timeout: 600_000 }, () => {
  let tarball = ''
  before(() => {
    const packed = mkdtempSync(join(tmpdir(), 'viewsets-pack-'))
    npm(['pack', '--pack-destination', packed], root)
    const file = readdirSync(packed).find((name) => name.endsWith('.tgz'))
    assert.ok(file, 'npm pack made a tarball')
    tarball = join(packed, file)
  })

  test('the built dist/: a SQLite reader thread starts from it, and the generate command runs from it', async (t) => {
    // Inside the repository (test-output/ is ignored), so that the script resolves fastify and better-sqlite3; a file,
    // not `-e`, whose --input-type the reader thread would inherit.
    const scratch = join(root, 'test-output', `dist-${process.pid}`)
    mkdirSync(scratch, { recursive: true })
    t.after(() => rmSync(scratch, { recursive: true, force: true }))
    const file = join(scratch, 'app.db')
    writeFileSync(join(scratch, 'from-dist.mjs'), fromDist)
    const script = [join(scratch, 'from-dist.mjs'), pathToFileURL(join(root, 'dist/index.js')).href, file]
    const output = execFileSync(process.execPath, script, { cwd: root, encoding: 'utf8' })
    assert.deepEqual(JSON.parse(output), { status: 200, ids: [19, 190, 191], total: '111', before: 0, workers: 1 })

    const env = { ...process.env, FASTIFY_VIEWSETS_SOURCE: '0' }
    const out = join(scratch, 'generated')
    execFileSync(process.execPath, [join(root, 'bin/fastify-viewsets.js'), 'generate', '--url', `sqlite:${file}`, '--out', out], { cwd: scratch, env, encoding: 'utf8' })
    const version: unknown = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
    assert.match(readFileSync(join(out, 'schemas.ts'), 'utf8'), new RegExp(`^// Generated by fastify-viewsets ${String(version).replaceAll('.', '\\.')}\\. `))
  })

  for (const variant of variants) {
    test(`installs with Kysely ${variant.kysely}, and imports, type-checks and serves from JavaScript and TypeScript`, { timeout: 300_000 }, async (t) => {
      const scratch = mkdtempSync(join(tmpdir(), 'viewsets-app-'))
      t.after(() => rmSync(scratch, { recursive: true, force: true }))
      writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }))
      npm(['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, 'pg@8', '@types/pg@8', '@opentelemetry/api@1', 'prom-client@15', ...variant.install], scratch)

      // One copy of each peer, the app's, of the minor asked for.
      const version = (name: string) => JSON.parse(readFileSync(join(scratch, 'node_modules', name, 'package.json'), 'utf8')).version
      assert.match(version('kysely'), new RegExp(`^${variant.kysely.replace('.', '\\.')}\\.`))
      assert.match(version('@sinclair/typebox'), /^0\.34\./)
      assert.match(version('fastify'), /^5\./)
      const nested = ['kysely', '@sinclair/typebox', 'fastify'].filter((name) => {
        try {
          readFileSync(join(scratch, 'node_modules/fastify-viewsets/node_modules', name, 'package.json'))
          return true
        } catch {
          return false
        }
      })
      assert.deepEqual(nested, [], 'the library has no copy of its own')

      writeFileSync(join(scratch, 'check.mjs'), check)
      const output = JSON.parse(execFileSync(process.execPath, ['check.mjs'], { cwd: scratch, encoding: 'utf8' }))
      if (process.env.TEST_POSTGRES_URL === undefined) {
        assert.deepEqual(output, { plugin: 'function' })
      } else {
        assert.deepEqual(output, {
          status: 201, name: 'packed', own: 201, listed: ['packed', 'own'], paths: ['/items', '/items/{id}', '/own', '/own/{id}'],
        })
      }

      mkdirSync(join(scratch, 'src'))
      writeFileSync(join(scratch, 'src/check.ts'), typed)
      writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify({
        compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, skipLibCheck: true, types: [] },
        files: ['src/check.ts'],
      }))
      execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(scratch, 'tsconfig.json')], { cwd: scratch, encoding: 'utf8' })
    })
  }
})
