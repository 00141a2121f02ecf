import type { CompiledQuery, KyselyConfig } from 'kysely'
import { LruCache } from '../../execution/lru-cache.js'
import { replaceMethod } from '../shared/replace-method.js'
import { compiledStatementKinds } from '../shared/connection.js'
import type { DirectResult } from '../shared/connection.js'
import { objectRows } from './postgres-rows.js'
import type { ResultFields } from './postgres-rows.js'

// Statements prepared once per PostgreSQL connection opened by createDatabase. The viewset compiles its SQL
// once (at registration, or once per query shape) and runs it with `db.executeQuery`: a compiled query is
// sent as a named statement, so that each connection parses and plans it once and then only binds and
// executes it; a compiled SELECT, INSERT, UPDATE or DELETE goes straight to the pool.

/** Named (prepared) statements one PostgreSQL connection keeps; past it, the least recently used is deallocated. */
export const maxNamedStatements = 256

/**
 * SQL texts compiled by Kysely (never raw SQL), which connections may prepare. Bounded like every cache: a
 * text that falls out runs unnamed (parsed each time) until it is compiled again.
 */
const preparableTexts = new LruCache<string, true>(2048)

/** Records that the SQL of a compiled query may become a named statement. */
export function markPreparable (compiled: CompiledQuery): void {
  if (compiledStatementKinds.has(compiled.query.kind) && !preparableTexts.has(compiled.sql)) {
    preparableTexts.set(compiled.sql, true)
  }
}

/** pg's callback for a query's outcome: an error, or the result. */
export type QueryCallback<R> = (error: Error | null | undefined, result: R) => void

/** The part of a pg `Result` read here: its rows as arrays (postgres-rows.ts). */
interface PgResult {
  readonly command: string
  readonly rowCount: number | null
  readonly fields?: ResultFields
  readonly rows: readonly unknown[]
}

/** A query of the pool shortcut: its rows asked as arrays, and made into objects by postgres-rows.ts. */
class ArrayRowsQuery {
  readonly rowMode = 'array'
  constructor (readonly text: string, readonly values: unknown[]) {}
}

/** The part of a pooled pg `Client` that direct reads use. */
interface PooledClient {
  query: (config: ArrayRowsQuery, callback: QueryCallback<PgResult>) => void
  release: () => void
}

/** The part of a pg `Pool` that direct reads use: its checkout in callback form. */
export interface PgPool {
  connect: (callback: (error: Error | undefined, client: PooledClient | undefined) => void) => void
  readonly ending: boolean
}

/**
 * Runs a pg query in its callback form, under a promise of our own. pg's promise form (8.23) keeps results
 * reachable for longer, which under load promotes them to the old generation and slows a loop of pooled
 * queries (benchmarks/analysis.md#pg-callback-form).
 */
function viaCallback<R> (send: (callback: QueryCallback<R>) => void): Promise<R> {
  return new Promise((resolve, reject) => {
    send((error, result) => {
      if (error === null || error === undefined) resolve(result)
      else reject(error)
    })
  })
}

/** A pg `Pool` a user opened: direct reads, and the event each client checkout emits. */
export interface UserPgPool extends PgPool {
  on: (event: 'acquire', listener: (client: PgClient) => void) => unknown
}

/** Whether a value is a pg `Pool` (what a user hands PostgresDialect). */
export function isPgPool (value: unknown): value is UserPgPool {
  return (
    typeof value === 'object' &&
    value !== null &&
    'connect' in value &&
    typeof value.connect === 'function' &&
    'on' in value &&
    typeof value.on === 'function' &&
    'ending' in value &&
    typeof value.ending === 'boolean'
  )
}

/**
 * Runs one query on a pooled client, all in callbacks under one promise of our own (an awaited
 * `pool.connect()` costs pg-pool's promise and its reactions besides, and on PostgreSQL the cancel hooks run
 * for each). Like `pool.query`; the checkout keeps the caller's request scope for the cancel on client
 * disconnect (carryCancellationToCheckouts in postgres-cancel.ts). The client goes back healthy after an error.
 */
function pooledQuery (pool: PgPool, text: string, values: unknown[]): Promise<DirectResult> {
  return new Promise((resolve, reject) => {
    pool.connect((error, client) => {
      if (client === undefined) {
        reject(error ?? new Error('pg-pool answered a checkout without a client'))
        return
      }
      const settle: QueryCallback<PgResult> = (failure, result) => {
        client.release()
        if (failure !== null && failure !== undefined) reject(failure)
        // What Kysely's PostgreSQL driver answers: a write's affected rows too.
        else {
          const rows = objectRows(text, result.fields, result.rows)
          resolve(affectedBy.has(result.command) ? { rows, numAffectedRows: BigInt(result.rowCount ?? 0) } : { rows })
        }
      }
      try {
        client.query(new ArrayRowsQuery(text, values), settle)
      } catch (thrown) {
        client.release()
        reject(thrown)
      }
    })
  })
}

/** The commands whose row count Kysely's PostgreSQL driver reports as affected rows. */
const affectedBy = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE'])

/** The pool of a PostgreSQL database opened by createDatabase. */
export interface PostgresHandle {
  /** Set when Kysely opens the pool. */
  pool: PgPool | undefined
  readonly named: boolean
  readonly log: KyselyConfig['log']
}

