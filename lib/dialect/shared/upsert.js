import { sql } from 'kysely';
import { chunks } from './bulk-insert.js';
import { compositeKey } from '../../sql.js';
// A scope binds values of its own in every statement: keep room for them under the parameter limit.
const scopeParameters = 1000;
/**
 * The elements grouped by the columns they insert and the columns their update branch writes (a
 * multi-row VALUES has one column list, and ON CONFLICT one SET), each group cut to the parameter limit.
 * The update columns are only ones the element inserts: an update reads them from the inserted row.
 */
export function upsertGroups(elements, maxParameters) {
    const groups = new Map();
    elements.forEach(({ values, update }, index) => {
        const fields = Object.keys(values).sort();
        const written = update.filter((column) => Object.hasOwn(values, column)).sort();
        const key = JSON.stringify([fields, written]);
        const group = groups.get(key);
        if (group === undefined)
            groups.set(key, { fields, update: written, indexes: [index] });
        else
            group.indexes.push(index);
    });
    const limit = Math.max(1, maxParameters - scopeParameters);
    return [...groups.values()].map(({ fields, update, indexes }) => ({
        fields,
        update,
        chunks: chunks(indexes, fields.length, limit),
    }));
}
/**
 * The update branch's SET: each column from the row the statement tried to insert (`inserted(column)`:
 * `excluded.name`, MySQL's `VALUES(name)`), and the version incremented (`current(column)`: the stored
 * value). A SET cannot be empty: with nothing to write, the first conflict column is set to itself, so
 * the row is still locked and read back.
 */
export function updateAssignments(update, rule, inserted, current) {
    const set = {};
    for (const column of update)
        set[column] = inserted(column);
    const { versionField, conflictFields } = rule;
    if (versionField !== undefined)
        set[versionField] = sql `${current(versionField)} + 1`;
    const [first] = conflictFields;
    if (Object.keys(set).length === 0 && first !== undefined)
        set[first] = current(first);
    return set;
}
/** `WHERE` the rows whose `columns` hold the values of one of `rows`: what an upsert of them conflicts with. */
export function keyIn(columns, rows) {
    return (eb) => {
        const [only] = columns;
        if (columns.length === 1 && only !== undefined) {
            return eb(eb.ref(only), 'in', rows.map((row) => row[only]));
        }
        return eb.or(rows.map((row) => eb.and(columns.map((column) => eb(eb.ref(column), '=', row[column])))));
    };
}
/**
 * The stored rows in the order of the elements, matched by their `conflictFields` (the update branch writes
 * them as sent, so a stored key reads as the element's); `undefined` for an element that got no row.
 */
export function byConflictKey(elements, stored, conflictFields, keyOf) {
    const byKey = new Map(stored.map((row) => [compositeKey(row, conflictFields, keyOf), row]));
    const rows = elements.map((values) => byKey.get(compositeKey(values, conflictFields, keyOf)));
    // A key the driver answers in another form (a date, a number as text): one element has one row.
    if (elements.length === 1 && stored.length === 1 && rows[0] === undefined)
        return [...stored];
    return rows;
}
/**
 * The elements in the order of their conflict keys: two bulk upserts of the same keys then lock the rows in
 * one order, whatever order their clients sent, and never wait on each other in a cycle.
 */
export function keyOrder(elements, conflictFields, keyOf) {
    const keyed = elements.map((element, index) => {
        return { element, index, key: compositeKey(element.values, conflictFields, keyOf) };
    });
    // Any total order does, as long as every request uses the same one: the keys' text by code unit.
    keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.index - b.index));
    return { sorted: keyed.map(({ element }) => element), sent: keyed.map(({ index }) => index) };
}
/** Rows written in key order ({@link keyOrder}) put back in the order their elements were sent. */
export function inOrderSent(rows, { sent }) {
    const answered = new Array(rows.length);
    rows.forEach((row, index) => {
        answered[sent[index] ?? index] = row;
    });
    return answered;
}
//# sourceMappingURL=upsert.js.map