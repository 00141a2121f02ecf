/** A result's rows: handed to `then` where an async frame would only unwrap them. */
export function resultRows(result) {
    return result.rows;
}
/** Whether a write without RETURNING changed a row, as the driver counts it. */
export function deletedAny({ numAffectedRows }) {
    return numAffectedRows !== undefined && numAffectedRows > 0n;
}
/** The first row of a result (a read by primary key), or `undefined`. */
export function firstRow(result) {
    return result.rows[0];
}
/**
 * A key value as a Map key: the value itself, except dates (by time) and other objects such as buffers
 * (as text). Right for drivers that answer every integer column alike (a number while exact, else digits).
 */
export function mapKey(value) {
    return typeof value === 'object' && value !== null ? (value instanceof Date ? value.getTime() : String(value)) : value;
}
/** For drivers that answer `count(*)` as a number, or as digits past 2^53. */
export function countOf(cell) {
    return Number(cell);
}
/** For drivers that bind every JSON value as it is. */
export function bindAsIs(value) {
    return value;
}
/** Escapes `%`, `_` and the escape character itself, for a substring `LIKE` with `ESCAPE '!'`. */
export function containsPattern(term) {
    return `%${term.replace(/[!%_]/g, '!$&')}%`;
}
/** Runs `work` in a transaction, or in the caller's when `db` already is one (Kysely does not nest them). */
export async function inTransaction(db, work) {
    return db.isTransaction ? await work(db) : await db.transaction().execute(work);
}
/** A Map key for the values of several columns of a row, as a dialect's `keyOf` compares them. */
export function compositeKey(row, columns, keyOf) {
    return columns
        .map((column) => {
        const key = keyOf(row[column]);
        return `${typeof key}:${String(key)}`;
    })
        .join('\u0000');
}
/** Reads a string property of an unknown error object. */
export function errorProperty(error, key) {
    if (typeof error !== 'object' || error === null)
        return undefined;
    const value = Reflect.get(error, key);
    return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}
/** Connection-level failures that every driver reports through Node's socket errors. */
export function isConnectionError(error) {
    const code = errorProperty(error, 'code');
    return (code !== undefined &&
        [
            'ECONNREFUSED',
            'ECONNRESET',
            'ETIMEDOUT',
            'EPIPE',
            'ENOTFOUND',
            'EHOSTUNREACH',
            'PROTOCOL_CONNECTION_LOST',
        ].includes(code));
}
//# sourceMappingURL=sql.js.map