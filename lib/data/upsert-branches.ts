import { keyIn } from '../dialect/shared/upsert.js'
import { ViewsetErrors } from '../errors.js'
import type { AnyDatabase, Row } from '../sql.js'
import { compositeKey } from '../sql.js'
import type { ScopeCondition } from '../query/scope.js'
import { checkRepeatedKeys, duplicateMessage, elementConflict } from './bulk-conflicts.js'
import type { UpsertedRow } from './gateway-results.js'
import type { Precondition } from './precondition.js'
import { retryOnDeadlock } from './retry-on-deadlock.js'
import type { TableGateway } from './table-gateway.js'
import { checkWritten, inTransaction } from './write-check.js'

// An upsert is an insert where it creates and an update where it updates (issue 35, item 4): each element's branch
// is decided by reading the rows with its conflict values, locked (SELECT … FOR UPDATE; SQLite has one writer), in
// the write's transaction; `beforeWrite` is told that branch (POST or BULK, else PATCH) and receives that transaction
// (issue 38 item 8), and the updating branch is a PATCH by key: its rule, If-Match and requireIfMatch (412, 428), its
// version increment and write check. A row a concurrent writer created in the meantime (a unique violation) runs the
// whole upsert again.

/** What an upsert writes, and what it must respect. */
export interface BranchedUpsert {
  /** The writable fields of each element, as sent. */
  readonly sent: readonly Row[]
  /** The elements of one `POST /bulk`: a 409 names its element. */
  readonly bulk: boolean
  /** `resolution=ignore-duplicates`: an element whose row exists is left out (not prepared, written or answered). */
  readonly ignore?: boolean
  /** What `beforeWrite` makes of an element on its branch (`created`: POST or BULK; else PATCH), in `trx`. */
  readonly prepare: (sent: Row, created: boolean, index: number, trx: AnyDatabase) => Promise<Row>
  /** If-Match, or requireIfMatch's 428, of the updating branch; a match on a creating one is a 412. */
  readonly precondition: Precondition | undefined
  /** The rule an updated row must be in (PATCH's: the target and the row written) and a created one (GET's). */
  readonly rules: { readonly updated: ScopeCondition | undefined; readonly created: ScopeCondition | undefined }
  /** With soft delete, "the row lives": only a live row is merged into (a deleted one is a 409 by the unique key, or,
   * under a partial unique index of live rows, no conflict at all), so an upsert never revives one. */
  readonly live?: ScopeCondition | undefined
  /** The check of the foreign keys the elements write (data/foreign-key-check.ts), run in the write's transaction. */
  readonly checkKeys?: (trx: AnyDatabase, values: readonly Row[]) => Promise<void>
  /** The viewset's `afterWrite` of each element's row (`created`: on the creating branch), once all are checked. */
  readonly afterWrite?:
    | ((trx: AnyDatabase, created: boolean, before: Row | null, after: Row) => Promise<void>)
    | undefined
}

/** How many times a branch changed by a concurrent writer runs the upsert again before a 503. */
const attempts = 3

/** The conflict values of a row, as one comparable key. */
type KeyOf = (row: Row) => string

/**
 * Writes each element on its branch and returns the rows as stored, in the order sent, each with whether it was
 * created: all or none. See the file's comment.
 *
 * @example
 * ```ts
 * await upsertBranches(resource, db, { sent, bulk: false, prepare, precondition, rules: { updated, created } })
 * ```
 */
export async function upsertBranches (
  resource: TableGateway,
  db: AnyDatabase,
  upsert: BranchedUpsert
): Promise<UpsertedRow[]> {
  const { conflictFields } = resource.upsertKey
  const valueOf = resource.dialect.values.keyOf
  const keyOf: KeyOf = (row) => compositeKey(row, conflictFields, valueOf)
  if (upsert.bulk) checkRepeatedKeys(upsert.sent, [conflictFields], valueOf)
  for (let attempt = 1; ; attempt++) {
    let created: boolean[] = []
    const write = async () => await inTransaction(db, async (trx) => {
      const found = await existingKeys(resource, trx, upsert, keyOf, true)
      created = upsert.sent.map((row) => !found.has(keyOf(row)))
      // RFC 9110 §13.1.1: no current representation matches an If-Match, `*` included.
      if (upsert.precondition?.kind === 'match' && created.includes(true)) throw new ViewsetErrors.PreconditionFailed()
      const values: Row[] = []
      for (const [index, row] of upsert.sent.entries()) {
        const creates = created[index] === true
        values.push(creates || upsert.ignore !== true ? await upsert.prepare(row, creates, index, trx) : {})
      }
      return await writeBranches(resource, trx, upsert, { created, found, values, keyOf })
    })
    try {
      return db.isTransaction ? await write() : await retryOnDeadlock(resource.dialect, write)
    } catch (error) {
      // A key that appeared since the read was created concurrently: the upsert updates it on its next run.
      const duplicate = error instanceof ViewsetErrors.Conflict || resource.dialect.classify(error)?.kind === 'unique'
      const changed = duplicate && (await appeared(resource, db, upsert, created, keyOf))
      if (!changed) throw error
      if (attempt >= attempts) throw changedTooOften()
    }
  }
}

/** The 503 of an upsert whose rows kept changing under it. */
function changedTooOften (): InstanceType<typeof ViewsetErrors.Unavailable> {
  return new ViewsetErrors.Unavailable('Concurrent writes kept changing the rows of this upsert, try again')
}

