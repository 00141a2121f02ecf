import { strict as assert } from 'node:assert'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

// The size limits the style guide sets for lib/, checked with TypeScript's own parser so that they stay true:
// a function (method, arrow or function expression, nested closures counted in their parent) spans at most 60
// lines, a file at most 400, and lib/ holds no more type assertions than today (`as const` is not one): a ratchet,
// lowered as casts leave, never raised.
const maxFunctionLines = 60
const maxFileLines = 400
// 16 once issue 33's pass replaced the drivers' method casts with replaceMethod and the rest with guards (54 before).
const maxCasts = 16

const lib = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'lib')

function libFiles (folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return libFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

interface Measures {
  lines: number
  /** `file:line name (lines)` for every function over the limit. */
  longFunctions: string[]
  /** `file:line` for every type assertion. */
  casts: string[]
}

function isFunction (node: ts.Node): node is ts.FunctionLikeDeclaration {
  return ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) || ts.isConstructorDeclaration(node) || ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
}

function isConstAssertion (node: ts.AsExpression | ts.TypeAssertion): boolean {
  return ts.isTypeReferenceNode(node.type) && ts.isIdentifier(node.type.typeName) && node.type.typeName.text === 'const'
}

function measure (path: string): Measures {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
  const name = relative(lib, path)
  const lineOf = (position: number): number => source.getLineAndCharacterOfPosition(position).line + 1
  const measures: Measures = { lines: lineOf(source.getEnd() - 1), longFunctions: [], casts: [] }
  const visit = (node: ts.Node): void => {
    if (isFunction(node) && node.body !== undefined) {
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart(source)) + 1
      const label = node.name?.getText(source) ?? 'anonymous'
      if (lines > maxFunctionLines) measures.longFunctions.push(`${name}:${lineOf(node.getStart(source))} ${label} (${lines})`)
    }
    if ((ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && !isConstAssertion(node)) {
      measures.casts.push(`${name}:${lineOf(node.getStart(source))}`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return measures
}

const measured = libFiles(lib).map((path) => [relative(lib, path), measure(path)] as const)

test(`no lib/ function spans more than ${maxFunctionLines} lines`, () => {
  assert.deepEqual(measured.flatMap(([, measures]) => measures.longFunctions), [])
})

test(`no lib/ file spans more than ${maxFileLines} lines`, () => {
  const long = measured.filter(([, measures]) => measures.lines > maxFileLines).map(([file, { lines }]) => `${file} (${lines})`)
  assert.deepEqual(long, [])
})

test('viewset.ts, the class a user extends, spans at most 300 lines (issue 33)', () => {
  const viewset = measured.find(([file]) => file === 'viewset.ts')
  assert.ok(viewset !== undefined && viewset[1].lines <= 300, `viewset.ts: ${viewset?.[1].lines} lines`)
})

test(`lib/ holds at most ${maxCasts} type assertions`, () => {
  const casts = measured.flatMap(([, measures]) => measures.casts)
  assert.ok(casts.length <= maxCasts, `${casts.length} type assertions:\n${casts.join('\n')}`)
})
