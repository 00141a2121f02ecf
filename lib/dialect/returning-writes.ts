import type { Expression, SqlBool } from 'kysely'
import { chunks, fieldGroups, inElementOrder } from './bulk-insert.js'
import type { AnyDatabase, Row, WriteTarget } from './dialect.js'

// Shared by the dialects whose INSERT and UPDATE take RETURNING (SQLite >= 3.35, PostgreSQL):
// one statement writes and reads back, so the row is the one stored, with no second round trip.

export async function insertReturning (db: AnyDatabase, { table, columns }: WriteTarget, values: Row): Promise<Row> {
  const insert = db.insertInto(table)
  const query = Object.keys(values).length === 0 ? insert.defaultValues() : insert.values(values)
  return await query.returning(columns).executeTakeFirstOrThrow()
}

// SQLite and PostgreSQL accept a subquery on the table being written, so a scope is checked in the
// write statement itself: `UPDATE … WHERE key AND scope` changes nothing outside it.

export async function updateReturning (db: AnyDatabase, { table, primaryKey, columns }: WriteTarget, id: unknown, values: Row, scope?: Expression<SqlBool>): Promise<Row | undefined> {
  if (Object.keys(values).length === 0) {
    const select = db.selectFrom(table).select(columns).where(primaryKey, '=', id)
    return await (scope === undefined ? select : select.where(scope)).executeTakeFirst()
  }
  const update = db.updateTable(table).set(values).where(primaryKey, '=', id)
  return await (scope === undefined ? update : update.where(scope)).returning(columns).executeTakeFirst()
}

export async function deleteInScope (db: AnyDatabase, { table, primaryKey }: WriteTarget, id: unknown, scope: Expression<SqlBool>): Promise<boolean> {
  const { numDeletedRows } = await db.deleteFrom(table).where(primaryKey, '=', id).where(scope).executeTakeFirst()
  return numDeletedRows > 0n
}

/** Multi-row INSERT ... RETURNING, one per set of fields sent and per `maxParameters`; rows in the order given. */
export async function insertManyReturning (db: AnyDatabase, target: WriteTarget, rows: readonly Row[], maxParameters: number, keyOf: (value: unknown) => unknown): Promise<Row[]> {
  const stored: Row[] = []
  for (const { fields, indexes } of fieldGroups(rows)) {
    for (const chunk of chunks(indexes, fields.length, maxParameters)) {
      const sent = chunk.map((index) => rows[index] ?? {})
      // No field at all: VALUES cannot be empty, and DEFAULT VALUES writes one row.
      const answered = fields.length === 0
        ? await Promise.all(sent.map(async () => await insertReturning(db, target, {})))
        : await db.insertInto(target.table).values(sent).returning(target.columns).execute()
      inElementOrder(sent, answered, target, keyOf).forEach((row, at) => { stored[chunk[at] ?? 0] = row })
    }
  }
  return stored
}
