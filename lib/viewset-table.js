import { containsPattern } from './sql.js';
import { ViewsetErrors } from './errors.js';
// The helpers an override calls to read and write its table, each through the table gateway its viewset
// prepared at mounting. `Viewset` extends this class: they are its methods.
/** Rows read through the schema's columns, typed as the schema types them: the serializer writes them by it. */
export function asServed(rows) {
    return rows; // selected by the schema's own columns; the driver's value types are coerced on the way out
}
/** The viewset reaches tables by names checked at mounting, so it queries through an untyped view of `db`. */
export function untyped(db) {
    return db; // DB is a compile-time map of tables; the instance is the same
}
// What each viewset prepared when it was mounted; a viewset not mounted yet has none.
const prepared = new WeakMap();
/** Records what mounting prepared for `viewset`: its helpers and handlers read it from then on. */
export function setPrepared(viewset, viewsetPrepared) {
    prepared.set(viewset, viewsetPrepared);
}
/** What mounting prepared for `viewset`; a helper called before the viewset is registered throws. */
export function preparedOf(viewset) {
    const found = prepared.get(viewset);
    if (found === undefined) {
        throw new Error('The viewset is not registered yet: register() it on a Fastify instance first');
    }
    return found;
}
/**
 * The table helpers of a viewset, for its overrides: a typed query of the schema's columns, transactions,
 * and reads and writes by key that answer rows as stored. See `Viewset`.
 *
 * @example
 * ```ts
 * const item = (await this.findById(request.params.id)) ?? this.notFound(request.params.id)
 * ```
 */
export class ViewsetTable {
    /** The database written to. */
    db;
    /** The database LIST and GET read from (`readDb`, else `db`). */
    readDb;
    table;
    schema;
    primaryKey;
    /** The schema fields that are columns (relation fields excluded): the only columns ever selected. */
    columns;
    constructor(options, primaryKey, columns) {
        this.db = options.db;
        this.readDb = options.readDb ?? options.db;
        this.table = options.table;
        this.schema = options.schema;
        this.primaryKey = primaryKey;
        this.columns = Object.freeze([...columns]);
    }
    /** `SELECT <schema columns> FROM <table>`, typed, to refine and execute. */
    query(db = this.readDb) {
        const table = this.table;
        // names checked against the catalog at mounting
        return untyped(db).selectFrom(table).select(this.columns);
    }
    /** Runs `work` in a transaction; it commits when `work` resolves and rolls back when it throws. */
    async transaction(work) {
        return await this.db.transaction().execute(work);
    }
    /** The row with this primary key, or `undefined`. */
    async findById(id, db = this.readDb) {
        const row = await preparedOf(this).resource.find(untyped(db), id);
        return row === undefined ? undefined : asServed(row);
    }
    /**
     * Inserts values and returns the row as stored (generated key and database defaults included).
     *
     * @example
     * ```ts
     * await this.insert({ ...this.writable(request.body), owner: token?.sub ?? null })
     * ```
     */
    async insert(values, db = this.db) {
        return asServed(await preparedOf(this).resource.insert(untyped(db), { ...values }));
    }
    /**
     * Updates one row and returns it as stored, or `undefined` when there is no such row. With a
     * `precondition` (`this.precondition(request)`: the request's If-Match), a stale tag throws the 412
     * and requireIfMatch's 428, checked with the write so that nothing changes.
     *
     * @example
     * ```ts
     * const updated = await this.update(request.params.id, values, this.db, this.precondition(request))
     * return updated ?? this.notFound(request.params.id)
     * ```
     */
    async update(id, values, db = this.db, precondition) {
        const row = await preparedOf(this).resource.update(untyped(db), id, { ...values }, undefined, precondition);
        return row === undefined ? undefined : asServed(row);
    }
    /** Deletes one row; false when there was none. A `precondition` is checked as `update` checks it. */
    async deleteById(id, db = this.db, precondition) {
        return await preparedOf(this).resource.delete(untyped(db), id, undefined, precondition);
    }
    /** A case-insensitive substring match that behaves the same on every dialect (`%` and `_` match themselves). */
    contains(column, term) {
        return preparedOf(this).resource.dialect.syntax.ilike(column, containsPattern(term));
    }
    /**
     * What a database error means to a client (`unique`, `foreign-key`, `not-null`, `check`, `invalid-value`,
     * `unavailable`), or `undefined`: for answers more precise than the default ones.
     *
     * @example
     * ```ts
     * try { return await this.insert(values) } catch (error) {
     *   if (this.classify(error)?.kind === 'unique') {
     *     throw new ViewsetErrors.Conflict('an item with that name already exists')
     *   }
     *   throw error
     * }
     * ```
     */
    classify(error) {
        return preparedOf(this).resource.dialect.classify(error);
    }
    /** Throws the 404 problem for this id. */
    notFound(id) {
        throw new ViewsetErrors.NotFound(`No row with ${this.primaryKey} = ${String(id)}`);
    }
}
//# sourceMappingURL=viewset-table.js.map