import type { AnyDatabase, Row, WriteTarget } from './dialect.js'

// Shared by the dialects whose INSERT and UPDATE take RETURNING (SQLite >= 3.35, PostgreSQL):
// one statement writes and reads back, so the row is the one stored, with no second round trip.

export async function insertReturning (db: AnyDatabase, { table, columns }: WriteTarget, values: Row): Promise<Row> {
  const insert = db.insertInto(table)
  const query = Object.keys(values).length === 0 ? insert.defaultValues() : insert.values(values)
  return await query.returning(columns).executeTakeFirstOrThrow()
}

export async function updateReturning (db: AnyDatabase, { table, primaryKey, columns }: WriteTarget, id: unknown, values: Row): Promise<Row | undefined> {
  if (Object.keys(values).length === 0) {
    return await db.selectFrom(table).select(columns).where(primaryKey, '=', id).executeTakeFirst()
  }
  return await db.updateTable(table).set(values).where(primaryKey, '=', id).returning(columns).executeTakeFirst()
}
