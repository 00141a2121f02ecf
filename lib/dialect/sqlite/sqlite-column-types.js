const sqliteDates = {
    date: 'date', datetime: 'date-time', timestamp: 'date-time', timestamptz: 'date-time',
};
/** SQLite through better-sqlite3: no boolean, date or JSON types; text and 0/1 come back. */
export const sqliteColumnTypes = {
    kindOf({ type }) {
        // The column's affinity (https://www.sqlite.org/datatype3.html#determination_of_column_affinity).
        if (type.includes('bool'))
            return 'boolean';
        const date = sqliteDates[type];
        if (date !== undefined)
            return date;
        if (type === 'bigint' || type === 'int8' || type === 'unsigned big int')
            return 'bigint';
        if (type.includes('int'))
            return 'integer';
        if (/char|clob|text/.test(type))
            return 'string';
        if (type.includes('blob'))
            return 'binary';
        if (/real|floa|doub|numeric|decimal/.test(type))
            return 'number';
        return 'string';
    },
    driverTypes: {
        decimal: { kysely: 'number', selected: 'number' },
        // SQLite has no boolean: 0 and 1 come back, and the viewset serves them as false and true.
        boolean: { kysely: 'number', selected: 'number' },
        'date-time': { kysely: 'string', selected: 'string' },
        date: { kysely: 'string', selected: 'string' },
        // SQLite keeps JSON as text, and better-sqlite3 returns it as a string.
        json: { kysely: 'string', selected: 'string', typebox: 'String' },
    },
    converted: { boolean: 'boolean' },
    arrays: false,
};
//# sourceMappingURL=sqlite-column-types.js.map