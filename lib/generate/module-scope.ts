import { readFile, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'

/** The `package.json` nearest above `folder` (itself included), parsed, or `undefined` when there is none. */
async function nearestManifest (folder: string): Promise<{ path: string; type: unknown } | undefined> {
  for (let current = resolve(folder); ; current = dirname(current)) {
    const path = join(current, 'package.json')
    const text = await readFile(path, 'utf8').catch(() => undefined)
    if (text !== undefined) {
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        parsed = undefined
      }
      const type = typeof parsed === 'object' && parsed !== null && 'type' in parsed ? parsed.type : undefined
      return { path, type }
    }
    if (dirname(current) === current) return undefined
  }
}

/**
 * Makes the generated folder a scope of ES modules: the files use `import.meta` and import Kysely's ES build, and
 * in a CommonJS package (`npm init -y` writes `"type": "commonjs"`) `tsc` would read them as CommonJS and Kysely's
 * two builds as two types (`#private` errors). A `package.json` holding `{ "type": "module" }` in the folder scopes
 * only the generated files, leaving the project's own manifest alone. Returns the file written, if any; a folder
 * whose own manifest says otherwise is left as it is, and the message says what to change.
 */
export async function moduleScope (out: string, check: boolean): Promise<{ wrote?: string; warning?: string }> {
  const manifest = await nearestManifest(out)
  if (manifest?.type === 'module') return {}
  const own = join(out, 'package.json')
  if (manifest !== undefined && resolve(manifest.path) === resolve(own)) {
    return { warning: `${own} does not say "type": "module": the generated files are ES modules; add it` }
  }
  if (!check) await writeFile(own, `${JSON.stringify({ type: 'module' }, null, 2)}\n`)
  return { wrote: own }
}
