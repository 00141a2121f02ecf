import { pathToFileURL } from 'node:url'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { buildViewsets } from './viewsets-app.js'
import type { ViewsetsLibrary } from './viewsets-app.js'

// The `viewsets` system over the library built at `--baseline <git-ref>` (baseline.ts builds it into
// benchmarks/.data/baseline/<commit>/dist): the build before a change, beside the build after it.

function isViewsetsLibrary (module: unknown): module is ViewsetsLibrary {
  // Only the two entry points are checked: the baseline is an earlier build of the same API, and an option
  // it lacks marks its scenario n/a when the viewset is registered (viewsets-app.ts).
  return typeof module === 'object' && module !== null &&
    'createViewset' in module && typeof module.createViewset === 'function' &&
    'createDatabase' in module && typeof module.createDatabase === 'function'
}

export async function build (target: DatabaseTarget, library: string | undefined): Promise<SystemServer> {
  if (library === undefined) throw new Error('viewsets-baseline needs the path of the baseline\'s dist/index.js (the runner passes it with --baseline <git-ref>)')
  const module: unknown = await import(pathToFileURL(library).href)
  if (!isViewsetsLibrary(module)) throw new Error(`${library} exports no createViewset and createDatabase: not a build of fastify-viewsets`)
  return { ...await buildViewsets(target, module), library }
}
