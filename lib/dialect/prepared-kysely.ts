import { isCompilable, Kysely } from 'kysely'
import type { Compilable, CompiledQuery, KyselyConfig, QueryId, QueryResult } from 'kysely'
import type { DirectExecutor } from './connection.js'

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
export class PreparedKysely<DB> extends Kysely<DB> {
  readonly #direct: DirectExecutor

  constructor (config: KyselyConfig, direct: DirectExecutor) {
    super(config)
    this.#direct = direct
  }

  override async executeQuery<R> (query: CompiledQuery<R> | Compilable<R>, queryId?: QueryId): Promise<QueryResult<R>> {
    const compiled = isCompilable(query) ? query.compile() : query
    const rows = this.#direct(compiled)
    if (rows !== undefined) return { rows: await rows as R[] } // the caller's compiled query types its rows as R, as Kysely's executor trusts it
    return await (queryId === undefined ? super.executeQuery(compiled) : super.executeQuery(compiled, queryId))
  }
}
