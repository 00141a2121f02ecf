import { connect } from 'node:net';
import { currentCancellation } from '../../execution/cancellation.js';
// Cancelling the PostgreSQL query of a request whose client went away. A request runs inside its cancellation context
// (runWithCancellation, execution/cancellation.ts); each pg client of a pool opened by createDatabase records which
// context's query it is running (cancelOnClientGone): the context its checkout was asked for in
// (carryCancellationToCheckouts), else the one its query starts in. Kysely asks for a checkout synchronously from
// `execute()` or `transaction()`, then awaits: its queries would start with no context unless the promise hooks carried
// it. When the response closes before it was sent, the queries still running for that context get a CancelRequest on a
// separate connection, the way `pg` cancels (Client#cancel, which needs the Query object that pool.query and Kysely
// keep to themselves). The answer is 57014, a 503 FST_VIEWSET_TIMEOUT nobody reads, and the connection goes back to the
// pool healthy.
// The request each checked-out client was asked for in, set at every checkout (so never a past one's), on
// the client itself: a WeakMap cost an ephemeron write barrier per query.
const checkoutCancellation = Symbol('fastify-viewsets.checkoutCancellation');
/**
 * Makes each client of `pool` belong, until its next checkout, to the cancellation context that asked for it, whoever
 * releases it first and whatever awaits come between (Kysely's driver awaits the checkout, then the query).
 */
export function carryCancellationToCheckouts(pool) {
    const connect = pool.connect.bind(pool); // pg-pool's callback form
    const checkout = (callback) => {
        const context = currentCancellation();
        if (callback !== undefined) {
            connect((error, client, release) => {
                if (client !== undefined)
                    client[checkoutCancellation] = context;
                callback(error, client, release);
            });
            return undefined;
        }
        return new Promise((resolve, reject) => {
            connect((error, client) => {
                if (client === undefined) {
                    reject(error ?? new Error('pg-pool answered a checkout without a client'));
                    return;
                }
                client[checkoutCancellation] = context;
                resolve(client);
            });
        });
    };
    pool.connect = checkout; // both of pg-pool's forms, as the method it replaces
}
/** How long a CancelRequest may take before the connection stops waiting for it. */
const cancelTimeout = 2000;
function integerProperty(client, key) {
    const value = Reflect.get(client, key);
    return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}
/**
 * Sends a CancelRequest (the 16-byte message of the PostgreSQL protocol: length, 80877102, backend process id,
 * secret key) and resolves once the server has closed that connection, which it does after signalling the
 * backend, or after a bound. Hand-written: pg does the same in Client#cancel, which takes the Query object
 * that pool.query and Kysely keep to themselves, through pg's untyped Connection class.
 */
async function sendCancel(host, port, processID, secretKey) {
    await new Promise((resolve) => {
        const packet = Buffer.alloc(16);
        packet.writeInt32BE(16, 0);
        packet.writeInt32BE(80877102, 4);
        packet.writeInt32BE(processID, 8);
        packet.writeInt32BE(secretKey, 12);
        const socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host);
        const done = () => {
            clearTimeout(timer);
            socket.destroy();
            resolve();
        };
        const timer = setTimeout(done, cancelTimeout);
        socket.once('connect', () => socket.write(packet));
        socket.once('close', done);
        socket.once('error', done);
    });
}
/**
 * Makes a pg client record which cancellation context's queries it runs, so that `runWithCancellation` can cancel
 * them. A CancelRequest stops whatever the backend runs when it arrives, so a client never starts another
 * query while one is on its way: a query of the next request to use the connection waits until the server
 * has taken the cancel (a backend that is idle by then ignores it), and can never be the one cancelled.
 */
export function cancelOnClientGone(client) {
    client[checkoutCancellation] = undefined; // declared before the first checkout: one shape for the client's life
    // pg's overloads: (text or config or submittable, values?, callback?), or (text or config, callback). Named
    // parameters, not rest arguments: this runs for every query.
    const query = client.query.bind(client);
    let running = 0;
    let pending;
    const cancel = () => {
        const processID = integerProperty(client, 'processID');
        const secretKey = integerProperty(client, 'secretKey');
        if (running === 0 || pending !== undefined || processID === undefined || secretKey === undefined)
            return;
        pending = sendCancel(client.host, client.port, processID, secretKey).finally(() => { pending = undefined; });
    };
    const run = (config, values, callback) => {
        // The checkout's first: a checkout answered from another request's release runs in that request's context.
        const context = client[checkoutCancellation] ?? currentCancellation();
        if (context === undefined)
            return query(config, values, callback);
        running++;
        context.running.add(cancel);
        const settle = () => {
            running--;
            if (running === 0)
                context.running.delete(cancel);
        };
        if (typeof callback === 'function' || typeof values === 'function') {
            const done = (typeof callback === 'function' ? callback : values); // pg's callback form
            const settled = (error, result) => {
                settle();
                done(error, result);
            };
            return typeof callback === 'function' ? query(config, values, settled) : query(config, settled);
        }
        const result = query(config, values);
        if (result instanceof Promise)
            result.then(settle, settle);
        else
            settle();
        // A request gone before its query started: cancel it as soon as it runs.
        if (context.gone)
            cancel();
        return result;
    };
    client.query = ((config, values, callback) => {
        // A submittable (a pg Query or Cursor) is returned as it is, never wrapped: pass it through.
        const submittable = typeof config === 'object' && config !== null && 'submit' in config;
        if (pending === undefined || submittable)
            return run(config, values, callback);
        const waited = pending.then(() => run(config, values, callback));
        return typeof callback === 'function' || typeof values === 'function' ? undefined : waited;
    }); // the same overloads as the method it replaces
}
//# sourceMappingURL=postgres-cancel.js.map