import { currentCancellation, withCancellation } from '../execution/cancellation.js';
/** The distinct, non-null values of `column` in `rows`, as the driver returned them. */
function distinctKeys(rows, column, keyOf) {
    const keys = [];
    const seen = new Set();
    for (const row of rows) {
        const value = row[column];
        if (value === null || value === undefined)
            continue;
        const key = keyOf(value);
        if (!seen.has(key)) {
            seen.add(key);
            keys.push(value);
        }
    }
    return keys;
}
async function loadRelation(relation, db, rows, request) {
    const { field, parentKey, childKey, keyOf } = relation;
    const keys = distinctKeys(rows, parentKey, keyOf);
    const context = currentCancellation();
    const children = keys.length === 0 ? [] : await relation.query.run(db, keys, request);
    const { nested } = relation;
    if (nested !== undefined && children.length > 0) {
        await withCancellation(context, () => nested.load(db, children, undefined, request));
    }
    if (relation.kind === 'many-to-one') {
        const byKey = new Map();
        for (const child of children)
            byKey.set(keyOf(child[childKey]), child);
        for (const row of rows) {
            const value = row[parentKey];
            // A NULL foreign key, or one whose row is gone, is null: the parent row stays.
            row[field] = value === null || value === undefined ? null : (byKey.get(keyOf(value)) ?? null);
        }
        return;
    }
    // The rows come ordered, and grouping keeps that order within each parent; the first `limit` are kept
    // (the cheap statement of a limited relation reads them all when there are few, see limitedQuery).
    const { limit } = relation;
    const groups = new Map();
    for (const child of children) {
        const key = keyOf(child[childKey]);
        const group = groups.get(key);
        if (group === undefined)
            groups.set(key, [child]);
        else if (limit === undefined || group.length < limit)
            group.push(child);
    }
    for (const row of rows) {
        const value = row[parentKey];
        row[field] = (value === null || value === undefined ? undefined : groups.get(keyOf(value))) ?? [];
    }
}
export class BatchedRelationLoader {
    fields;
    parentColumns;
    keys;
    links;
    ruleSlots;
    #relations;
    constructor(relations) {
        this.#relations = relations;
        this.fields = new Set(relations.map((relation) => relation.field));
        this.parentColumns = Object.freeze([...new Set(relations.map((relation) => relation.parentKey))]);
        this.keys = new Map(relations.map((relation) => [relation.field, relation.parentKey]));
        this.links = new Map(relations.map((relation) => [relation.field, relation.link]));
        this.ruleSlots = Object.freeze(relations.flatMap((relation) => [...relation.query.slots, ...(relation.nested?.ruleSlots ?? [])]));
    }
    async load(db, rows, only, request) {
        if (rows.length === 0)
            return;
        // One relation after the other: a request holds one connection at a time, and the log reads in order.
        // Each starts in the request's cancellation context (execution/cancellation.ts).
        const context = currentCancellation();
        for (const relation of this.#relations) {
            if (only === undefined || only.has(relation.field)) {
                await withCancellation(context, () => loadRelation(relation, db, rows, request));
            }
        }
    }
}
//# sourceMappingURL=batched-loader.js.map