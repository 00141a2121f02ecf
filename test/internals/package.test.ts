import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { test } from 'node:test'

const root = resolve(import.meta.dirname, '../..')
const npm = (args: string[], cwd: string) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_loglevel: 'error' } })

// What we publish must work outside this repository: pack it, install the tarball in a scratch
// project, and use it from plain JavaScript and from TypeScript.
test('the packed package installs and imports from JavaScript and TypeScript', { timeout: 300_000 }, async (t) => {
  const scratch = mkdtempSync(join(tmpdir(), 'viewsets-pack-'))
  t.after(() => rmSync(scratch, { recursive: true, force: true }))
  npm(['pack', '--pack-destination', scratch], root)
  const tarball = readdirSync(scratch).find((file) => file.endsWith('.tgz'))
  assert.ok(tarball, 'npm pack made a tarball')

  writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }))
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', `./${tarball}`, 'fastify@5', 'pg@8', '@sinclair/typebox@0.34', '@opentelemetry/api@1', 'prom-client@15'], scratch)

  writeFileSync(join(scratch, 'check.mjs'), `
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import { createDatabase, createViewset, viewsetDocs, viewsetReadiness, viewsetServerTiming, Viewset, ViewsetErrors } from 'fastify-viewsets'
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
  const { sql } = await import('kysely')
  const table = 'pack_' + process.pid
  await sql\`create table \${sql.id(table)} (id serial primary key, name text not null)\`.execute(db)
  try {
    const app = Fastify()
    await app.register(viewsetDocs)
    await app.register(createViewset({ db, table, schema: Item }), { prefix: '/items' })
    const created = await app.inject({ method: 'POST', url: '/items', payload: { name: 'packed' } })
    const docs = await app.inject('/docs/json')
    console.log(JSON.stringify({ status: created.statusCode, name: created.json().name, paths: Object.keys(docs.json().paths) }))
    await app.close()
  } finally {
    await sql\`drop table \${sql.id(table)}\`.execute(db)
  }
} else {
  console.log(JSON.stringify({ plugin: typeof createViewset({ db, table: 'items', schema: Item }) }))
}
await db.destroy()
`)
  const output = JSON.parse(execFileSync(process.execPath, ['check.mjs'], { cwd: scratch, encoding: 'utf8' }))
  if (process.env.TEST_POSTGRES_URL === undefined) {
    assert.deepEqual(output, { plugin: 'function' })
  } else {
    assert.deepEqual(output, { status: 201, name: 'packed', paths: ['/items', '/items/{id}'] })
  }

  writeFileSync(join(scratch, 'check.ts'), `
import { Type } from '@sinclair/typebox'
import type { Generated } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'
import type { ViewsetOptions } from 'fastify-viewsets'
interface DB { items: { id: Generated<number>, name: string } }
const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
const db = createDatabase<DB>()
export const plugin = createViewset({ db, table: 'items', schema: Item })
export type Options = ViewsetOptions<DB, 'items', typeof Item>
// @ts-expect-error not a table
createViewset({ db, table: 'orders', schema: Item })
`)
  writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, skipLibCheck: true, types: [] },
    files: ['check.ts'],
  }))
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(scratch, 'tsconfig.json')], { cwd: scratch, encoding: 'utf8' })
})
