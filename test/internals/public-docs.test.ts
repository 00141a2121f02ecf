import assert from 'node:assert/strict'
import { join, resolve } from 'node:path'
import { test } from 'node:test'
import ts from 'typescript'

// Every name the package exports (its entry point and the ./otel and ./metrics subpaths) carries TSDoc with a
// short `@example`, read with TypeScript's own checker from the declaration each export resolves to (an alias
// such as `Pagination` is read where its target is declared). The fields of `Problem`, the body of every error
// answer, are documented one by one.

const root = resolve(import.meta.dirname, '../..')
const entries = ['lib/index.ts', 'lib/observability/otel.ts', 'lib/observability/metrics.ts']

const config = ts.readConfigFile(join(root, 'tsconfig.json'), (path) => ts.sys.readFile(path))
const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
const program = ts.createProgram(entries.map((entry) => join(root, entry)), { ...options, noEmit: true })
const checker = program.getTypeChecker()

/** The symbol an export stands for, through `export { x } from` and `export { x as y }`. */
function target (symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
}

function documentation (symbol: ts.Symbol): string {
  return ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim()
}

function hasExample (symbol: ts.Symbol): boolean {
  return symbol.getJsDocTags(checker).some((tag) => tag.name === 'example')
}

/** `entry: name` for each export lacking what `lacks` finds missing. */
function exportsLacking (lacks: (symbol: ts.Symbol) => boolean): string[] {
  return entries.flatMap((entry) => {
    const source = program.getSourceFile(join(root, entry))
    const module = source === undefined ? undefined : checker.getSymbolAtLocation(source)
    assert.ok(module, `${entry} is a module`)
    return checker.getExportsOfModule(module)
      .filter((symbol) => lacks(target(symbol)))
      .map((symbol) => `${entry}: ${symbol.name}`)
  })
}

test('every exported name has TSDoc', () => {
  assert.deepEqual(exportsLacking((symbol) => documentation(symbol) === ''), [])
})

test('every exported name has an @example', () => {
  assert.deepEqual(exportsLacking((symbol) => !hasExample(symbol)), [])
})

test('every field of Problem, the body of each error answer, is documented', () => {
  const source = program.getSourceFile(join(root, 'lib/index.ts'))
  const module = source === undefined ? undefined : checker.getSymbolAtLocation(source)
  assert.ok(module)
  const problem = checker.getExportsOfModule(module).find((symbol) => symbol.name === 'Problem')
  assert.ok(problem, 'Problem is exported')
  const fields = checker.getDeclaredTypeOfSymbol(target(problem)).getProperties()
  assert.ok(fields.length >= 6, `Problem has its six fields (${fields.map((field) => field.name).join(', ')})`)
  assert.deepEqual(fields.filter((field) => documentation(field) === '').map((field) => field.name), [])
})
