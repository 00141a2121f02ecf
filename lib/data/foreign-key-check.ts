import type { ViewsetDialect } from '../dialect/dialect.js'
import type { CatalogForeignKey } from '../dialect/shared/catalog.js'
import type { AnyDatabase, Row } from '../sql.js'
import { ViewsetErrors } from '../errors.js'
import type { Eventually } from '../execution/eventually.js'
import type { ScopeCondition } from '../query/scope.js'
import { RelationRuleSlot } from '../relations/relation-rule.js'
import type { RuleRequest } from '../relations/relation-rule.js'
import type { RulesFrom } from '../relations/config.js'
import { elementConflict } from './bulk-conflicts.js'
import { retryOnDeadlock } from './retry-on-deadlock.js'

// A written foreign key must point to a row the caller may read (Hasura's insert check, PostgreSQL's
// WITH CHECK): a key to a row the target table's GET rule hides answers exactly as a key to no row does,
// so neither the row's existence nor its values leak. The library checks such keys itself, before the write
// and in its transaction (the target rows locked where the database has row locks): the database's own
// foreign-key error differs by dialect, and would tell a missing row from a hidden one.

/** Keys checked per statement: under every database's parameter limit with the rule's values. */
const keysPerCheck = 500

/** What a field error says of a key to no row, as the database's own fault is answered (bulk-conflicts.ts). */
const missingMessage = 'refers to a row that does not exist'

/** One single-column foreign key of the table, and the rule of the table it references. */
interface CheckedKey {
  readonly column: string
  readonly table: string
  readonly references: string
  readonly rule: RelationRuleSlot
}

/** A key's rule for one request, when it has one. */
interface RuledKey {
  readonly key: CheckedKey
  readonly condition: ScopeCondition
}

/**
 * The foreign keys a viewset's writes check against the GET rule of the tables they reference. Its rule slots
 * are resolved with the relations' (mount/relation-rules.ts) once the application is ready.
 *
 * @example
 * ```ts
 * const keys = new ForeignKeyCheck('tasks', catalog.foreignKeys, {}, dialect)
 * await keys.around(db, [values], { request, token }, false, (trx) => insert(trx, values))
 * ```
 */
export class ForeignKeyCheck {
  readonly slots: readonly RelationRuleSlot[]
  readonly #keys: readonly CheckedKey[]
  readonly #dialect: ViewsetDialect

  /** `rulesFrom`: by foreign-key column, the `rulesFrom` of a `selectRelated` relation declared over it. */
  constructor (
    table: string,
    foreignKeys: readonly CatalogForeignKey[],
    rulesFrom: Readonly<Record<string, RulesFrom<unknown> | undefined>>,
    dialect: ViewsetDialect
  ) {
    const keys: CheckedKey[] = []
    for (const foreignKey of foreignKeys) {
      const [column, ...more] = foreignKey.columns
      const [references] = foreignKey.references
      // A composite key is left to the database: no rule reaches a row by part of its key.
      if (column === undefined || references === undefined || more.length > 0) continue
      const path = `the foreign key ${table}.${column}`
      const rule = new RelationRuleSlot(path, foreignKey.table, foreignKey.table, rulesFrom[column], 'GET')
      keys.push({ column, table: foreignKey.table, references, rule })
    }
    this.#keys = keys
    this.#dialect = dialect
    this.slots = keys.map((key) => key.rule)
  }

