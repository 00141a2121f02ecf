// Keyed by the root instance, so that encapsulated children (each viewset's plugin) share one list, and a
// closed application's list goes with it.
const registries = new WeakMap();
const readyWork = new WeakMap();
/**
 * The application's root instance: Fastify makes each encapsulated child with `Object.create(parent)`, so
 * the root is the last instance up the prototype chain.
 */
function rootOf(fastify) {
    let root = fastify;
    for (let parent = Object.getPrototypeOf(root); isInstance(parent); parent = Object.getPrototypeOf(parent)) {
        root = parent;
    }
    return root;
}
/** An object of Fastify's instance chain: the root and its children have `register`, Object.prototype does not. */
function isInstance(value) {
    return typeof value === 'object' && value !== null && 'register' in value;
}
/** The list of `fastify`'s application, created with a hook that freezes it once the application is ready. */
function registryOf(fastify) {
    const root = rootOf(fastify);
    let registry = registries.get(root);
    if (registry === undefined) {
        const entries = [];
        const work = [];
        registry = entries;
        registries.set(root, entries);
        readyWork.set(root, work);
        root.addHook('onReady', async () => {
            Object.freeze(entries);
            for (const run of work)
                run(entries);
        });
    }
    return registry;
}
/**
 * Records a mounted viewset in its application's registry: called once per viewset, while it registers.
 *
 * @example
 * ```ts
 * registerViewset(fastify, { table: 'items', db, prefix: fastify.prefix, viewset })
 * ```
 */
export function registerViewset(fastify, entry) {
    registryOf(fastify).push(Object.freeze({ ...entry }));
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
export function whenAllRegistered(fastify, work) {
    registryOf(fastify);
    readyWork.get(rootOf(fastify))?.push(work);
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
export function viewsetsOf(fastify) {
    return registries.get(rootOf(fastify)) ?? [];
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
export function findViewsets(fastify, db, table) {
    return viewsetsOf(fastify).filter((entry) => entry.db === db && entry.table === table);
}
//# sourceMappingURL=registry.js.map