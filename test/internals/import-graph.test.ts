import { strict as assert } from 'node:assert'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

// lib/'s layers, from the top: a file may import files of its own layer or of a lower one, never of a higher one,
// and no import may close a cycle (type-only imports included: they tie the files' meanings together all the same).
//   5  index.ts                                      re-exports
//   4  viewset.ts, viewset-hooks.ts, viewset-table.ts, requests.ts, mount/, http/, docs.ts, generate/
//                                                   the request flow, the docs plugin and the code generator
//   3  data/, query/, relations/, schema/, options.ts, viewset-options.ts, list-options.ts, db.ts
//                                                   the table gateway and what it is built from, the checked
//                                                   options, the database module
//   5  observability/ plugins (metrics, health)      read the app's registry of mounted viewsets
//   2  dialect/, execution/, observability/ (the rest) the seam to each database, how statements run, and the
//                                                   tracing channels every layer above publishes on
//   1  sql.ts, errors.ts                             the shared SQL vocabulary and every error
// options.ts (and viewset-options.ts, the option types it re-exports) sits with data/ and query/: it holds the
// option vocabulary they read (FilterOperator, ViewsetMethod)
// and its checks need no database. db.ts opens databases through dialect/ and execution/, and nothing below
// the request flow imports it.
const layers: ReadonlyArray<readonly [number, readonly string[]]> = [
  [5, ['index.ts', 'observability/metrics.ts', 'observability/health.ts']],
  [4, ['viewset.ts', 'create-viewset.ts', 'viewset-hooks.ts', 'viewset-table.ts', 'requests.ts', 'mount/', 'http/', 'changes/', 'docs.ts', 'generate/']],
  [3, ['data/', 'query/', 'relations/', 'schema/', 'options.ts', 'viewset-options.ts', 'list-options.ts', 'write-hooks.ts', 'methods.ts', 'tokens.ts', 'db.ts']],
  [2, ['dialect/', 'execution/', 'observability/']],
  [1, ['sql.ts', 'errors.ts', 'row-key.ts']],
]

const lib = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'lib')

function libFiles (folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return libFiles(path)
    return entry.name.endsWith('.ts') ? [relative(lib, path)] : []
  })
}

/**
 * The lib/ files `file` imports: static, type-only, re-exported and dynamic, as TypeScript's own scanner reads them
 * (so an `import` inside a template literal, such as the code `generate` writes, is not one).
 */
function importsOf (file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(lib, file), 'utf8'), true, true)
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => normalize(join(dirname(file), specifier)).replace(/\.js$/, '.ts'))
}

function layerOf (file: string): number | undefined {
  return layers.find(([, members]) => members.some((member) => file === member || file.startsWith(member)))?.[0]
}

const files = libFiles(lib)
const graph = new Map(files.map((file) => [file, importsOf(file)]))

/** Every cycle's files, found by a depth-first walk (a cycle reached from two files may be listed twice). */
function cycles (): string[][] {
  const found: string[][] = []
  const done = new Set<string>()
  const path: string[] = []
  const visit = (file: string): void => {
    const at = path.indexOf(file)
    if (at !== -1) {
      found.push([...path.slice(at), file])
      return
    }
    if (done.has(file)) return
    path.push(file)
    for (const imported of graph.get(file) ?? []) visit(imported)
    path.pop()
    done.add(file)
  }
  for (const file of files) visit(file)
  return found
}

test('the import parser sees every lib/ file and every import form', () => {
  assert.ok(files.length > 50, `only ${files.length} files found under lib/`)
  // One of each form, from files that hold them: a type-only import, a value import, a re-export, a dynamic import.
  assert.ok(graph.get('dialect/dialect.ts')?.includes('sql.ts'), 'a type-only import')
  assert.ok(graph.get('data/statements.ts')?.includes('sql.ts'), 'a value import')
  assert.ok(graph.get('index.ts')?.includes('viewset.ts'), 'a re-export')
  assert.ok(graph.get('dialect/pick-dialect.ts')?.includes('dialect/sqlite/sqlite-dialect.ts'), 'a dynamic import')
  for (const [file, imported] of graph) {
    for (const target of imported) assert.ok(graph.has(target), `${file} imports ${target}, which is not a lib/ file`)
  }
})

test('every lib/ file has a layer', () => {
  assert.deepEqual(files.filter((file) => layerOf(file) === undefined), [])
})

test('no lib/ file imports from a higher layer', () => {
  const upward: string[] = []
  for (const [file, imported] of graph) {
    for (const target of imported) {
      const from = layerOf(file) ?? 0
      const to = layerOf(target) ?? 0
      if (to > from) upward.push(`${file} (layer ${from}) imports ${target} (layer ${to})`)
    }
  }
  assert.deepEqual(upward, [])
})

test('no import cycle in lib/, type-only imports included', () => {
  assert.deepEqual(cycles().map((cycle) => cycle.join(' → ')), [])
})
