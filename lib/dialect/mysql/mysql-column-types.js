const kinds = {
    tinyint: 'integer',
    smallint: 'integer',
    mediumint: 'integer',
    int: 'integer',
    integer: 'integer',
    year: 'integer',
    bigint: 'bigint',
    float: 'number',
    double: 'number',
    real: 'number',
    decimal: 'decimal',
    numeric: 'decimal',
    datetime: 'date-time',
    timestamp: 'date-time',
    date: 'date',
    binary: 'binary',
    varbinary: 'binary',
    blob: 'binary',
    tinyblob: 'binary',
    mediumblob: 'binary',
    longblob: 'binary',
    bit: 'binary',
};
/** MySQL and MariaDB through mysql2 as createDatabase opens them: TINYINT(1) as boolean, MariaDB's checked LONGTEXT as
 * JSON. */
export const mysqlColumnTypes = {
    kindOf(column) {
        if (column.json)
            return 'json';
        if (column.declared.startsWith('tinyint(1)') || column.type === 'boolean')
            return 'boolean';
        return kinds[column.type] ?? 'string';
    },
    driverTypes: {},
    converted: { decimal: 'number', 'date-time': 'string', date: 'string' },
    arrays: false,
};
//# sourceMappingURL=mysql-column-types.js.map