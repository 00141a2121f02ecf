const kinds = {
    int2: 'integer',
    int4: 'integer',
    int8: 'bigint',
    float4: 'number',
    float8: 'number',
    numeric: 'decimal',
    money: 'string',
    bool: 'boolean',
    uuid: 'uuid',
    timestamptz: 'date-time',
    timestamp: 'date-time',
    date: 'date',
    json: 'json',
    jsonb: 'json',
    bytea: 'binary',
};
/** PostgreSQL through pg: int8 and numeric as strings, dates as Date objects, arrays of any type. */
export const postgresColumnTypes = {
    kindOf: ({ type }) => kinds[type.replace(/^_/, '')] ?? 'string',
    driverTypes: { bigint: { kysely: 'Int8', selected: 'string' } },
    converted: { bigint: 'number', decimal: 'number', 'date-time': 'string', date: 'string' },
    arrays: true,
};
//# sourceMappingURL=postgres-column-types.js.map