/** A handle for the pool that a Kysely instance will open; `log` is the instance's. */
export function postgresHandle (log: KyselyConfig['log'], named: boolean): PostgresHandle {
  return { pool: undefined, named, log }
}

/**
 * Runs a compiled SELECT, INSERT, UPDATE or DELETE on the pool of a PostgreSQL database opened by createDatabase (as a
 * named statement when they are on: see {@link patchClientQuery}), answering its rows and, for a write, its affected
 * rows, as Kysely's driver does. Outside a transaction Kysely does the same (a pooled connection per query), with a
 * few more promises per query. `undefined` when it must go through Kysely: raw SQL, the pool not open yet or ended,
 * or an array-form `log`.
 */
export function queryDirect (handle: PostgresHandle, compiled: CompiledQuery): Promise<DirectResult> | undefined {
  const { pool, log } = handle
  if (pool === undefined || pool.ending || !compiledStatementKinds.has(compiled.query.kind)) return undefined
  if (log !== undefined && typeof log !== 'function') return undefined
  if (handle.named) markPreparable(compiled)
  const values = compiled.parameters.slice()
  if (log === undefined) return pooledQuery(pool, compiled.sql, values)
  const start = performance.now()
  return pooledQuery(pool, compiled.sql, values).then(
    async (result) => {
      await log({ level: 'query', isStream: false, query: compiled, queryDurationMillis: performance.now() - start })
      return result
    },
    async (error: unknown) => {
      await Promise.resolve(
        log({ level: 'error', error, query: compiled, queryDurationMillis: performance.now() - start })
      ).catch(() => {})
      throw error
    }
  )
}

/** The subset of a pg `Client` that named statements need; the rest is read with guards (see below). */
export interface PgClient {
  query: (...args: never[]) => unknown
}

/** pg's transaction status of a client: 'I' when idle outside a transaction (pg 8.16+; `undefined` before). */
function transactionStatus (client: object): unknown {
  if (!('getTransactionStatus' in client) || typeof client.getTransactionStatus !== 'function') return undefined
  const status: unknown = client.getTransactionStatus() // an untyped method's result, kept unknown
  return status
}

/** pg's own record of the statements a connection parsed, which it checks before sending a Parse. */
function parsedStatements (client: object): object | undefined {
  const connection = 'connection' in client ? client.connection : undefined
  if (typeof connection !== 'object' || connection === null || !('parsedStatements' in connection)) return undefined
  const parsed = connection.parsedStatements
  return typeof parsed === 'object' && parsed !== null ? parsed : undefined // a plain object of name → SQL in pg 8
}

/** The clients whose query is patched. */
const patched = new WeakSet<PgClient>()

/**
 * Patches a pg client's `query` for the queries Kysely sends (SQL text and values, promise form): they run in
 * pg's callback form (see {@link viaCallback}), and with `named`, the SQL of compiled queries (see
 * prepared-kysely.ts) is sent as named (prepared) statements, at most {@link maxNamedStatements} per
 * connection: a connection parses and plans each one once, and a flood of distinct query shapes cannot grow
 * its memory without bound. Evicted statements are deallocated the next time the connection is outside a
 * transaction (a failing DEALLOCATE must never abort a caller's transaction). Names are never reused on a
 * connection, so a late DEALLOCATE cannot hit a newer statement.
 */
export function patchClientQuery (client: PgClient, named: boolean): void {
  // A pool a user opened has clients of its own: each is patched on its first checkout, once.
  if (patched.has(client)) return
  patched.add(client)
  let counter = 0
  let evicted: string[] = []
  const names = new LruCache<string, string>(maxNamedStatements, (name) => { evicted.push(name) }, 'postgres-prepared')
  replaceMethod(client, 'query', (query) => {
    const deallocate = () => {
      const stale = evicted
      evicted = []
      const forget = () => {
        const parsed = parsedStatements(client)
        if (parsed !== undefined) for (const name of stale) Reflect.deleteProperty(parsed, name)
      }
      const done = query(stale.map((name) => `deallocate "${name}"`).join('; '))
      if (done instanceof Promise) done.then(forget, forget)
    }
    // pg's overloads, forwarded as they come but for Kysely's (SQL text, values), and its callback form.
    // The name of a text that may be prepared on this connection; stale names are deallocated first.
    const nameOf = (text: string): string | undefined => {
      let name = names.get(text)
      if (name === undefined && named && preparableTexts.get(text) === true) {
        name = `fastify_viewsets_${++counter}`
        names.set(text, name)
      }
      if (evicted.length > 0 && transactionStatus(client) === 'I') deallocate()
      return name
    }
    return (text, values, callback) => {
      // The pool shortcut's query (pooledQuery), whose callback comes second.
      if (text instanceof ArrayRowsQuery) {
        const name = nameOf(text.text)
        const { rowMode } = text
        return query(name === undefined ? text : { name, text: text.text, values: text.values, rowMode }, values)
      }
      if (typeof text !== 'string' || !Array.isArray(values)) return query(text, values, callback)
      const name = nameOf(text)
      const config = name === undefined ? { text, values } : { name, text, values }
      return typeof callback === 'function'
        ? query(config, callback)
        : viaCallback((done) => {
          query(config, done)
        })
    }
  })
}