/** The primary key of the stored row with each element's conflict values, by {@link KeyOf}; locked with `lock`. */
async function existingKeys (
  resource: TableGateway,
  db: AnyDatabase,
  { sent, live }: Pick<BranchedUpsert, 'sent' | 'live'>,
  keyOf: KeyOf,
  lock: boolean
): Promise<Map<string, unknown>> {
  const { table, key, conflictFields } = resource.upsertKey
  const read = [...new Set([...key.columns, ...conflictFields])]
  const keyed = db.selectFrom(table).select(read).where(keyIn(conflictFields, sent))
  const select = live === undefined ? keyed : keyed.where(live.where)
  const rows = await (lock && resource.dialect.capabilities.rowLocks ? select.forUpdate() : select).execute()
  return new Map(rows.map((row) => [keyOf(row), key.of(row)]))
}

/** Whether a row now has the conflict values of an element that was to be created. */
async function appeared (
  resource: TableGateway,
  db: AnyDatabase,
  { sent, live }: Pick<BranchedUpsert, 'sent' | 'live'>,
  created: readonly boolean[],
  keyOf: KeyOf
): Promise<boolean> {
  const creating = sent.filter((_row, index) => created[index] === true)
  if (creating.length === 0 || db.isTransaction) return false
  return (await existingKeys(resource, db, { sent: creating, live }, keyOf, false)).size > 0
}

/** The branches decided in the transaction: each element's, the keys read (locked), and `beforeWrite`'s values. */
interface Decided {
  readonly created: readonly boolean[]
  readonly found: ReadonlyMap<string, unknown>
  readonly values: readonly Row[]
  readonly keyOf: KeyOf
}

/**
 * In the write's transaction, the rows read and locked: each updating element written as PATCH writes (in key order,
 * so that two bulks lock rows alike), then the creating ones inserted in one statement, then every row checked
 * against its rule.
 */
async function writeBranches (
  resource: TableGateway,
  trx: AnyDatabase,
  upsert: BranchedUpsert,
  { created, found, values, keyOf }: Decided
): Promise<UpsertedRow[]> {
  const { sent, bulk, precondition, rules } = upsert
  await upsert.checkKeys?.(trx, values)
  const rows: Row[] = []
  const updating = sent.flatMap((row, index) =>
    (created[index] === true || upsert.ignore === true ? [] : [{ index, key: keyOf(row) }]))
  updating.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  // With afterWrite, each updated row is read (locked) before its write: the `before` it is told.
  const before: Array<Row | null> = []
  const remember = upsert.afterWrite === undefined
    ? undefined
    : (index: number) => async (_trx: AnyDatabase, row: Row | null) => { before[index] = row }
  for (const { index, key } of updating) {
    const row = await resource.update(
      trx, found.get(key), values[index] ?? {}, rules.updated, precondition, undefined, undefined, remember?.(index))
    // The conflicting row is outside the PATCH rule: the 409 of a duplicate, as without the header.
    if (row === undefined) throw conflictOf(resource, bulk ? index : undefined)
    rows[index] = row
  }
  const creating = sent.flatMap((_row, index) => (created[index] === true ? [index] : []))
  const inserted = creating.map((index) => values[index] ?? {})
  if (inserted.length > 0) {
    const stored = bulk
      ? await inElements(creating, resource.insertMany(trx, inserted))
      : [await resource.insert(trx, inserted[0] ?? {})]
    creating.forEach((index, position) => { rows[index] = stored[position] ?? {} })
  }
  // The write check of every row written, before the commit: a bulk's 403 names its first element outside its rule.
  const ruleOf = (index: number) => (created[index] === true ? rules.created : rules.updated)
  await checkWritten(trx, resource.upsertKey, resource.dialect.values.keyOf, { rows, ruleOf, bulk })
  // Ignoring duplicates, the rows written are the created ones; else every element's.
  const written = upsert.ignore === true ? creating : sent.map((_row, index) => index)
  for (const index of upsert.afterWrite === undefined ? [] : written) {
    const creates = created[index] === true
    await upsert.afterWrite?.(trx, creates, creates ? null : (before[index] ?? null), rows[index] ?? {})
  }
  return written.map((index) => ({ row: rows[index] ?? {}, created: created[index] === true }))
}

/** The 409 of a conflicting row outside the rule (`element`: the bulk element it is about). */
function conflictOf (resource: TableGateway, element: number | undefined): InstanceType<typeof ViewsetErrors.Conflict> {
  const { conflictFields } = resource.upsertKey
  const detail = `A row with the same ${conflictFields.join(', ')} already exists`
  return element === undefined
    ? new ViewsetErrors.Conflict(detail)
    : elementConflict(detail, element, conflictFields, duplicateMessage)
}

/** A bulk insert of some elements, its 409 renamed to name them as the body numbers them (`/3/email`). */
async function inElements (indexes: readonly number[], insert: Promise<Row[]>): Promise<Row[]> {
  try {
    return await insert
  } catch (error) {
    if (!(error instanceof ViewsetErrors.Conflict) || error.errors === undefined) throw error
    const sentAt = (at: string) => String(indexes[Number(at)] ?? at)
    const renumber = (text: string) => text.replace(/^\/(\d+)\//, (_all, at: string) => `/${sentAt(at)}/`)
    const detail = error.message.replace(/\(element (\d+)\)$/, (_all, at: string) => `(element ${sentAt(at)})`)
    throw new ViewsetErrors.Conflict(detail, error.errors.map((entry) => ({ ...entry, field: renumber(entry.field) })))
  }
}
