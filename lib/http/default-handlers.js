import { invalidFields } from '../errors.js';
import { andThen } from '../execution/eventually.js';
import { currentCancellation, withCancellation } from '../execution/cancellation.js';
import { encodeCursor } from '../query/cursor.js';
import { parseListQuery } from '../query/list-query.js';
import { isRecord } from '../schema/object-schema.js';
import { mergeDuplicates, prefersMergeDuplicates } from './prefer-header.js';
/** The `:id` of an element route: its params schema requires it. */
function idOf(request) {
    return isRecord(request.params) ? request.params.id : undefined;
}
/** Answers an applied merge: 201 when a row was created, else 200, and says so in `Preference-Applied` (RFC 7240). */
function applyMerge(reply, created) {
    reply.code(created ? 201 : 200).header('preference-applied', mergeDuplicates);
}
/** The values `beforeWrite` returned, when they are values. */
function writtenValues(written) {
    if (!isRecord(written)) {
        throw new TypeError(`beforeWrite returned ${written === null ? 'null' : typeof written}: it must return the values to write`);
    }
    return written;
}
/**
 * The default handlers of one mounted viewset. Each answers at once where the database answered at once
 * (execution/eventually.ts), else with a promise; `createElements` always with a promise.
 */
export class DefaultHandlers {
    #context;
    constructor(context) {
        this.#context = context;
    }
    /** What `beforeWrite` makes of the values, checked: a promise only when it answered one (the default answers at
     * once, and POST and PATCH then await nothing). */
    #beforeWrite(values, context) {
        const written = this.#context.beforeWrite(values, context);
        // Any thenable is awaited, as `await` would; the answer is then a native promise.
        return isRecord(written) && typeof written.then === 'function'
            ? Promise.resolve(written).then(writtenValues)
            : writtenValues(written);
    }
    /** The fields of a body that may be written: read-only fields and relations are dropped. */
    writable(body) {
        const values = {};
        if (!isRecord(body))
            return values;
        for (const field of this.#context.writable) {
            const value = body[field];
            if (value !== undefined)
                values[field] = value;
        }
        return values;
    }
    /** LIST: the query string parsed (every client mistake a 400 before the first query), then the page read. */
    list(request, token) {
        const { resource, listQuery, readDb } = this.#context;
        const query = parseListQuery(isRecord(request.query) ? request.query : {}, listQuery);
        const scope = this.#context.scopeOf(request, token, 'LIST');
        if (query.pagination === 'cursor' || query.count)
            return this.#listWithExtras(query, scope);
        return andThen(resource.list(readDb, query, scope), (rows) => ({ rows, query }));
    }
    /** LIST by cursor, or with the number of matching rows (both read at once). */
    async #listWithExtras(query, scope) {
        const { resource, readDb } = this.#context;
        if (query.pagination === 'cursor') {
            const [page, total] = await Promise.all([
                resource.cursorPage(readDb, query, scope),
                query.count ? resource.count(readDb, query, scope) : undefined,
            ]);
            const cursor = (position) => position === undefined ? undefined : encodeCursor(query.ordering, position);
            return { rows: page.rows, query, total, cursors: { next: cursor(page.next), prev: cursor(page.prev) } };
        }
        const [rows, total] = await Promise.all([resource.list(readDb, query, scope), resource.count(readDb, query, scope)]);
        return { rows, query, total };
    }
    /** GET: one row (in the scope), with only the `selection`'s columns when `?fields=` chose some, or 404. */
    getElement(request, token, selection) {
        const scope = this.#context.scopeOf(request, token, 'GET');
        const id = idOf(request);
        return andThen(this.#context.resource.find(this.#context.readDb, id, { selection, scope }), (row) => row === undefined ? this.#context.notFound(id) : row);
    }
    /** POST: inserts what `beforeWrite` makes of the writable fields sent; with Prefer merge-duplicates, upserts. */
    createElement(request, reply, token) {
        const sent = this.writable(request.body);
        if (this.#mergesDuplicates(request))
            return this.#upsertOne(request, reply, token, sent);
        // The caller must be able to read what it creates: the row as stored must be in the GET rule.
        const check = this.#context.scopeOf(request, token, 'GET');
        return andThen(this.#beforeWrite(sent, { request, token, method: 'POST' }), (values) => this.#context.resource.insert(this.#context.db, values, check));
    }
    /** POST with `Prefer: resolution=merge-duplicates`: the upsert of one element. */
    async #upsertOne(request, reply, token, sent) {
        this.#checkConflictFields([sent], false);
        const scope = currentCancellation();
        const element = await this.#upsertElement(sent, { request, token, method: 'POST' });
        const patchScope = this.#context.scopeOf(request, token, 'PATCH');
        const checks = this.#upsertChecks(request, token, patchScope);
        const [written] = await withCancellation(scope, () => this.#context.resource.upsert(this.#context.db, [element], patchScope, false, checks));
        if (written === undefined)
            throw new Error('an upsert of one element wrote no row');
        applyMerge(reply, written.created);
        return written.row;
    }
    /** BULK: inserts (or with Prefer merge-duplicates, upserts) every element, all or none, in element order. */
    async createElements(request, reply, token) {
        const bodies = Array.isArray(request.body) ? request.body : [];
        const sent = bodies.map((body) => this.writable(body));
        const context = { request, token, method: 'BULK' };
        const { resource, db } = this.#context;
        // The write starts after beforeWrite's awaits: in the request's cancellation scope (execution/cancellation.ts).
        const scope = currentCancellation();
        if (!this.#mergesDuplicates(request)) {
            const values = [];
            for (const fields of sent)
                values.push(await this.#beforeWrite(fields, context));
            const check = this.#context.scopeOf(request, token, 'GET');
            return await withCancellation(scope, () => resource.insertMany(db, values, check));
        }
        this.#checkConflictFields(sent, true);
        const elements = [];
        for (const fields of sent)
            elements.push(await this.#upsertElement(fields, context));
        const patchScope = this.#context.scopeOf(request, token, 'PATCH');
        const checks = this.#upsertChecks(request, token, patchScope);
        const written = await withCancellation(scope, () => resource.upsert(db, elements, patchScope, true, checks));
        applyMerge(reply, written.length === 0 || written.some((entry) => entry.created));
        return written.map((entry) => entry.row);
    }
    /** What an upserted row must satisfy once written: a created one the GET rule, an updated one PATCH's. */
    #upsertChecks(request, token, patchScope) {
        return { created: this.#context.scopeOf(request, token, 'GET'), updated: patchScope };
    }
    /** Whether this request upserts: `conflictFields` is set and the client prefers `resolution=merge-duplicates` (else
     * the header is ignored, as RFC 7240 says). */
    #mergesDuplicates(request) {
        return this.#context.conflictFields !== undefined && prefersMergeDuplicates(request.headers.prefer);
    }
    /** A body that merges must send every conflict field, with a value: else a 400 naming each one missing (`email`, or
     * `/3/email` in a bulk body). */
    #checkConflictFields(bodies, bulk) {
        const errors = [];
        bodies.forEach((body, index) => {
            for (const field of this.#context.conflictFields ?? []) {
                if (body[field] === undefined || body[field] === null) {
                    errors.push({
                        in: 'body',
                        field: bulk ? `/${index}/${field}` : field,
                        message: `is required (not null) with Prefer: ${mergeDuplicates}`,
                    });
                }
            }
        });
        if (errors.length > 0)
            throw invalidFields(errors);
    }
    /**
     * What an upsert writes of a body: `beforeWrite`'s values on insert; on update, only the fields the body
     * sent (as `beforeWrite` left them), never the columns it added (such as an owner).
     */
    async #upsertElement(sent, context) {
        const values = await this.#beforeWrite(sent, context);
        return { values, update: Object.keys(sent).filter((field) => Object.hasOwn(values, field)) };
    }
    /**
     * PUT (`partial` false) and PATCH (`partial` true): updates the row (in the scope) with what `beforeWrite`
     * returns, if `precondition` (If-Match, or requireIfMatch's 428) holds; the row, or 404.
     */
    updateElement(request, token, partial, precondition) {
        const method = partial ? 'PATCH' : 'PUT';
        const id = idOf(request);
        const { resource, db } = this.#context;
        const scope = this.#context.scopeOf(request, token, method);
        return andThen(this.#beforeWrite(this.writable(request.body), { request, token, method }), (values) => 
        // The precondition is checked with the write, after the scope: a 404, 428 or 412 changes nothing; then the
        // row as written must still be in the scope (else a 403, nothing changed).
        andThen(resource.update(db, id, values, scope, precondition, scope), (row) => row === undefined ? this.#context.notFound(id) : row));
    }
    /** DELETE: removes the row (in the scope) if `precondition` holds, or 404. */
    deleteElement(request, token, precondition) {
        const scope = this.#context.scopeOf(request, token, 'DELETE');
        const id = idOf(request);
        return andThen(this.#context.resource.delete(this.#context.db, id, scope, precondition), (deleted) => {
            if (!deleted)
                this.#context.notFound(id);
        });
    }
}
//# sourceMappingURL=default-handlers.js.map