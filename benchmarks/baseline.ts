import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

// `--baseline <git-ref>`: the library as built at another commit, for the `viewsets-baseline` system, so that
// one interleaved run compares the build before a change with the build after it. The ref's lib/ and build
// config are extracted into benchmarks/.data/baseline/<commit> (git-ignored) and compiled there with this
// checkout's node_modules; a commit already built is reused.

const root = fileURLToPath(new URL('..', import.meta.url))

/** A build of the library at a git ref. */
export interface Baseline {
  /** The ref as given, such as `4ff4b4d` or `main~3`. */
  ref: string
  /** The full commit id it resolved to. */
  commit: string
  /** Its dist/index.js, which the `viewsets-baseline` server imports. */
  library: string
}

function git (args: string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
}

/** Whether `commit` has the file `path`. */
function hasFile (commit: string, path: string): boolean {
  try {
    git(['cat-file', '-e', `${commit}:${path}`])
    return true
  } catch {
    return false
  }
}

/** What a failed child process printed (tsc reports on stdout, git and tar on stderr), or the error's message. */
function childOutput (error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error)
  const printed = ['stdout' in error ? error.stdout : '', 'stderr' in error ? error.stderr : '']
    .map((output) => (output instanceof Buffer || typeof output === 'string' ? output.toString().trim() : ''))
    .filter((output) => output !== '')
  return printed.length > 0 ? printed.join('\n') : error instanceof Error ? error.message : String(error)
}

/** The commit a ref names, or an error that says the ref is unknown. */
export function resolveCommit (ref: string): string {
  try {
    return git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])
  } catch {
    throw new Error(
      `--baseline ${ref}: not a commit of this repository (git rev-parse --verify ${ref}^{commit} found nothing)`
    )
  }
}

/** Builds the library at `ref` unless that commit's build exists already; runs before any measurement. */
export function ensureBaseline (ref: string, log: (line: string) => void): Baseline {
  const commit = resolveCommit(ref)
  const dir = join(root, 'benchmarks', '.data', 'baseline', commit)
  const library = join(dir, 'dist', 'index.js')
  if (existsSync(library)) return { ref, commit, library }
  log(
    `Building the baseline ${ref} (${commit.slice(0, 12)}) into ${join('benchmarks', '.data', 'baseline', commit, 'dist')}…`
  )
  // A build that stopped half-way leaves no dist/index.js: start again from nothing.
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  try {
    const archive = join(dir, 'sources.tar')
    // tsconfig.build.json extends tsconfig.json (compiler settings) and only includes lib/. From session 9 on, tsc
    // emits the types only and scripts/bundle.js the JavaScript (esbuild); older commits have no bundle step.
    const bundled = hasFile(commit, 'scripts/bundle.js')
    const sources = ['lib', 'package.json', 'tsconfig.json', 'tsconfig.build.json', ...(bundled ? ['scripts'] : [])]
    git(['archive', '--output', archive, commit, ...sources])
    execFileSync('tar', ['-x', '-f', archive, '-C', dir], { stdio: ['ignore', 'ignore', 'pipe'] })
    rmSync(archive)
    // The build's imports (fastify, kysely, drivers) resolve to this checkout's packages, the ones the other servers
    // load.
    symlinkSync(realpathSync(join(root, 'node_modules')), join(dir, 'node_modules'), 'dir')
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    if (bundled) execFileSync(process.execPath, ['scripts/bundle.js'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (error) {
    rmSync(join(dir, 'dist'), { recursive: true, force: true })
    throw new Error(`--baseline ${ref}: could not build ${commit} in ${dir}\n${childOutput(error)}`)
  }
  if (!existsSync(library)) throw new Error(`--baseline ${ref}: the build of ${commit} wrote no ${library}`)
  return { ref, commit, library }
}
