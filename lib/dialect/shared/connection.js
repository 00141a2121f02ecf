/** The statements Kysely compiles from its builders, which a shortcut may run (never raw SQL such as DDL or BEGIN). */
export const compiledStatementKinds = new Set([
    'SelectQueryNode',
    'InsertQueryNode',
    'UpdateQueryNode',
    'DeleteQueryNode',
]);
/**
 * Milliseconds after which the client gives up on an answer and destroys the connection: a margin above
 * `statementTimeout`, by which the server has answered a statement it stopped itself. Only a connection
 * that went half-open (a failover, a partition: no reset, no data) gets there; 0 when there is no
 * statement timeout to be above. The margin, max(1 s, a tenth of the timeout), stays under the issue's
 * bound of max(1 s, statementTimeout).
 */
export function readTimeout(statementTimeout) {
    return statementTimeout === 0 ? 0 : statementTimeout + Math.max(1000, Math.ceil(statementTimeout / 10));
}
/** Milliseconds of idleness before TCP keepalive probes a pooled connection, so a dead idle one is found. */
export const keepAliveDelay = 10_000;
/** Hides the password of a URL in error messages. */
export function redact(url) {
    return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
//# sourceMappingURL=connection.js.map