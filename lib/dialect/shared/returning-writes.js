import { sql } from 'kysely';
import { chunks, fieldGroups, inElementOrder } from './bulk-insert.js';
import { deletedAny, firstRow, inTransaction } from '../../sql.js';
import { byConflictKey, keyIn, updateAssignments, upsertGroups } from './upsert.js';
import { inFieldOrder, keyAndScope, scopeShape, sentFields } from './write-shapes.js';
import { andThen } from '../../execution/eventually.js';
// Shared by the dialects whose INSERT and UPDATE take RETURNING (SQLite >= 3.35, PostgreSQL):
// one statement writes and reads back, so the row is the one stored, with no second round trip. Each
// statement is compiled once per set of fields sent and scope (write-shapes.ts).
// Not async (nor are the TableGateway methods that call them): a write answers as its statement does, at once on
// SQLite (eventually.ts), with no async frame per layer.
export function insertReturning(db, { table, columns, statements }, values) {
    const { fields, shape, parameters } = sentFields(values);
    return andThen(statements.execute(db, `insert ${shape}`, parameters, () => {
        const insert = db.insertInto(table);
        return (fields.length === 0 ? insert.defaultValues() : insert.values(inFieldOrder(fields, values))).returning(columns);
    }), ({ rows: [row] }) => {
        if (row === undefined)
            throw new Error(`INSERT INTO ${table} … RETURNING answered no row`);
        return row;
    });
}
// SQLite and PostgreSQL accept a subquery on the table being written, so a scope is checked in the
// write statement itself: `UPDATE … WHERE key AND scope` changes nothing outside it.
export function updateReturning(db, { table, primaryKey, columns, statements }, id, values, scope) {
    const { fields, shape, parameters } = sentFields(values);
    if (fields.length === 0) {
        return andThen(statements.execute(db, `find ${scopeShape(scope)}`, keyAndScope(id, scope), () => {
            const select = db.selectFrom(table).select(columns).where(primaryKey, '=', id);
            return scope === undefined ? select : select.where(scope.where);
        }, true), firstRow);
    }
    return andThen(statements.execute(db, `update ${shape} ${scopeShape(scope)}`, [...parameters, ...keyAndScope(id, scope)], () => {
        const update = db.updateTable(table).set(inFieldOrder(fields, values)).where(primaryKey, '=', id);
        return (scope === undefined ? update : update.where(scope.where)).returning(columns);
    }), firstRow);
}
/** The DELETE of one row by key, in the scope when one is given. */
function deleteOne(db, { table, primaryKey }, id, scope) {
    const remove = db.deleteFrom(table).where(primaryKey, '=', id);
    return scope === undefined ? remove : remove.where(scope.where);
}
// PostgreSQL: DELETE reads back the key it deleted, one statement that answers a row or none, like UPDATE's,
// so it runs on the pool's shortcut as the other writes do.
export function deleteReturning(db, target, id, scope) {
    return andThen(target.statements.execute(db, `delete ${scopeShape(scope)}`, keyAndScope(id, scope), () => deleteOne(db, target, id, scope).returning(target.primaryKey)), hasRows);
}
/** Whether a DELETE … RETURNING answered the row it deleted. */
function hasRows({ rows }) {
    return rows.length > 0;
}
// SQLite: DELETE counts its changes (its shortcut runs a write without RETURNING too): RETURNING would fill an
// ephemeral table on every run.
export function deleteCounting(db, target, id, scope) {
    return andThen(target.statements.execute(db, `delete ${scopeShape(scope)}`, keyAndScope(id, scope), () => deleteOne(db, target, id, scope)), deletedAny);
}
/** Multi-row INSERT ... RETURNING, one per set of fields sent and per `maxParameters`; rows in the order given. */
export async function insertManyReturning(db, target, rows, maxParameters, keyOf) {
    const stored = [];
    for (const { fields, indexes } of fieldGroups(rows)) {
        for (const chunk of chunks(indexes, fields.length, maxParameters)) {
            const sent = chunk.map((index) => rows[index] ?? {});
            // No field at all: VALUES cannot be empty, and DEFAULT VALUES writes one row.
            const answered = fields.length === 0
                ? await Promise.all(sent.map(async () => await insertReturning(db, target, {})))
                : await db.insertInto(target.table).values(sent).returning(target.columns).execute();
            inElementOrder(sent, answered, target, keyOf).forEach((row, at) => {
                stored[chunk[at] ?? 0] = row;
            });
        }
    }
    return stored;
}
// Selected beside the columns, and removed from the row: no schema field is named so.
const createdAlias = 'viewset:created';
/**
 * Upsert for the dialects with `ON CONFLICT (…) DO UPDATE … RETURNING` (SQLite, PostgreSQL): one
 * statement per group of elements. The update branch's `WHERE scope` leaves a row outside the scope
 * unchanged and unreturned, which is how such an element is told (`outside`).
 */
export async function upsertReturning(db, target, elements, rule, options) {
    const { table, primaryKey, columns } = target;
    const { conflictFields, scope } = rule;
    const { created, keyOf, bind } = options;
    const run = async (trx) => {
        const rows = [];
        for (const group of upsertGroups(elements, options.maxParameters)) {
            for (const chunk of group.chunks) {
                const sent = chunk.map((index) => bind(elements[index]?.values ?? {}));
                // SQLite does not say whether a row was inserted: the keys that exist before the write were updated.
                const existing = created === undefined
                    ? new Set((await trx.selectFrom(table).select(primaryKey).where(keyIn(conflictFields, sent)).execute()).map((row) => keyOf(row[primaryKey])))
                    : undefined;
                const set = updateAssignments(group.update, rule, (column) => sql.ref(`excluded.${column}`), (column) => sql.ref(`${table}.${column}`));
                const answered = await trx
                    .insertInto(table)
                    .values(sent)
                    .onConflict((conflict) => {
                    const update = conflict.columns(conflictFields).doUpdateSet(set);
                    return scope === undefined ? update : update.where(scope);
                })
                    .returning(created === undefined ? columns : [...columns, created.as(createdAlias)])
                    .execute();
                const matched = byConflictKey(sent, answered, conflictFields, keyOf);
                if (answered.length < sent.length)
                    return { outside: chunk[Math.max(0, matched.indexOf(undefined))] ?? 0 };
                // Every element got its row: one that did not match its key (a value the driver reads back in another form)
                // takes RETURNING's order.
                const ordered = matched.some((row) => row === undefined) ? answered : matched;
                ordered.forEach((row, at) => {
                    if (row === undefined)
                        return;
                    const isNew = existing === undefined ? row[createdAlias] === true : !existing.has(keyOf(row[primaryKey]));
                    delete row[createdAlias];
                    rows[chunk[at] ?? 0] = { row, created: isNew };
                });
            }
        }
        return { rows };
    };
    // One element and a database that reports creation: one statement, which needs no transaction of its own.
    return elements.length === 1 && created !== undefined ? await run(db) : await inTransaction(db, run);
}
//# sourceMappingURL=returning-writes.js.map