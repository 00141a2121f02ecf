import { chunks, fieldGroups, inElementOrder } from '../shared/bulk-insert.js'
import type { DialectWrites, WriteScope, WriteTarget } from '../dialect.js'
import type { AnyDatabase, Row } from '../../sql.js'
import { deletedAny, inTransaction, mapKey } from '../../sql.js'
import { canonicalDateTime } from '../shared/date-time.js'
import { inFieldOrder, keyAndScope, sentFields } from '../shared/write-shapes.js'
import { deleteCost } from '../shared/returning-writes.js'

// MySQL has no RETURNING, and MariaDB has none on UPDATE: every write is followed by a read of the
// row in the same transaction. One code path serves both servers, so the path CI runs on MariaDB is
// the one MySQL users get.

/** Prepared statements count placeholders in 16 bits. */
export const mysqlMaxParameters = 65_535

const dateTimeTypes = new Set(['datetime', 'timestamp'])

/**
 * Values as MySQL takes them. mysql2 expands an object into `key = value` pairs and an array into a
 * list, so JSON objects and arrays are sent as JSON text. MySQL takes no `Z` or `+02:00` in a
 * DATETIME or TIMESTAMP, and JSON clients send RFC 3339: those strings become dates, which mysql2
 * writes in UTC (createDatabase sets the session to UTC as well).
 */
function storable ({ catalog }: WriteTarget, values: Row): Row {
  let converted: Row | undefined
  for (const key in values) {
    const value = values[key]
    let stored: unknown = value
    if (typeof value === 'object' && value !== null && !(value instanceof Date) && !(value instanceof Uint8Array)) {
      stored = JSON.stringify(value)
    } else if (typeof value === 'string' && dateTimeTypes.has(catalog?.get(key)?.type ?? '')) {
      // Every RFC 3339 spelling (`+23:59`, `+05`, a lowercase `t`, a leap second), read as shared/date-time.ts does.
      const canonical = canonicalDateTime(value)
      if (canonical !== undefined) stored = new Date(canonical)
    }
    if (stored !== value) {
      converted ??= { ...values }
      converted[key] = stored
    }
  }
  return converted ?? values
}

/** The row with this key, read back after a write (in its transaction): compiled once per table. */
async function readBack (
  db: AnyDatabase,
  { table, key, columns, statements }: WriteTarget,
  id: unknown
): Promise<Row | undefined> {
  const [row] = await statements.rows(db, 'find', key.parts(id), () =>
    db.selectFrom(table).select(columns).where(key.match(id))
  )
  return row
}

/**
 * The row with this key if it is in the scope. MySQL and MariaDB refuse an UPDATE or DELETE whose
 * subquery reads the table being written (error 1093), and a scope may well do that (`owner in (select …)`),
 * so the scope is checked by a read first; `lock`: `FOR UPDATE`, which holds the row until the write's
 * transaction ends, so the scope cannot change in between.
 */
async function inScope (
  db: AnyDatabase,
  { table, key, columns, statements }: WriteTarget,
  id: unknown,
  scope: WriteScope,
  lock: boolean
): Promise<Row | undefined> {
  const shape = `${lock ? 'lock' : 'find'} ${scope.shape}`
  const [row] = await statements.rows(db, shape, keyAndScope(key, id, scope), () => {
    const select = db.selectFrom(table).select(columns).where(key.match(id)).where(scope.where)
    return lock ? select.forUpdate() : select
  })
  return row
}

