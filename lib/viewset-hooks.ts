import type { Static, TObject } from '@sinclair/typebox'
import type { Transaction, Updateable } from 'kysely'
import type { AfterWriteFunction, AfterWriteMethod, BeforeWriteFunction, RowChange, RowContext } from './options.js'
import type { WriteMethod } from './options.js'
import { ViewsetTable } from './viewset-table.js'
import type { TableOptions } from './viewset-table.js'
import type { KeyFields } from './requests.js'

// The write hooks a viewset calls around each write, `beforeWrite` and `afterWrite`: each calls its option by
// default, and a subclass overrides either. `Viewset` extends this class.

/** The hooks' options, as the viewset's options give them. */
export interface WriteHookOptions<DB, TB extends keyof DB & string, S extends TObject> extends TableOptions<DB, TB, S> {
  readonly beforeWrite?: BeforeWriteFunction<DB, TB> | undefined
  readonly afterWrite?: AfterWriteFunction<DB, Static<S>> | undefined
}

/**
 * The write hooks of a viewset, over its table helpers. See `Viewset`.
 *
 * @example
 * ```ts
 * class Items extends Viewset<DB, 'items', typeof Item> {
 *   override beforeWrite (values: Updateable<DB['items']>) { return { ...values, touched: true } }
 * }
 * ```
 */
export class ViewsetHooks<
  DB, TB extends keyof DB & string, S extends TObject, K extends KeyFields<S> | undefined = undefined
> extends ViewsetTable<DB, TB, S, K> {
  readonly #beforeWrite: BeforeWriteFunction<DB, TB> | undefined
  readonly #afterWrite: AfterWriteFunction<DB, Static<S>> | undefined

  constructor (options: WriteHookOptions<DB, TB, S>, primaryKey: string, columns: readonly string[]) {
    super(options, primaryKey, columns)
    this.#beforeWrite = options.beforeWrite
    this.#afterWrite = options.afterWrite
  }

  /**
   * What POST, BULK, PUT and PATCH write: receives the writable fields the body sent (for PATCH only those;
   * read-only fields never) after validation, and returns the values to write, which may set read-only
   * fields and columns that are not in the schema. Runs inside the write's transaction, `trx`: what it reads
   * through it is consistent with the write, and the helpers it calls (`this.query()` …) read through it too.
   * Throw a `ViewsetErrors` error to answer it; nothing is written then. Calls the `beforeWrite` option by default
   * (else returns the values as they are).
   *
   * @example
   * ```ts
   * override async beforeWrite (
   *   values: Updateable<DB['items']>, { token }: RowContext<WriteMethod>, trx: Transaction<DB>
   * ) {
   *   await trx.selectFrom('owners').select('id').where('id', '=', token?.sub ?? '').forUpdate().execute()
   *   return { ...values, owner: token?.sub }
   * }
   * ```
   */
  beforeWrite (
    values: Updateable<DB[TB]>,
    context: RowContext<WriteMethod>,
    trx: Transaction<DB>
  ): Updateable<DB[TB]> | Promise<Updateable<DB[TB]>> {
    return this.#beforeWrite === undefined ? values : this.#beforeWrite(values, context, trx)
  }

  /**
   * Runs after each row a write changed (POST, BULK, PUT, PATCH, DELETE, each branch of an upsert), inside the
   * write's transaction and after its rule's check: `before` is `null` for a created row, `after` `null` for a
   * deleted one, both as the database holds them. What it writes through `trx` commits or rolls back with the
   * write; a `ViewsetErrors` error it throws answers that error, and nothing is written. Calls the `afterWrite`
   * option by default; a viewset with neither runs no extra statement.
   *
   * @example
   * ```ts
   * override async afterWrite ({ method }: RowContext<AfterWriteMethod>, change: RowChange<Item>, trx: Kysely<DB>) {
   *   await trx.insertInto('audit').values({ method, row: JSON.stringify(change.after ?? change.before) }).execute()
   * }
   * ```
   */
  afterWrite (
    context: RowContext<AfterWriteMethod>,
    change: RowChange<Static<S>>,
    trx: Transaction<DB>
  ): void | Promise<void> {
    return this.#afterWrite?.(context, change, trx)
  }
}
