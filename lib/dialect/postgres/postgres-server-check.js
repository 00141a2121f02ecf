import { ViewsetErrors } from '../../errors.js';
// What the first connection of a pool checks before the pool serves anything: that the server applies the
// statement timeout asked for (a pooler may have dropped the startup parameter), and, behind PgBouncer,
// whether its version survives cancel requests.
/** The PgBouncer release that no longer crashes when a cancel request races a client's disconnect. */
const safeCancelVersion = [1, 20, 1];
/** Whether a `SHOW VERSION` answer names PgBouncer 1.20.1 or later. */
export function cancelsSafely(version) {
    const parts = /PgBouncer (\d+)\.(\d+)\.(\d+)/i.exec(version)?.slice(1).map(Number);
    if (parts === undefined)
        return false;
    for (let i = 0; i < safeCancelVersion.length; i++) {
        const part = parts[i] ?? 0;
        const safe = safeCancelVersion[i] ?? 0;
        if (part !== safe)
            return part > safe;
    }
    return true;
}
/**
 * Opens one connection as the pool would, and answers whether queries whose client hung up are cancelled.
 * Throws FST_VIEWSET_POOLER_NOT_NAMED when named statements would be on (by default) behind a pooler that
 * no option names: the server's process id is not the one the connection announced. Throws
 * FST_VIEWSET_STATEMENT_TIMEOUT_IGNORED when the server's `statement_timeout` is not `statementTimeout` (0 leaves
 * the server's own setting: nothing to check).
 */
export async function checkServer(open, config, settings) {
    const client = open(config);
    // A server that goes away during the check fails its query; pg emits 'error' on the client as well.
    client.on('error', () => { });
    await client.connect();
    try {
        const unnamed = settings.pooler === undefined && settings.preparedStatements === undefined;
        if (unnamed || settings.statementTimeout > 0) {
            // One round trip; pg_settings gives the timeout in milliseconds, where SHOW gives '30s' or '1min'.
            const { rows } = await client.query("select pg_backend_pid() as pid, (select setting from pg_settings where name = 'statement_timeout') as timeout");
            // pg keeps the process id the connection announced (BackendKeyData); a pooler announces one of its own.
            if (unnamed && Number(rows[0]?.pid) !== Reflect.get(client, 'processID'))
                throw new ViewsetErrors.PoolerNotNamed();
            const actual = String(rows[0]?.timeout);
            if (settings.statementTimeout > 0 && Number(actual) !== settings.statementTimeout) {
                throw new ViewsetErrors.StatementTimeoutIgnored(actual, String(settings.statementTimeout));
            }
        }
        if (settings.cancelOnDisconnect !== undefined)
            return settings.cancelOnDisconnect;
        if (settings.pooler === undefined)
            return true;
        // PgBouncer answers SHOW VERSION only on its admin console; a server answers an error: assume an old one.
        const version = await client.query('show version').then(({ rows }) => String(Object.values(rows[0] ?? {})[0]), () => '');
        return cancelsSafely(version);
    }
    finally {
        await client.end().catch(() => { });
    }
}
//# sourceMappingURL=postgres-server-check.js.map