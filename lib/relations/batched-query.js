import { compileWith, paddedLength, padList, withParameters } from '../data/statement-cache.js';
import { currentCancellation, withCancellation } from '../execution/cancellation.js';
/** The most keys one statement carries; larger sets are split (every dialect allows far more parameters). */
export const maxBatch = 1024;
/** The alias of the key table in a statement that joins from it. */
const keysAlias = 'viewset_keys';
/** Bucket index of a key count: 1 → 0, 2 → 1, 3..4 → 2, 5..8 → 3, ... 513..1024 → 10. */
function bucketOf(count) {
    return Math.log2(paddedLength(count));
}
/**
 * `build`'s statement for each power-of-two size up to {@link maxBatch}, its keys bound by `keyedFor(size)`, which
 * binds `parameters(size)` values: an `IN` list of `size` keys, or the key table's one parameter. Compiled with the
 * dialect's `statementPlugin`, each on first use: an `IN` list of 1,024 keys is a tree of 1,024 nodes and an SQL
 * text of as many pieces, and most sizes (on SQLite, the whole `IN` form) are never used. At most eleven per form.
 */
class Buckets {
    #compiled = [];
    #compile;
    constructor(build, keyedFor, parameters, plugin, extra) {
        this.#compile = (size) => {
            const query = compileWith(build(keyedFor(size), size), plugin);
            if (query.parameters.length !== parameters(size) + extra) {
                throw new Error(`A batched relation query must have only its keys (then its ${extra} rule values) as parameters, ` +
                    `got ${query.parameters.length} for ${size} keys`);
            }
            return query;
        };
        // The smallest is compiled now: a statement that binds more than its keys fails at registration.
        this.#compiled.push(this.#compile(1));
    }
    /** The statement of a batch of `count` keys (1 to {@link maxBatch}). */
    for(count) {
        if (count > maxBatch)
            throw new Error(`no batched statement for ${count} keys`);
        const bucket = bucketOf(count);
        return (this.#compiled[bucket] ??= this.#compile(2 ** bucket));
    }
}
/** Binds `size` keys as `where alias.column in (...)`. */
function listKeyed(db, size) {
    const keys = new Array(size).fill(0);
    return (table, alias, column) => db.selectFrom(`${table} as ${alias}`).where(`${alias}.${column}`, 'in', keys);
}
/** Joins from the key table, whatever the batch's size. */
function tableKeyed(db, keyTable) {
    return (table, alias, column) => db
        .selectFrom(keyTable.source(keysAlias))
        .innerJoin(`${table} as ${alias}`, `${alias}.${column}`, `${keysAlias}.value`);
}
/**
 * A relation's statement for a batch of keys, compiled once per power-of-two batch size (see {@link Buckets}),
 * so that each relation has a few SQL texts that prepared-statement caches keep warm. On a dialect with a key
 * table (SQLite's `json_each`), the keys are one parameter and the statement joins from them; elsewhere (and for
 * keys the key table cannot carry) they are an `IN` list padded to its size with its last key by `padList`
 * (`IN (1, 2, 3, 3)` means `IN (1, 2, 3)`).
 *
 * @example
 * ```ts
 * const authors = new BatchedQuery(db, dialect, (keyed) => keyed('authors', 't', 'id').select(['t.id', 't.name']))
 * const rows = await authors.run(db, [1, 2, 3])
 * ```
 */
export class BatchedQuery {
    #list;
    #table;
    /**
     * `build` must make a query whose only parameters are the keys `keyed` binds. `dialect`: its key table, if any,
     * and the plugin its statements compile with.
     * `extra`: how many values the statement binds after its keys (a row rule's), given to each {@link run}.
     * With `fallback`, `build`'s statement reads at most `rowsPerKey` rows per key of its bucket plus one: a batch that
     * gets more than that runs `fallback.build`'s statement instead (a cheap first try, an exact but slower second).
     */
    constructor(db, { syntax: { keyTable, statementPlugin } }, build, fallback, extra = 0) {
        const statements = (keyedFor, parameters) => ({
            first: new Buckets(build, keyedFor, parameters, statementPlugin, extra),
            exact: fallback === undefined
                ? undefined
                : {
                    rowsPerKey: fallback.rowsPerKey,
                    buckets: new Buckets(fallback.build, keyedFor, parameters, statementPlugin, extra),
                },
        });
        this.#list = statements((size) => listKeyed(db, size), (size) => size);
        if (keyTable !== undefined) {
            const keyed = tableKeyed(db, keyTable);
            this.#table = {
                keyTable,
                statements: statements(() => keyed, () => 1),
            };
        }
    }
    /** The SQL text used for a batch of `count` keys of the `IN` list form (for tests and logs). */
    sqlFor(count) {
        return this.#list.first.for(Math.min(count, maxBatch)).sql;
    }
    /**
     * The rows matching any of the keys (distinct, non-null); one statement per {@link maxBatch} keys. `extra`: the
     * values bound after the keys (as many as the constructor's `extra`).
     */
    async run(db, keys, extra = []) {
        if (keys.length <= maxBatch)
            return await this.#runBatch(db, keys, extra);
        // Each batch starts in the request's cancellation context (execution/cancellation.ts).
        const context = currentCancellation();
        let rows = [];
        for (let start = 0; start < keys.length; start += maxBatch) {
            const batch = keys.slice(start, start + maxBatch);
            rows = rows.concat(await withCancellation(context, () => this.#runBatch(db, batch, extra)));
        }
        return rows;
    }
    async #runBatch(db, keys, extra) {
        if (keys.length === 0)
            return [];
        const table = this.#table;
        const encoded = table?.keyTable.encode(keys);
        const statements = table === undefined || encoded === undefined ? this.#list : table.statements;
        const keyed = encoded === undefined ? padList(keys) : [encoded];
        const parameters = extra.length === 0 ? keyed : [...keyed, ...extra];
        const context = currentCancellation();
        const { rows } = await db.executeQuery(withParameters(statements.first.for(keys.length), parameters));
        const { exact } = statements;
        if (exact === undefined || rows.length <= paddedLength(keys.length) * exact.rowsPerKey)
            return rows;
        const windowed = withParameters(exact.buckets.for(keys.length), parameters);
        return (await withCancellation(context, () => db.executeQuery(windowed))).rows;
    }
}
//# sourceMappingURL=batched-query.js.map