import { SqliteDialect } from 'kysely';
import { ViewsetErrors } from '../../errors.js';
/**
 * Kysely's SQLite driver, with a bounded wait for its one connection. Kysely serializes every query and
 * transaction on that connection with a mutex, and waits for it without limit: a read queued behind a long
 * transaction waits for all of it, and a query issued without `trx` inside `db.transaction()` waits for the
 * transaction that waits for it, forever. Here a wait past `timeout` milliseconds fails with 503
 * `FST_VIEWSET_UNAVAILABLE` (like an exhausted pg pool), so the transaction's work fails, rolls back and
 * frees the connection, and later requests are served.
 */
class BoundedWaitDriver {
    #driver;
    #timeout;
    constructor(driver, timeout) {
        this.#driver = driver;
        this.#timeout = timeout;
    }
    async init() {
        await this.#driver.init();
    }
    async acquireConnection() {
        const pending = this.#driver.acquireConnection();
        return await new Promise((resolve, reject) => {
            let waiting = true;
            const timer = setTimeout(() => {
                waiting = false;
                reject(new ViewsetErrors.Unavailable());
            }, this.#timeout);
            pending.then((connection) => {
                clearTimeout(timer);
                if (waiting)
                    resolve(connection);
                // The caller gave up: hand the connection straight back, or it would stay locked for good.
                else
                    void this.#driver.releaseConnection(connection).catch(() => { });
            }, (error) => {
                clearTimeout(timer);
                if (waiting)
                    reject(error instanceof Error ? error : new Error(String(error)));
            });
        });
    }
    async beginTransaction(connection, settings) {
        await this.#driver.beginTransaction(connection, settings);
    }
    async commitTransaction(connection) {
        await this.#driver.commitTransaction(connection);
    }
    async rollbackTransaction(connection) {
        await this.#driver.rollbackTransaction(connection);
    }
    async savepoint(connection, name, compileQuery) {
        await this.#driver.savepoint?.(connection, name, compileQuery);
    }
    async rollbackToSavepoint(connection, name, compileQuery) {
        await this.#driver.rollbackToSavepoint?.(connection, name, compileQuery);
    }
    async releaseSavepoint(connection, name, compileQuery) {
        await this.#driver.releaseSavepoint?.(connection, name, compileQuery);
    }
    async releaseConnection(connection) {
        await this.#driver.releaseConnection(connection);
    }
    async destroy() {
        await this.#driver.destroy();
    }
}
/**
 * Kysely's SQLite dialect whose driver waits at most `connectionTimeout` milliseconds for the connection
 * (see {@link BoundedWaitDriver}); everything else is Kysely's driver, savepoints included.
 *
 * @example
 * ```ts
 * const dialect = new BoundedSqliteDialect({ database: new Database('app.db') }, 5000)
 * ```
 */
export class BoundedSqliteDialect extends SqliteDialect {
    #timeout;
    constructor(config, connectionTimeout) {
        super(config);
        this.#timeout = connectionTimeout;
    }
    createDriver() {
        const driver = super.createDriver();
        return connectionTimeoutApplies(this.#timeout) ? new BoundedWaitDriver(driver, this.#timeout) : driver;
    }
}
function connectionTimeoutApplies(timeout) {
    return Number.isFinite(timeout) && timeout > 0;
}
//# sourceMappingURL=sqlite-driver.js.map