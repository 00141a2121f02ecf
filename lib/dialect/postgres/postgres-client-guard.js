import { ViewsetErrors } from '../../errors.js';
/** The message of pg's error when `query_timeout` passes without an answer (pg 8). */
const readTimeoutMessage = 'Query read timeout';
/** SQLSTATE 42P05 / 26000: "prepared statement ... already exists" and "... does not exist", with a name of ours. */
const lostStatement = /^prepared statement "fastify_viewsets_\d+" (already exists|does not exist)$/;
/** SQLSTATE 08P01 when a Bind reaches a statement of the same name but other SQL, on another connection. */
const mismatchedStatement = /prepared statement "fastify_viewsets_\d+" requires/;
function failureOf(error) {
    return typeof error === 'object' && error !== null
        ? { code: Reflect.get(error, 'code'), message: Reflect.get(error, 'message') }
        : { code: undefined, message: undefined };
}
/**
 * Guards a pg client for its whole life (installed before any other patch of its `query`, so it sees pg's own
 * callback forms). Past `query_timeout`, pg fails the query but keeps the connection, whose next query would
 * queue behind the lost one: the guard ends it instead, so the pool drops it at release and opens a new one,
 * and the request answers 503 FST_VIEWSET_TIMEOUT. A named statement of ours that the server lost or already
 * had (a pooler handing the client another server connection) answers FST_VIEWSET_POOLER_STATEMENTS.
 */
export function guardClient(client) {
    // pg's overloads: (text or config, values?, callback?) or (text or config, callback). Named parameters, not
    // rest arguments: this runs for every query.
    const query = client.query.bind(client);
    let ended = false;
    const translate = (error) => {
        const { code, message } = failureOf(error);
        if (message === readTimeoutMessage && !ended) {
            ended = true;
            client.end().catch(() => { });
        }
        // Whatever this client answers once ended (a ROLLBACK after the timeout, say) is the same timeout.
        if (ended)
            return new ViewsetErrors.Timeout();
        if (typeof message !== 'string')
            return error;
        if ((code === '42P05' || code === '26000') && lostStatement.test(message)) {
            return new ViewsetErrors.PoolerStatements();
        }
        if (code === '08P01' && mismatchedStatement.test(message))
            return new ViewsetErrors.PoolerStatements();
        return error;
    };
    const guarded = (callback) => (error, result) => {
        callback(error === null || error === undefined ? error : translate(error), result);
    };
    client.query = ((config, values, callback) => {
        // pg's callback types: (error, result)
        if (typeof callback === 'function') {
            return query(config, values, guarded(callback));
        }
        // pg's callback types: (error, result)
        if (typeof values === 'function')
            return query(config, guarded(values));
        const result = query(config, values);
        return result instanceof Promise ? result.catch((error) => { throw translate(error); }) : result;
    }); // the same overloads as the method it replaces
}
//# sourceMappingURL=postgres-client-guard.js.map