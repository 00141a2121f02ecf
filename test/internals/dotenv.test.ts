import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { test } from 'node:test'
import { pathToFileURL } from 'node:url'

// `.env` is read only where the README says: by createDatabase() (and getDatabase, databaseUrl) when no URL is
// given. Importing the library, or opening a database by its URL, leaves the process's environment alone.

const root = resolve(import.meta.dirname, '../..')
const lib = join(root, 'lib')

/** What a fresh process sees, run with a `.env` in its working directory. */
function inScratch (steps: string): Record<string, unknown> {
  const scratch = mkdtempSync(join(tmpdir(), 'shape-dotenv-'))
  try {
    writeFileSync(join(scratch, '.env'), 'SHAPE_DOTENV_PROBE=from-dotenv\nDATABASE_URL=sqlite::memory:\n')
    const script = `
const probe = () => process.env.SHAPE_DOTENV_PROBE ?? null
const seen = { before: probe() }
const lib = await import(${JSON.stringify(pathToFileURL(join(lib, 'index.ts')).href)})
seen.imported = probe()
${steps}
console.log(JSON.stringify(seen))
`
    const { DATABASE_URL: _url, SHAPE_DOTENV_PROBE: _probe, ...env } = process.env
    const output = execFileSync(
      process.execPath,
      ['--import', import.meta.resolve('tsx'), '--input-type=module', '--eval', script],
      { cwd: scratch, env, encoding: 'utf8' }
    )
    return JSON.parse(output.trim().split('\n').at(-1) ?? '{}')
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

test('importing the library does not read .env; createDatabase() with no URL does', () => {
  const seen = inScratch(`
const byUrl = lib.createDatabase('sqlite::memory:')
seen.byUrl = probe()
await byUrl.destroy()
const byDefault = lib.createDatabase()
seen.byDefault = probe()
seen.url = lib.databaseUrl()
await byDefault.destroy()
`)
  assert.deepEqual(seen, {
    before: null,
    imported: null,
    byUrl: null,
    byDefault: 'from-dotenv',
    url: 'sqlite::memory:',
  })
})

test('getDatabase() reads .env for its URL too', () => {
  const seen = inScratch(`
const db = lib.getDatabase()
seen.loaded = probe()
await db.destroy()
`)
  assert.deepEqual(seen, { before: null, imported: null, loaded: 'from-dotenv' })
})

test('db.ts is the only file of lib/ that imports dotenv', () => {
  const files = (folder: string): string[] => readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return files(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
  const importers = files(lib)
    .filter((path) => /from 'dotenv'|import\('dotenv'\)|require\('dotenv'\)/.test(readFileSync(path, 'utf8')))
    .map((path) => relative(lib, path))
  assert.deepEqual(importers, ['db.ts'])
})
