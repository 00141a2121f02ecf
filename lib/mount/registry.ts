import type { FastifyInstance } from 'fastify'
import type { FieldRules } from '../query/field-access.js'
import type { RelationRule } from '../relations/config.js'
import type { IndexReportEntry } from './index-report.js'

// The app-level registry of mounted viewsets: one list per application, filled as viewsets register and
// frozen when the application is ready. Features that reach across viewsets (whose row rule applies to a
// relation, a batch route, the order of the docs) read it; nothing writes it after startup.

/** One mounted viewset, as the registry holds it. */
export interface RegisteredViewset {
  /** The table, as the `table` option names it. */
  readonly table: string
  /** The Kysely instance the viewset writes to (its `db` option): tables are told apart by database too. */
  readonly db: object
  /** The full prefix its routes are under, such as `/admin/items`. */
  readonly prefix: string
  /** The viewset itself (narrow it with `instanceof Viewset`). */
  readonly viewset: object
  /**
   * Its row rule as relations apply it (the viewset's `scope` method), or `undefined` when it has none; and what
   * tells two rules apart (the `scope` option, or the class's `scope` method).
   */
  readonly rule: { readonly source: RelationRule<unknown>; readonly identity: object } | undefined
  /** Its field rule (`fieldAccess`) as relations apply it, or `undefined` when it has none. */
  readonly fields?: FieldRules | undefined
  /** Whether its requests run in a transaction of their own (`rowLevelSecurity`): a batch cannot hold them. */
  readonly rowLevelSecurity?: boolean
  /** Its fields whose statements would scan a table for want of an index (index-report.ts). */
  readonly indexReport?: readonly IndexReportEntry[]
}

/** Work that needs every viewset of the app: run, in order, once the application is ready (a throw fails `ready()`). */
type ReadyWork = (entries: readonly RegisteredViewset[]) => void

// Keyed by the root instance, so that encapsulated children (each viewset's plugin) share one list, and a
// closed application's list goes with it.
const registries = new WeakMap<FastifyInstance, RegisteredViewset[]>()
const readyWork = new WeakMap<FastifyInstance, ReadyWork[]>()

/**
 * The application's root instance: Fastify makes each encapsulated child with `Object.create(parent)`, so
 * the root is the last instance up the prototype chain.
 *
 * @example
 * ```ts
 * rootOf(fastify) === app // from any encapsulated instance of `app`
 * ```
 */
export function rootOf (fastify: FastifyInstance): FastifyInstance {
  let root = fastify
  for (let parent: unknown = Object.getPrototypeOf(root); isInstance(parent); parent = Object.getPrototypeOf(parent)) {
    root = parent
  }
  return root
}

/** An object of Fastify's instance chain: the root and its children have `register`, Object.prototype does not. */
function isInstance (value: unknown): value is FastifyInstance {
  return typeof value === 'object' && value !== null && 'register' in value
}

/** The list of `fastify`'s application, created with a hook that freezes it once the application is ready. */
function registryOf (fastify: FastifyInstance): RegisteredViewset[] {
  const root = rootOf(fastify)
  let registry = registries.get(root)
  if (registry === undefined) {
    const entries: RegisteredViewset[] = []
    const work: ReadyWork[] = []
    registry = entries
    registries.set(root, entries)
    readyWork.set(root, work)
    root.addHook('onReady', async () => {
      Object.freeze(entries)
      for (const run of work) run(entries)
    })
  }
  return registry
}

/**
 * Records a mounted viewset in its application's registry: called once per viewset, while it registers.
 *
 * @example
 * ```ts
 * registerViewset(fastify, { table: 'items', db, prefix: fastify.prefix, viewset })
 * ```
 */
export function registerViewset (fastify: FastifyInstance, entry: RegisteredViewset): void {
  registryOf(fastify).push(Object.freeze({ ...entry }))
}

/**
 * Runs `work` with every viewset of `fastify`'s application once it is ready (after all registered), before it
 * serves: how rules that reach across viewsets are resolved at startup, never during a request.
 *
 * @example
 * ```ts
 * whenAllRegistered(fastify, (entries) => { resolveRelationRules(entries, db, loader.ruleSlots) })
 * ```
 */
export function whenAllRegistered (fastify: FastifyInstance, work: ReadyWork): void {
  registryOf(fastify)
  readyWork.get(rootOf(fastify))?.push(work)
}

/**
 * Every viewset mounted in `fastify`'s application (from any of its encapsulated instances), in the order
 * they registered. Read-only: frozen once the application is ready.
 *
 * @example
 * ```ts
 * await app.ready()
 * viewsetsOf(app).map((entry) => `${entry.prefix} → ${entry.table}`) // ['/authors → authors', '/books → books']
 * ```
 */
export function viewsetsOf (fastify: FastifyInstance): readonly RegisteredViewset[] {
  return registries.get(rootOf(fastify)) ?? []
}

/**
 * The viewsets of `fastify`'s application that serve `table` of the database `db` (the same Kysely
 * instance), in the order they registered: none, one, or several under different prefixes.
 *
 * @example
 * ```ts
 * const [authors] = findViewsets(app, db, 'authors')
 * ```
 */
export function findViewsets (fastify: FastifyInstance, db: object, table: string): readonly RegisteredViewset[] {
  return viewsetsOf(fastify).filter((entry) => entry.db === db && entry.table === table)
}
