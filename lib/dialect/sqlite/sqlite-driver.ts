import { SqliteDialect } from 'kysely'
import type { DatabaseConnection, Driver, QueryCompiler, SqliteDialectConfig, TransactionSettings } from 'kysely'
import { ViewsetErrors } from '../../errors.js'

/**
 * Kysely's SQLite driver, with a bounded wait for its one connection. Kysely serializes every query and
 * transaction on that connection with a mutex, and waits for it without limit: a read queued behind a long
 * transaction waits for all of it, and a query issued without `trx` inside `db.transaction()` waits for the
 * transaction that waits for it, forever. Here a wait past `timeout` milliseconds fails with 503
 * `FST_VIEWSET_UNAVAILABLE` (like an exhausted pg pool), so the transaction's work fails, rolls back and
 * frees the connection, and later requests are served.
 */
class BoundedWaitDriver implements Driver {
  readonly #driver: Driver
  readonly #timeout: number

  constructor (driver: Driver, timeout: number) {
    this.#driver = driver
    this.#timeout = timeout
  }

  async init (): Promise<void> {
    await this.#driver.init()
  }

  async acquireConnection (): Promise<DatabaseConnection> {
    const pending = this.#driver.acquireConnection()
    return await new Promise((resolve, reject) => {
      let waiting = true
      const timer = setTimeout(() => {
        waiting = false
        reject(new ViewsetErrors.Unavailable())
      }, this.#timeout)
      pending.then((connection) => {
        clearTimeout(timer)
        if (waiting) resolve(connection)
        // The caller gave up: hand the connection straight back, or it would stay locked for good.
        else void this.#driver.releaseConnection(connection).catch(() => {})
      }, (error: unknown) => {
        clearTimeout(timer)
        if (waiting) reject(error instanceof Error ? error : new Error(String(error)))
      })
    })
  }

  async beginTransaction (connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await this.#driver.beginTransaction(connection, settings)
  }

  async commitTransaction (connection: DatabaseConnection): Promise<void> {
    await this.#driver.commitTransaction(connection)
  }

  async rollbackTransaction (connection: DatabaseConnection): Promise<void> {
    await this.#driver.rollbackTransaction(connection)
  }

  async savepoint (
    connection: DatabaseConnection, name: string, compileQuery: QueryCompiler['compileQuery']
  ): Promise<void> {
    await this.#driver.savepoint?.(connection, name, compileQuery)
  }

  async rollbackToSavepoint (
    connection: DatabaseConnection, name: string, compileQuery: QueryCompiler['compileQuery']
  ): Promise<void> {
    await this.#driver.rollbackToSavepoint?.(connection, name, compileQuery)
  }

  async releaseSavepoint (
    connection: DatabaseConnection, name: string, compileQuery: QueryCompiler['compileQuery']
  ): Promise<void> {
    await this.#driver.releaseSavepoint?.(connection, name, compileQuery)
  }

  async releaseConnection (connection: DatabaseConnection): Promise<void> {
    await this.#driver.releaseConnection(connection)
  }

  async destroy (): Promise<void> {
    await this.#driver.destroy()
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
  readonly #timeout: number

  constructor (config: SqliteDialectConfig, connectionTimeout: number) {
    super(config)
    this.#timeout = connectionTimeout
  }

  override createDriver (): Driver {
    const driver = super.createDriver()
    return connectionTimeoutApplies(this.#timeout) ? new BoundedWaitDriver(driver, this.#timeout) : driver
  }
}

function connectionTimeoutApplies (timeout: number): boolean {
  return Number.isFinite(timeout) && timeout > 0
}
