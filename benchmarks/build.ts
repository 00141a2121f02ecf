import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

// Servers run as users run them: plain `node` over the built package. `npm run build:bench` builds lib/
// into dist/ (tsc's types, esbuild's bundle: scripts/bundle.js) and compiles benchmarks/ into
// benchmarks/.data/build, where `import 'fastify-viewsets'` resolves to dist/ (the package's self-reference,
// without the `source` condition). The runner itself stays on tsx and checks that the build is not older than the
// sources.

const root = fileURLToPath(new URL('..', import.meta.url))
const buildDir = join(root, 'benchmarks', '.data', 'build')

/** The compiled counterpart of a benchmarks/ module, such as `server.ts` → `.data/build/server.js`. */
export function compiled (module: string): string {
  return join(buildDir, module.replace(/\.ts$/, '.js'))
}

function newest (dir: string): number {
  let latest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === '.data' || entry.name === 'node_modules') continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) latest = Math.max(latest, newest(path))
    else if (entry.name.endsWith('.ts') || /^tsconfig.*\.json$/.test(entry.name)) latest = Math.max(latest, statSync(path).mtimeMs)
  }
  return latest
}

const modified = (file: string) => existsSync(file) ? statSync(file).mtimeMs : 0

/** Builds dist/ and the compiled benchmarks when either is missing or older than its sources. */
export function ensureBuilt (log: (line: string) => void): void {
  const sources = Math.max(
    newest(join(root, 'lib')), newest(join(root, 'benchmarks')),
    modified(join(root, 'package.json')), modified(join(root, 'scripts', 'bundle.js'))
  )
  const built = Math.min(modified(join(root, 'dist', 'index.js')), modified(compiled('server.ts')))
  if (built >= sources) return
  log('Building dist/ and the benchmarks (npm run build:bench)…')
  execFileSync('npm', ['run', '--silent', 'build:bench'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
}
