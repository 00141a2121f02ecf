import { setTimeout as sleep } from 'node:timers/promises';
// Two writers that lock the same rows can deadlock, whatever order the library writes in: MariaDB's
// gap locks make two upserts of one new key each wait on the other's gap, and PostgreSQL ends one of two
// serializable transactions that read what the other writes. The database then rolls the victim's whole
// transaction back, so running it again is safe, and usually succeeds once the winner has committed.
/** Runs after the first attempt: three retries, then the fault answers 503 as before. */
const retries = 3;
/** The first retry waits up to this long (a random part of it), each next one up to twice as long. */
const firstDelayMs = 10;
/**
 * Runs `write` (a whole write transaction of the library's own, nothing sent to the client yet) and runs it
 * again, up to three times after a random pause that grows, when the database rolled it back as a
 * deadlock victim or serialization failure (`DatabaseFault.rolledBack`). Any other error, or the fourth
 * rolled-back attempt, is thrown as it came. Never call it with a caller's open transaction: only the
 * database's rollback of the whole transaction makes a second run safe.
 *
 * @example
 * const rows = await retryOnDeadlock(dialect, async () => await db.transaction().execute(write))
 */
export async function retryOnDeadlock(dialect, write) {
    for (let attempt = 0;; attempt++) {
        try {
            return await write();
        }
        catch (error) {
            const fault = dialect.classify(error);
            if (attempt >= retries || fault?.kind !== 'unavailable' || fault.rolledBack !== true)
                throw error;
        }
        // Jitter: the two victims of one deadlock would otherwise meet again at the same moment.
        await sleep(Math.random() * firstDelayMs * 2 ** attempt);
    }
}
//# sourceMappingURL=retry-on-deadlock.js.map