async function insert (db: AnyDatabase, target: WriteTarget, values: Row): Promise<Row> {
  const { table, key } = target
  const row = storable(target, values)
  const { fields, shape, parameters } = sentFields(row)
  return await inTransaction(db, async (trx) => {
    // No fields: `INSERT INTO t () VALUES ()`, MySQL's spelling of DEFAULT VALUES.
    const { insertId } = await target.statements.execute(trx, `insert ${shape}`, parameters, () =>
      trx.insertInto(table).values(inFieldOrder(fields, row))
    )
    // The key the caller set, else the AUTO_INCREMENT value of this connection's insert (a composite key's one part
    // left unset).
    const unset = key.columns.filter((column) => row[column] === undefined || row[column] === null)
    const [auto] = unset
    const generated = unset.length === 1 && auto !== undefined && insertId !== undefined
    const id = unset.length === 0 ? key.of(row) : generated ? key.of({ ...row, [auto]: insertId }) : undefined
    if (id === undefined) {
      // A programming error, not a request's: an override or beforeWrite left a key without a default unset.
      throw new Error(
        `"${key.columns.join(', ')}" of "${table}" is not AUTO_INCREMENT and was not set, so MySQL cannot read the ` +
          'new row back; set it in beforeWrite or createElement'
      )
    }
    const stored = await readBack(trx, target, id)
    if (stored === undefined) throw new Error(`the row inserted into ${table} was not found by its key`)
    return stored
  })
}

async function insertMany (db: AnyDatabase, target: WriteTarget, rows: readonly Row[]): Promise<Row[]> {
  const { table, key, columns } = target
  return await inTransaction(db, async (trx) => {
    const stored: Row[] = []
    for (const { fields, indexes } of fieldGroups(rows)) {
      for (const chunk of chunks(indexes, fields.length, mysqlMaxParameters)) {
        const sent = chunk.map((index) => storable(target, rows[index] ?? {}))
        let answered: Row[]
        if (fields.length === 0) {
          answered = await Promise.all(sent.map(async () => await insert(trx, target, {})))
        } else {
          const { insertId } = await trx.insertInto(table).values(sent).executeTakeFirstOrThrow()
          if (key.columns.every((column) => fields.includes(column))) {
            answered = await trx.selectFrom(table).select(columns).where(key.matchAny(sent.map((row) => key.of(row))))
              .execute()
          } else {
            if (insertId === undefined || key.composite) {
              throw new Error(
                `"${key.columns.join(', ')}" of "${table}" is not AUTO_INCREMENT and was not set, ` +
                  'so MySQL cannot read the new rows back'
              )
            }
            // No RETURNING: a multi-row INSERT of known length takes consecutive AUTO_INCREMENT values from
            // insertId (every innodb_autoinc_lock_mode), so the rows are the next ones from there.
            answered = await trx
              .selectFrom(table)
              .select(columns)
              .where(key.first, '>=', insertId)
              .orderBy(key.first)
              .limit(sent.length)
              .execute()
          }
        }
        inElementOrder(sent, answered, target, mapKey).forEach((row, at) => {
          stored[chunk[at] ?? 0] = row
        })
      }
    }
    return stored
  })
}

async function update (
  db: AnyDatabase,
  target: WriteTarget,
  id: unknown,
  values: Row,
  scope?: WriteScope
): Promise<Row | undefined> {
  const { table, key } = target
  if (Object.keys(values).length === 0) {
    return scope === undefined ? await readBack(db, target, id) : await inScope(db, target, id, scope, false)
  }
  const row = storable(target, values)
  const { fields, shape, parameters } = sentFields(row)
  return await inTransaction(db, async (trx) => {
    if (scope !== undefined && (await inScope(trx, target, id, scope, true)) === undefined) return undefined
    // affectedRows is 0 for a row that exists but did not change, so the read decides between 200 and 404.
    await target.statements.execute(trx, `update ${shape}`, [...parameters, ...key.parts(id)], () =>
      trx.updateTable(table).set(inFieldOrder(fields, row)).where(key.match(id))
    )
    return await readBack(trx, target, id)
  })
}

async function remove (db: AnyDatabase, target: WriteTarget, id: unknown, scope?: WriteScope): Promise<boolean> {
  const { table, key } = target
  const remove = async (on: AnyDatabase) =>
    deletedAny(
      await target.statements.execute(on, 'delete', key.parts(id), () => on.deleteFrom(table).where(key.match(id)),
        false, deleteCost(target))
    )
  if (scope === undefined) return await remove(db)
  return await inTransaction(db, async (trx) =>
    (await inScope(trx, target, id, scope, true)) === undefined ? false : await remove(trx)
  )
}

/** MySQL's and MariaDB's writes: each one followed by a read of its row, in its transaction. */
export const mysqlWrites: DialectWrites = { insert, insertMany, update, delete: remove, bindable: storable }