  /** The keys `rows` write whose table has a rule for `request`: those the write must check. */
  #ruled (db: AnyDatabase, rows: readonly Row[], request: RuleRequest): RuledKey[] {
    const ruled: RuledKey[] = []
    for (const key of this.#keys) {
      if (!rows.some((row) => row[key.column] !== undefined && row[key.column] !== null)) continue
      const condition = key.rule.condition(db, request, key.table)
      if (condition !== undefined) ruled.push({ key, condition })
    }
    return ruled
  }

  /**
   * The check of the foreign keys `rows` write, to run in the write's transaction before it (`bulk`: a 409 names
   * the first element at fault), or `undefined` when no key they write has a rule for `request`.
   */
  checkOf (
    db: AnyDatabase,
    rows: readonly Row[],
    request: RuleRequest,
    bulk: boolean
  ): ((trx: AnyDatabase) => Promise<void>) | undefined {
    const ruled = this.#ruled(db, rows, request)
    return ruled.length === 0 ? undefined : async (trx) => { await this.#check(trx, rows, ruled, bulk) }
  }

  /**
   * Runs `write` with the foreign keys of `rows` checked first ({@link checkOf}), in its transaction (the
   * caller's, or one of its own, run again after a deadlock): a key to a row the caller may not read, or to
   * none, is the 409 of a key to no row, and nothing is written. With no key to check, `write` runs on `db` as
   * it is, and answers as it does (at once where it does: execution/eventually.ts).
   */
  around<T>(
    db: AnyDatabase,
    rows: readonly Row[],
    request: RuleRequest,
    bulk: boolean,
    write: (db: AnyDatabase) => Eventually<T>
  ): Eventually<T> {
    const check = this.checkOf(db, rows, request, bulk)
    if (check === undefined) return write(db)
    const checked = async (trx: AnyDatabase): Promise<T> => {
      await check(trx)
      return await write(trx)
    }
    if (db.isTransaction) return checked(db)
    return retryOnDeadlock(this.#dialect, async () => await db.transaction().execute(checked))
  }

  /**
   * Whether the row that `value` in `column` refers to exists and the caller's `'GET'` rule of its table admits it:
   * the parent of a nested viewset (mount/parent-binding.ts), checked as a written key is. `undefined` when
   * `column` is no single-column foreign key of the table.
   */
  async admits (db: AnyDatabase, column: string, value: unknown, request: RuleRequest): Promise<boolean | undefined> {
    const key = this.#keys.find((candidate) => candidate.column === column)
    if (key === undefined) return undefined
    const condition = key.rule.condition(db, request, key.table)
    const select = db.selectFrom(key.table).select(key.references)
      .where(key.references, '=', this.#dialect.values.parameter(value))
    const row = await (condition === undefined ? select : select.where(condition.where)).executeTakeFirst()
    return row !== undefined
  }

  /** The table and column a single-column foreign key refers to, or `undefined` when `column` is none. */
  referenceOf (column: string): { readonly table: string; readonly column: string } | undefined {
    const key = this.#keys.find((candidate) => candidate.column === column)
    return key === undefined ? undefined : { table: key.table, column: key.references }
  }

  /** Throws the 409 of the first key (in the table's order) that some row points outside its rule, or to no row. */
  async #check (trx: AnyDatabase, rows: readonly Row[], ruled: readonly RuledKey[], bulk: boolean): Promise<void> {
    const { keyOf } = this.#dialect.values
    for (const { key, condition } of ruled) {
      const wanted = new Map<unknown, unknown>()
      for (const row of rows) {
        const value = row[key.column]
        if (value !== undefined && value !== null) wanted.set(keyOf(value), value)
      }
      const admitted = await this.#admitted(trx, key, condition, [...wanted.values()])
      const index = rows.findIndex((row) => {
        const value = row[key.column]
        return value !== undefined && value !== null && !admitted.has(keyOf(value))
      })
      if (index === -1) continue
      const detail = `The ${key.column} ${missingMessage}`
      throw bulk ? elementConflict(detail, index, [key.column], missingMessage) : new ViewsetErrors.Conflict(detail)
    }
  }

  /** The keys among `values` of rows of the key's table in its rule: one statement per 500 distinct keys. */
  async #admitted (
    trx: AnyDatabase,
    key: CheckedKey,
    condition: ScopeCondition,
    values: readonly unknown[]
  ): Promise<Set<unknown>> {
    const { keyOf, parameter } = this.#dialect.values
    const admitted = new Set<unknown>()
    for (let start = 0; start < values.length; start += keysPerCheck) {
      const chunk = values.slice(start, start + keysPerCheck).map((value) => parameter(value))
      const select = trx.selectFrom(key.table).select(key.references)
        .where(key.references, 'in', chunk).where(condition.where)
      // Locked until the write commits: the row cannot leave the rule, or go, between the check and the write.
      const rows = await (this.#dialect.capabilities.rowLocks ? select.forUpdate() : select).execute()
      for (const row of rows) admitted.add(keyOf(row[key.references]))
    }
    return admitted
  }
}
