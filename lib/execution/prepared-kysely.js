import { isCompilable, Kysely } from 'kysely';
/** How the data layer runs its compiled statements on an instance with a shortcut: see {@link runCompiled}. */
export const executeNow = Symbol('fastify-viewsets.executeNow');
/** What a shortcut answered, as Kysely's executor would hand it on: through each plugin's `transformResult`. */
async function resultOf(direct, compiled, plugins) {
    let result = direct;
    for (const plugin of plugins)
        result = await plugin.transformResult({ result, queryId: compiled.queryId });
    return result; // the caller's compiled query types its rows as R, as Kysely's executor trusts it
}
/**
 * Offers a compiled query to a shortcut and answers with its result, settled when the shortcut answered at
 * once (a SQLite statement), or with `otherwise(compiled)` when the shortcut declines. May throw. Not async:
 * each async frame costs promises, and on PostgreSQL the cancel-on-disconnect hooks run for each
 * (dialect/postgres-cancel.ts).
 */
function viaShortcut(direct, compiled, otherwise) {
    const result = direct(compiled);
    // The caller's compiled query types its rows as R, as Kysely's executor trusts it.
    return result === undefined ? otherwise(compiled) : result;
}
/** Kysely's `executeQuery` over {@link viaShortcut}: always a promise, and a throw becomes a rejection. */
function promised(query, execute) {
    try {
        const result = execute(isCompilable(query) ? query.compile() : query);
        return result instanceof Promise ? result : Promise.resolve(result);
    }
    catch (error) {
        return Promise.reject(error);
    }
}
/**
 * Runs a statement the data layer compiled: on an instance createDatabase opened or withPreparedStatements
 * adopted, through its shortcut, whose SQLite statements answer at once rather than as a promise (see
 * eventually.ts); on any other instance (a transaction, a plain Kysely) with `executeQuery`. May throw.
 *
 * @example
 * ```ts
 * const rows = andThen(runCompiled(db, withParameters(byId, [7])), resultRows)
 * ```
 */
export function runCompiled(db, compiled) {
    return db instanceof PreparedKysely || db instanceof AdoptedKysely
        ? db[executeNow](compiled)
        : db.executeQuery(compiled);
}
/**
 * The Kysely instance createDatabase returns. Only `db.executeQuery(compiled)`, which runs SQL compiled
 * ahead of time, behaves differently: it first offers the query to the database's shortcut (on SQLite a
 * SELECT may run straight on the connection, on PostgreSQL straight on the pool, as a named statement).
 * Queries built and executed with the builder, and transactions (other instances), go through Kysely as usual.
 *
 * @example
 * ```ts
 * const { dialect, direct } = sqliteConnector.connect('sqlite::memory:', settings)
 * const db = new PreparedKysely<DB>({ dialect }, direct)
 * ```
 */
export class PreparedKysely extends Kysely {
    #direct;
    // Made once, not per statement: the shortcut, else Kysely's executor.
    #now;
    constructor(config, direct) {
        super(config);
        this.#direct = direct;
        const viaKysely = (compiled) => super.executeQuery(compiled);
        this.#now = (compiled) => viaShortcut(direct, compiled, viaKysely);
    }
    executeQuery(query, queryId) {
        if (queryId === undefined)
            return promised(query, this.#now);
        return promised(query, (compiled) => viaShortcut(this.#direct, compiled, (declined) => super.executeQuery(declined, queryId)));
    }
    /** {@link runCompiled}: the shortcut, else Kysely's executor. */
    [executeNow](compiled) {
        return this.#now(compiled);
    }
}
function delegated() {
    throw new Error('fastify-viewsets: withPreparedStatements hands this to the Kysely instance it wraps');
}
// Kysely's constructor takes a dialect and a driver; AdoptedKysely hands every method that reads them
// (transactions, connections, introspection, destroy) to the instance it wraps, so these are never called.
const wrappedDialect = {
    createDriver: delegated,
    createQueryCompiler: delegated,
    createAdapter: delegated,
    createIntrospector: delegated,
};
const wrappedDriver = {
    init: delegated,
    acquireConnection: delegated,
    beginTransaction: delegated,
    commitTransaction: delegated,
    rollbackTransaction: delegated,
    releaseConnection: delegated,
    destroy: delegated,
};
/**
 * Whether a Kysely instance logs: Kysely wraps the `executeQuery` of each connection it hands out when it
 * has a `log`, and not otherwise. Its log function is private, so the shortcut cannot call it.
 */
async function logs(executor) {
    return await executor.provideConnection(async (connection) => Object.hasOwn(connection, 'executeQuery'));
}
/**
 * A user's own Kysely instance, with the shortcut of a database createDatabase opens (withPreparedStatements
 * in db.ts). It builds and compiles queries with the wrapped instance's executor (its plugins included) and
 * hands transactions, connections, introspection and `destroy` to it. `db.executeQuery(compiled)` takes the
 * shortcut, the rows going through the plugins' `transformResult`, unless the wrapped instance logs: its log
 * function cannot be reached, so then every statement goes through it and is logged there (on PostgreSQL
 * still as a named statement).
 *
 * @example
 * ```ts
 * const kysely = new Kysely<DB>({ dialect: new SqliteDialect({ database }) })
 * const db = new AdoptedKysely(kysely, sqliteConnector.adopt(database))
 * ```
 */
export class AdoptedKysely extends Kysely {
    #db;
    #adopted;
    #plugins;
    /** Whether the wrapped instance logs, once known. */
    #logs;
    // Made once, not per statement, as PreparedKysely's: once the wrapped instance is known not to log, a shortcut
    // without plugins answers with no async frame.
    #now;
    constructor(db, adopted) {
        const executor = db.getExecutor();
        super({ config: { dialect: wrappedDialect }, executor, dialect: wrappedDialect, driver: wrappedDriver });
        this.#db = db;
        this.#adopted = adopted;
        this.#plugins = executor.plugins;
        const viaKysely = (compiled) => db.executeQuery(compiled);
        const bare = executor.plugins.length === 0; // the plugins are fixed with the instance
        this.#now = (compiled) => bare && this.#logs === false ? viaShortcut(adopted.direct, compiled, viaKysely) : this.#executeQuery(compiled);
    }
    executeQuery(query) {
        return promised(query, this.#now);
    }
    /** {@link runCompiled}. */
    [executeNow](compiled) {
        return this.#now(compiled);
    }
    async #executeQuery(compiled) {
        this.#logs ??= await logs(this.getExecutor());
        if (this.#logs) {
            this.#adopted.viaKysely(compiled);
            return await this.#db.executeQuery(compiled);
        }
        const result = this.#adopted.direct(compiled);
        if (result === undefined)
            return await this.#db.executeQuery(compiled);
        return await resultOf(await result, compiled, this.#plugins);
    }
    get introspection() {
        return this.#db.introspection;
    }
    transaction() {
        return this.#db.transaction();
    }
    startTransaction() {
        return this.#db.startTransaction();
    }
    connection() {
        return this.#db.connection();
    }
    withPlugin(plugin) {
        return new AdoptedKysely(this.#db.withPlugin(plugin), this.#adopted);
    }
    withoutPlugins() {
        return new AdoptedKysely(this.#db.withoutPlugins(), this.#adopted);
    }
    withSchema(schema) {
        return new AdoptedKysely(this.#db.withSchema(schema), this.#adopted);
    }
    withTables() {
        return new AdoptedKysely(this.#db.withTables(), this.#adopted);
    }
    async destroy() {
        await this.#db.destroy();
    }
}
//# sourceMappingURL=prepared-kysely.js.map