import { chunks, fieldGroups, inElementOrder } from './bulk-insert.js'
import type { WriteScope, WriteTarget } from '../dialect.js'
import type { AnyDatabase, Row } from '../../sql.js'
import { deletedAny, firstRow } from '../../sql.js'
import { inFieldOrder, keyAndScope, scopeShape, sentFields } from './write-shapes.js'
import { andThen } from '../../execution/eventually.js'
import type { Eventually } from '../../execution/eventually.js'
import type { CostDeclaration } from '../../execution/cost-class.js'

// Shared by the dialects whose INSERT and UPDATE take RETURNING (SQLite >= 3.35, PostgreSQL):
// one statement writes and reads back, so the row is the one stored, with no second round trip. Each
// statement is compiled once per set of fields sent and scope (write-shapes.ts).

// Not async (nor are the TableGateway methods that call them): a write answers as its statement does, at once on
// SQLite (eventually.ts), with no async frame per layer.

export function insertReturning (
  db: AnyDatabase,
  { table, columns, statements }: WriteTarget,
  values: Row
): Eventually<Row> {
  const { fields, shape, parameters } = sentFields(values)
  return andThen(
    statements.execute(db, `insert ${shape}`, parameters, () => {
      const insert = db.insertInto(table)
      return (fields.length === 0 ? insert.defaultValues() : insert.values(inFieldOrder(fields, values))).returning(
        columns
      )
    }),
    ({ rows: [row] }) => {
      if (row === undefined) throw new Error(`INSERT INTO ${table} … RETURNING answered no row`)
      return row
    }
  )
}

// SQLite and PostgreSQL accept a subquery on the table being written, so a scope is checked in the
// write statement itself: `UPDATE … WHERE key AND scope` changes nothing outside it.

export function updateReturning (
  db: AnyDatabase,
  { table, key, columns, statements }: WriteTarget,
  id: unknown,
  values: Row,
  scope?: WriteScope
): Eventually<Row | undefined> {
  const { fields, shape, parameters } = sentFields(values)
  if (fields.length === 0) {
    return andThen(
      statements.execute(
        db,
        `find ${scopeShape(scope)}`,
        keyAndScope(key, id, scope),
        () => {
          const select = db.selectFrom(table).select(columns).where(key.match(id))
          return scope === undefined ? select : select.where(scope.where)
        },
        true
      ),
      firstRow
    )
  }
  return andThen(
    statements.execute(db, `update ${shape} ${scopeShape(scope)}`, [...parameters, ...keyAndScope(key, id, scope)],
      () => {
        const update = db.updateTable(table).set(inFieldOrder(fields, values)).where(key.match(id))
        return (scope === undefined ? update : update.where(scope.where)).returning(columns)
      }),
    firstRow
  )
}

/**
 * A DELETE of one row by key reads and writes that row, and an index entry per foreign key to it, unless one
 * cascades (or no index serves its check): cheap then, as an UPDATE by key is, rather than heavy by its shape.
 */
export function deleteCost ({ deleteCascades }: WriteTarget): CostDeclaration | undefined {
  return deleteCascades === false ? 'cheap' : undefined
}

/** The DELETE of one row by key, in the scope when one is given. */
function deleteOne (db: AnyDatabase, { table, key }: WriteTarget, id: unknown, scope: WriteScope | undefined) {
  const remove = db.deleteFrom(table).where(key.match(id))
  return scope === undefined ? remove : remove.where(scope.where)
}

// DELETE counts its changes: RETURNING would make SQLite fill an ephemeral table on every run, and PostgreSQL describe
// and send a row that pg then parses (both shortcuts run a write without RETURNING too).
export function deleteCounting (
  db: AnyDatabase,
  target: WriteTarget,
  id: unknown,
  scope?: WriteScope
): Eventually<boolean> {
  return andThen(
    target.statements.execute(db, `delete ${scopeShape(scope)}`, keyAndScope(target.key, id, scope), () =>
      deleteOne(db, target, id, scope), false, deleteCost(target)
    ),
    deletedAny
  )
}

/** Multi-row INSERT ... RETURNING, one per set of fields sent and per `maxParameters`; rows in the order given. */
export async function insertManyReturning (
  db: AnyDatabase,
  target: WriteTarget,
  rows: readonly Row[],
  maxParameters: number,
  keyOf: (value: unknown) => unknown
): Promise<Row[]> {
  const stored: Row[] = []
  for (const { fields, indexes } of fieldGroups(rows)) {
    for (const chunk of chunks(indexes, fields.length, maxParameters)) {
      const sent = chunk.map((index) => rows[index] ?? {})
      // No field at all: VALUES cannot be empty, and DEFAULT VALUES writes one row.
      const answered =
        fields.length === 0
          ? await Promise.all(sent.map(async () => await insertReturning(db, target, {})))
          : await db.insertInto(target.table).values(sent).returning(target.columns).execute()
      inElementOrder(sent, answered, target, keyOf).forEach((row, at) => {
        stored[chunk[at] ?? 0] = row
      })
    }
  }
  return stored
}
