/**
 * The elements grouped by the set of fields they send: one multi-row INSERT per group, so that a field an
 * element leaves out gets the database's default (a multi-row VALUES has no "left out" per row).
 */
export function fieldGroups(rows) {
    const groups = new Map();
    rows.forEach((row, index) => {
        const fields = Object.keys(row).sort();
        const key = JSON.stringify(fields);
        const group = groups.get(key);
        if (group === undefined)
            groups.set(key, { fields, indexes: [index] });
        else
            group.indexes.push(index);
    });
    return [...groups.values()];
}
/** `indexes` cut so that one statement binds at most `maxParameters` values (`fields` per row). */
export function chunks(indexes, fields, maxParameters) {
    const size = Math.max(1, Math.floor(maxParameters / Math.max(1, fields)));
    const cut = [];
    for (let start = 0; start < indexes.length; start += size)
        cut.push(indexes.slice(start, start + size));
    return cut;
}
/** A key as a sortable number, when it is an integer (a number, or the digits of a bigint). */
function integerKey(value) {
    if (typeof value === 'number' && Number.isInteger(value))
        return BigInt(value);
    if (typeof value === 'bigint')
        return value;
    if (typeof value === 'string' && /^-?\d+$/.test(value))
        return BigInt(value);
    return undefined;
}
/**
 * The stored rows of one statement in the order of its elements. A RETURNING (or read-back) list has no
 * guaranteed order, so rows are matched by key: by the key each element sent, else by the generated
 * integer keys, which one statement hands out in the order of its VALUES. A key of another kind
 * (a random UUID default) keeps the database's order.
 */
export function inElementOrder(sent, stored, { primaryKey }, keyOf) {
    if (sent.every((row) => row[primaryKey] !== undefined && row[primaryKey] !== null)) {
        const byKey = new Map(stored.map((row) => [keyOf(row[primaryKey]), row]));
        return sent.map((row) => byKey.get(keyOf(row[primaryKey])) ?? row);
    }
    const keys = stored.map((row) => integerKey(row[primaryKey]));
    if (keys.some((key) => key === undefined))
        return [...stored];
    return stored
        .map((row, index) => ({ row, key: keys[index] ?? 0n }))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .map(({ row }) => row);
}
//# sourceMappingURL=bulk-insert.js.map