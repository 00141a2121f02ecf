import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { createDatabase } from 'fastify-viewsets'

// The README's three commands in a project `npm init -y` made: npm writes `"type": "commonjs"`, where tsc would read
// the generated files as CommonJS (import.meta refused, Kysely's two builds seen as two types). The command writes a
// package.json holding `"type": "module"` into the generated folder only. The behaviour is the file system's, the
// same for every database: SQLite stands for them.
const run = promisify(execFile)
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

// What `npm init -y` writes with npm 10 and 11.
const npmInit = {
  name: 'app',
  version: '1.0.0',
  main: 'index.js',
  scripts: { test: 'echo "Error: no test specified" && exit 1' },
  keywords: [],
  author: '',
  license: 'ISC',
  type: 'commonjs',
  description: '',
}

test('in a CommonJS package, the generated folder is scoped as ES modules: tsc --strict passes and tsx serves it', async (t) => {
  // Outside the repository, so that no package.json above the project says "type": "module".
  const project = await mkdtemp(join(tmpdir(), 'fastify-viewsets-cjs-'))
  t.after(() => rm(project, { recursive: true, force: true }))
  const manifest = `${JSON.stringify(npmInit, null, 2)}\n`
  await writeFile(join(project, 'package.json'), manifest)
  // `npm install fastify-viewsets fastify better-sqlite3 tsx`, as links: this package and the repository's modules.
  await mkdir(join(project, 'node_modules'))
  for (const entry of await readdir(join(root, 'node_modules'))) {
    if (!entry.startsWith('.')) await symlink(join(root, 'node_modules', entry), join(project, 'node_modules', entry))
  }
  await symlink(root, join(project, 'node_modules', 'fastify-viewsets'))

  const db = createDatabase<any>(`sqlite:${join(project, 'app.db')}`)
  await db.schema.createTable('notes').addColumn('id', 'integer', (column) => column.primaryKey().autoIncrement())
    .addColumn('body', 'text', (column) => column.notNull()).execute()
  await db.insertInto('notes').values({ body: 'first' }).execute()
  await db.destroy()

  const { stdout } = await run(
    process.execPath,
    [join(root, 'bin', 'fastify-viewsets.js'), 'generate', '--url', 'sqlite:app.db'],
    { cwd: project, env: { ...process.env, FASTIFY_VIEWSETS_SOURCE: '1' } }
  )
  assert.match(stdout, /wrote src\/db\/package\.json \(\{ "type": "module" \}\): the generated files are ES modules/)
  assert.deepEqual(JSON.parse(await readFile(join(project, 'src', 'db', 'package.json'), 'utf8')), { type: 'module' })
  assert.equal(await readFile(join(project, 'package.json'), 'utf8'), manifest, "the project's manifest is untouched")

  // tsc --init's module settings (nodenext) with --strict. The published package resolves its dist/ types; in the
  // repository the `source` condition stands for them.
  await writeFile(join(project, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true,
      module: 'nodenext',
      target: 'es2022',
      types: ['node'],
      customConditions: ['source'],
      skipLibCheck: true,
      noEmit: true,
    },
    include: ['src/**/*.ts'],
  }))
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const checked = await run(process.execPath, [tsc, '-p', project], { cwd: project }).catch(
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) })
  )
  assert.equal(checked.stdout.trim(), '')

  // `npx tsx src/db/server.ts` runs the same files: build() serves the table.
  const script = "const { build } = await import('./src/db/server.ts'); const app = await build({ env: {} }); " +
    "const res = await app.inject({ url: '/notes' }); console.log(res.statusCode, res.body); await app.close()"
  const served = await run(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: project }
  )
  const [status, ...body] = served.stdout.trim().split(' ')
  assert.equal(status, '200', served.stdout)
  assert.deepEqual(JSON.parse(body.join(' ')), [{ id: 1, body: 'first' }])

  // Rerunning finds the folder scoped already and writes no manifest again.
  const again = await run(
    process.execPath,
    [join(root, 'bin', 'fastify-viewsets.js'), 'generate', '--url', 'sqlite:app.db'],
    { cwd: project, env: { ...process.env, FASTIFY_VIEWSETS_SOURCE: '1' } }
  )
  assert.doesNotMatch(again.stdout, /package\.json/)
  assert.match(again.stdout, /unchanged src\/db\/server\.ts/)
})
