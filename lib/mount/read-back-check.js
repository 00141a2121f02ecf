/**
 * The problem of a MySQL/MariaDB viewset that registers the default POST or BULK over a primary key that is
 * not AUTO_INCREMENT and that nothing sets (the key is read-only in the schema, and no `beforeWrite` option or
 * overridden `beforeWrite`, `createElement` or `createElements` sets it), or `undefined`.
 *
 * @example
 * readBackProblem(mysqlDialect, described, { primaryKey: 'code', overridden }, ['POST']) // '"code" of "codes" is …'
 */
export function readBackProblem(dialect, table, { primaryKey, overridden }, methods) {
    if (dialect.name !== 'mysql' || table.view || overridden.has('beforeWrite'))
        return undefined;
    const key = table.columns.find((column) => column.name === primaryKey);
    if (key === undefined || key.autoIncrement)
        return undefined;
    const handlers = methods.flatMap((method) => {
        if (method === 'POST' && !overridden.has('createElement'))
            return ['createElement'];
        if (method === 'BULK' && !overridden.has('createElements'))
            return ['createElements'];
        return [];
    });
    if (handlers.length === 0)
        return undefined;
    const registered = handlers.map((handler) => (handler === 'createElement' ? 'POST' : 'BULK')).join(' and ');
    return `"${primaryKey}" of "${table.name}" is not AUTO_INCREMENT, and the default ${registered} cannot set it ` +
        '(it is read-only), so MySQL could not read a new row back; make it AUTO_INCREMENT, set it in beforeWrite, ' +
        `override ${handlers.join(' and ')}, or leave ${registered} out of methods`;
}
//# sourceMappingURL=read-back-check.js.map