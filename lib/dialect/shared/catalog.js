/**
 * Whether `column` identifies one row: the single-column primary key, or a NOT NULL column with a
 * single-column unique constraint or plain unique index.
 */
export function isRowKey(table, column) {
    if (table.primaryKey.length === 1 && table.primaryKey[0] === column)
        return true;
    const info = table.columns.find((entry) => entry.name === column);
    if (info === undefined || info.nullable)
        return false;
    return table.unique.some((columns) => columns.length === 1 && columns[0] === column);
}
/** The values of a `CHECK (column IN ('a', 'b'))` or `column = ANY (ARRAY['a', 'b'])` constraint, if it is one. */
export function checkInList(check, column) {
    const quoted = `(?:"${column}"|\`${column}\`|\\[${column}\\]|${column})`;
    const list = new RegExp(`^\\s*\\(*\\s*${quoted}\\s*\\)*(?:::[\\w ]+)?\\s*\\)*\\s*(?:in\\s*\\(|=\\s*any\\s*\\(+\\s*array\\s*\\[)(.*)$`, 'is').exec(check)?.[1];
    if (list === undefined)
        return undefined;
    const values = [...list.matchAll(/'((?:[^']|'')*)'/g)].map((match) => (match[1] ?? '').replaceAll("''", "'"));
    return values.length === 0 ? undefined : values;
}
/** Why `primaryKey` cannot address one row of `table` through the given methods, naming the option at fault. */
export function rowKeyProblem(table, column, explicit, methods) {
    if (table.view) {
        // A view has no key in the catalog: the user vouches for one, and only reads go through it.
        if (!explicit || !table.columns.some((entry) => entry.name === column)) {
            return {
                option: 'primaryKey',
                message: `"${table.name}" is a view: name a column that identifies its rows with primaryKey`,
            };
        }
        const writes = methods.filter((method) => method !== 'LIST' && method !== 'GET');
        return writes.length === 0
            ? undefined
            : {
                option: 'methods',
                message: `"${table.name}" is a view, which serves LIST and GET only; remove ${writes.join(', ')}`,
            };
    }
    if (isRowKey(table, column))
        return undefined;
    const key = table.primaryKey.length === 0 ? 'no primary key' : `the primary key (${table.primaryKey.join(', ')})`;
    return {
        option: 'primaryKey',
        message: `"${column}" does not identify one row of "${table.name}" (${key}): use the single-column primary key ` +
            'or a NOT NULL column with a unique constraint or plain unique index',
    };
}
/**
 * Why `conflictFields` cannot choose the row an upsert merges into, or `undefined`: it must be exactly the
 * columns of one unique constraint or plain unique index (in any order), none of them read-only. With
 * `onAnyKey` (MySQL's `ON DUPLICATE KEY UPDATE`, which fires on whichever unique key conflicts), it must
 * also be the table's only unique key besides an AUTO_INCREMENT one.
 */
export function conflictKeyProblem(table, fields, writable, onAnyKey) {
    const readOnly = fields.filter((field) => !writable.includes(field));
    if (readOnly.length > 0) {
        return `${readOnly.join(', ')} ${readOnly.length === 1 ? 'is' : 'are'} read-only (or not a column): ` +
            'an upsert matches rows on fields the body sends';
    }
    const same = (columns) => columns.length === fields.length && columns.every((column) => fields.includes(column));
    const key = table.unique.find(same);
    if (key === undefined) {
        const keys = table.unique.map((columns) => `(${columns.join(', ')})`).join(', ');
        return `(${fields.join(', ')}) is not the set of columns of a unique constraint or plain unique index ` +
            `of "${table.name}" (${keys === '' ? 'it has none' : `its unique keys: ${keys}`})`;
    }
    if (!onAnyKey)
        return undefined;
    const numbered = (columns) => columns.length === 1 && table.columns.some((column) => column.name === columns[0] && column.autoIncrement);
    const others = [
        ...(table.primaryKey.length > 0 ? [table.primaryKey] : []),
        ...table.unique.filter((columns) => columns !== key),
    ].filter((columns) => !numbered(columns));
    if (others.length === 0)
        return undefined;
    return `on MySQL and MariaDB, ON DUPLICATE KEY UPDATE fires on any unique key, so (${fields.join(', ')}) ` +
        `must be the only unique key of "${table.name}" besides an AUTO_INCREMENT key; ` +
        `it also has ${others.map((columns) => `(${columns.join(', ')})`).join(', ')}`;
}
//# sourceMappingURL=catalog.js.map