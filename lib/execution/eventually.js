// On SQLite a statement answers before any promise could: better-sqlite3 is synchronous, and the shortcut
// of a database createDatabase opened runs it straight on the connection (dialect/sqlite-statements.ts). The
// read path hands such an answer on as it is, up to the route, which Fastify then sends at once: each
// promise and async frame between the statement and the reply is a microtask and more code touched per
// request. Every other database answers with a promise, handed on just as well.
/**
 * `next` of a value: at once when the value is there, else once the promise settles. A throw from `next`
 * (or from what produced `value`) is thrown at once in the first case: callers are functions whose
 * callers catch both (an async function, a Fastify handler).
 *
 * @example
 * ```ts
 * const row = andThen(statements.execute(db, shape, [id], build), firstRow)
 * ```
 */
export function andThen(value, next) {
    return value instanceof Promise ? value.then(next) : next(value);
}
//# sourceMappingURL=eventually.js.map