import type { CompiledQuery } from 'kysely'
import { nameStatement, readDirect } from '../db-statements.js'
import type { AnyDatabase, Row } from '../dialect/dialect.js'

/**
 * Runs a read compiled at registration with this request's parameters: straight on the connection
 * where createDatabase allows it (SQLite), else through Kysely (as a named statement on PostgreSQL).
 */
export async function readCompiled (db: AnyDatabase, compiled: CompiledQuery<Row>, parameters: readonly unknown[]): Promise<Row[]> {
  return readDirect(db, compiled, parameters) ?? (await db.executeQuery<Row>({ ...compiled, parameters })).rows
}

/** Compiles a query once (at registration) and marks its SQL to be prepared on PostgreSQL connections. */
export function precompile (query: { compile: () => CompiledQuery<unknown> }): CompiledQuery<Row> {
  const compiled = query.compile() as CompiledQuery<Row>
  nameStatement(compiled.sql)
  return compiled
}

/**
 * The SQL that never changes shape, compiled once at registration and executed with new parameters.
 * Compiling on every request costs more than the query itself on short SQLite reads.
 */
export class Statements {
  readonly #byId: CompiledQuery<Row>
  readonly #page: CompiledQuery<Row>
  readonly #deleteById: CompiledQuery<Row>

  constructor (db: AnyDatabase, table: string, primaryKey: string, columns: readonly string[]) {
    // The placeholder values only fix each parameter's position; every call passes its own.
    this.#byId = precompile(db.selectFrom(table).select(columns).where(primaryKey, '=', 0))
    this.#page = precompile(db.selectFrom(table).select(columns).orderBy(primaryKey).limit(1).offset(0))
    this.#deleteById = precompile(db.deleteFrom(table).where(primaryKey, '=', 0))
  }

  /** The row with this key, or `undefined`. */
  async findById (db: AnyDatabase, id: unknown): Promise<Row | undefined> {
    return (await readCompiled(db, this.#byId, [id]))[0]
  }

  /** One page of rows in primary-key order. */
  async page (db: AnyDatabase, limit: number, offset: number): Promise<Row[]> {
    return await readCompiled(db, this.#page, [limit, offset])
  }

  /** Deletes the row with this key; true when there was one. */
  async deleteById (db: AnyDatabase, id: unknown): Promise<boolean> {
    const { numAffectedRows } = await db.executeQuery({ ...this.#deleteById, parameters: [id] })
    return numAffectedRows !== undefined && numAffectedRows > 0n
  }
}
