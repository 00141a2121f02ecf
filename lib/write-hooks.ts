// The types of what the write hooks receive (`beforeWrite`, `afterWrite`), and the context every hook and rule gets.
import type { FastifyRequest } from 'fastify'
import type { Transaction, Updateable } from 'kysely'
import type { ViewsetMethod } from './methods.js'
import type { ViewsetToken } from './tokens.js'

/**
 * The viewset methods that write a body, and so run `beforeWrite`.
 *
 * @example
 * ```ts
 * const stamp = (values: Updateable<DB['items']>, { method }: RowContext<WriteMethod>) =>
 *   method === 'POST' ? { ...values, version: 1 } : values
 * ```
 */
export type WriteMethod = 'POST' | 'BULK' | 'PUT' | 'PATCH' | 'PATCH_MANY' | 'BULK_PATCH'

/**
 * What `scope` and `beforeWrite` know of a request: the request itself, the claims of the verified bearer
 * token (`null` when no valid token was sent), and the viewset method (never the HTTP verb).
 *
 * @example
 * ```ts
 * function ownerOf ({ token, request }: RowContext): string {
 *   return token?.sub ?? request.ip
 * }
 * ```
 */
export interface RowContext<M extends ViewsetMethod = ViewsetMethod> {
  readonly request: FastifyRequest
  readonly token: ViewsetToken | null
  readonly method: M
}

/**
 * Runs for POST, BULK (each element), PUT, PATCH and each branch of an upsert after validation, before the statement,
 * inside the write's transaction (`trx`): receives the writable fields the body sent and returns what is written,
 * which may set read-only fields and columns outside the schema. What it reads through `trx` is consistent with the
 * write (lock what it counts, and two writers cannot both pass), and what it writes through `trx` commits or rolls back
 * with it. The viewset's helpers it calls read through `trx` too; a query on the app's database (not `trx`) would
 * wait for the connection the write holds on SQLite.
 *
 * @example
 * ```ts
 * beforeWrite: async (values, { token }, trx) => {
 *   const { n } = await trx.selectFrom('tasks').select((eb) => eb.fn.countAll<number>().as('n'))
 *     .where('owner', '=', token?.sub ?? '').executeTakeFirstOrThrow()
 *   if (Number(n) >= 100) throw new ViewsetErrors.Forbidden('Your quota of 100 tasks is used up')
 *   return { ...values, owner: token?.sub }
 * }
 * ```
 */
export type BeforeWriteFunction<DB, TB extends keyof DB> = (
  values: Updateable<DB[TB]>,
  context: RowContext<WriteMethod>,
  trx: Transaction<DB>,
) => Updateable<DB[TB]> | Promise<Updateable<DB[TB]>>

/**
 * The viewset methods that write rows, and so run `afterWrite`, each once per row written.
 *
 * @example
 * ```ts
 * const audited: AfterWriteMethod[] = ['POST', 'PATCH', 'DELETE']
 * ```
 */
export type AfterWriteMethod = WriteMethod | 'DELETE' | 'DELETE_MANY' | 'RESTORE' | 'PURGE'

/**
 * One row a write changed, as the database holds it (the schema's columns): `before` is `null` for a created row,
 * `after` is `null` for a deleted one.
 *
 * @example
 * ```ts
 * const created = (change: RowChange<Item>) => change.before === null
 * ```
 */
export interface RowChange<T> {
  readonly before: T | null
  readonly after: T | null
}

/**
 * Runs after each row a POST, BULK, PUT, PATCH, DELETE or upsert wrote, inside the write's transaction (`trx`),
 * after the rule's write check: what it writes through `trx` commits or rolls back with the write, and a
 * `ViewsetErrors` error it throws answers that error and rolls the write back.
 *
 * @example
 * ```ts
 * afterWrite: async ({ method, token }, { before, after }, trx) => {
 *   await trx.insertInto('audit').values({ method, who: token?.sub ?? null, row_id: (after ?? before)?.id ?? null })
 *     .execute()
 * }
 * ```
 */
export type AfterWriteFunction<DB, T> = (
  context: RowContext<AfterWriteMethod>,
  change: RowChange<T>,
  trx: Transaction<DB>,
) => void | Promise<void>
