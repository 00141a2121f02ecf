// Builds dist/'s JavaScript: lib/ bundled by esbuild into a few ESM files instead of tsc's one file per module
// (issue 43). Node 20's ESM loader costs about 0.5–0.8 ms of CPU per module whatever its size, and a start loads
// ~200 of ours: bundled, a start of 50 viewsets takes about 100 ms less CPU (benchmarks/analysis.md, "Startup,
// session 9"). esbuild rather than a hand-written concatenation: it keeps ESM's semantics (live bindings, the order of
// top-level code, dynamic imports as lazy chunks) and writes the source maps back to lib/. The types stay tsc's
// (`tsc -p tsconfig.build.json` emits dist/**/*.d.ts only), at the same paths as before.
//
// The entries keep their paths (dist/index.js, dist/observability/otel.js, …), so package.json's `exports` and bin/
// are unchanged. Code shared by entries goes into dist/chunks/, once: `./otel` and `./metrics` share the main entry's
// state (the channels, the registries). Dependencies stay imports (`packages: 'external'`): the app's copies of
// Fastify, Kysely and TypeBox must be the library's.
import { build } from 'esbuild'
import { dirname, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

// The SQLite reader thread is started by path, `sqlite-read-worker.js` beside the module that starts it
// (lib/dialect/sqlite/sqlite-readers.ts): it is an entry of its own, written where that module's chunk lands.
const workerEntry = 'chunks/sqlite-read-worker'

const result = await build({
  absWorkingDir: root,
  entryPoints: [
    { in: 'lib/index.ts', out: 'index' },
    { in: 'lib/observability/otel.ts', out: 'observability/otel' },
    { in: 'lib/observability/metrics.ts', out: 'observability/metrics' },
    { in: 'lib/generate/command.ts', out: 'generate/command' },
    { in: 'lib/dialect/sqlite/sqlite-read-worker.ts', out: workerEntry },
  ],
  outdir: 'dist',
  // The chunks sit two levels below the package's root, as lib/generate/header.ts's `../../package.json` expects.
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  packages: 'external',
  tsconfig: 'tsconfig.build.json',
  sourcemap: true,
  // lib/ ships beside dist/, and the maps point at it: no copy of the sources inside them.
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
})

// The reader's path is computed at run time, so esbuild cannot check it: the build does.
const readers = 'lib/dialect/sqlite/sqlite-readers.ts'
const holder = Object.entries(result.metafile.outputs).find(([, output]) => readers in output.inputs)?.[0]
if (holder === undefined || dirname(relative('dist', holder)) !== dirname(workerEntry)) {
  throw new Error(`${readers} was bundled into ${String(holder)}, not beside ${workerEntry}.js: the reader would not start`)
}
