import { sql } from 'kysely';
import { invalidOption, ViewsetErrors } from '../errors.js';
import { LruCache } from '../execution/lru-cache.js';
import { isList } from '../schema/object-schema.js';
import { nameList } from './field-types.js';
import { relatedValue, resolvePath } from './related-paths.js';
import { sortKeysPattern } from '../schema/list-patterns.js';
import { maxShapes } from '../data/statement-cache.js';
/** What a sort key's value is in SQL: its expression, else its column (`prefix` qualifies the column). */
export function orderValue(key, prefix = '') {
    return key.expression ?? sql.ref(`${prefix}${key.field}`);
}
/**
 * Parses sort keys, `'name,-created_at'` or `['name', '-created_at']`, against the fields that may be sorted
 * on, and appends `tieBreaker` (the primary key) unless it is listed: the one parser of LIST's `order_by` and
 * `defaultOrder` and of a relation's `orderBy`. Returns the first part it cannot use instead.
 *
 * @example
 * ```ts
 * parseOrdering('-year', new Map([['year', { nullable: true }]]), 'id')
 * // { shape: '-year,id', keys: [{ field: 'year', descending: true, nullable: true },
 * //   { field: 'id', descending: false, nullable: false }] }
 * ```
 */
export function parseOrdering(text, fields, tieBreaker) {
    const keys = [];
    for (const part of typeof text === 'string' ? text.split(',') : text) {
        const descending = part.startsWith('-');
        const name = descending ? part.slice(1) : part;
        const field = fields.get(name);
        if (field === undefined)
            return { part, field: name, reason: 'unknown' };
        if (keys.some((key) => key.field === name))
            return { part, field: name, reason: 'twice' };
        keys.push(field.expression === undefined
            ? { field: name, descending, nullable: field.nullable }
            : { field: name, descending, nullable: field.nullable, expression: field.expression });
    }
    if (tieBreaker !== undefined && !keys.some((key) => key.field === tieBreaker)) {
        keys.push({ field: tieBreaker, descending: false, nullable: false });
    }
    return { shape: keys.map((key) => `${key.descending ? '-' : ''}${key.field}`).join(','), keys };
}
function isProblem(parsed) {
    return 'reason' in parsed;
}
/** LIST's wording of an ordering it cannot use. */
function describe(problem) {
    return problem.reason === 'twice' ? `"${problem.field}" (listed twice)` : `"${problem.part}"`;
}
/** The terms of ORDER BY: each key's column and direction, after the key that sorts its NULLs where the dialect would
 * not. */
export function orderTerms(keys, dialect, prefix = '') {
    const terms = [];
    for (const key of keys) {
        const { descending, nullable } = key;
        const direction = descending ? 'desc' : 'asc';
        const column = orderValue(key, prefix);
        if (nullable && !dialect.capabilities.nullsSortLargest)
            terms.push([sql `${column} is null`, direction]);
        terms.push([column, direction]);
    }
    return terms;
}
/**
 * Adds ORDER BY. Nulls sort as if larger than every value (last ascending, first descending) on every
 * dialect, as PostgreSQL does by default: where the dialect sorts them first (SQLite, MySQL), a nullable
 * key gets an `is null` key in front. LIST and relation `orderBy` both order through here.
 */
export function applyOrdering(query, keys, dialect, prefix = '') {
    let ordered = query;
    for (const [expression, direction] of orderTerms(keys, dialect, prefix)) {
        ordered = ordered.orderBy(expression, direction);
    }
    return ordered;
}
/** The same ordering as {@link applyOrdering}, as the text of an `order by` (in a window function, say). */
export function orderClause(keys, dialect, prefix = '') {
    return sql.join(orderTerms(keys, dialect, prefix).map(([expression, direction]) => sql `${expression} ${sql.raw(direction)}`));
}
/**
 * Checks `orderingFields` and `defaultOrder` and plans `?order_by=`. `defaultOrder` may use any scalar
 * column (it is the developer's choice); `order_by` only the `orderingFields`.
 */
export function planOrdering(orderingFields, defaultOrder, fields, primaryKey, related) {
    const key = fields.get(primaryKey);
    if (key === undefined)
        invalidOption('primaryKey', `"${primaryKey}" must be a scalar column to order pages by`);
    const allowed = allowedFields(orderingFields, fields, related);
    const defaultOrdering = plannedDefaultOrder(defaultOrder, fields, allowed, primaryKey);
    const byPrimaryKey = defaultOrdering.shape === primaryKey;
    const allowedList = nameList(allowed.keys());
    // An ordering is plain immutable data and clients repeat a few `order_by` texts: each is parsed once
    // (splitting it and building its shape cost a LIST more than the rest of its query string).
    const parsedTexts = new LruCache(maxShapes);
    const properties = orderByProperties(allowed, defaultOrder, primaryKey);
    return {
        properties,
        defaultOrdering,
        byPrimaryKey,
        relatedTypes: new Map([...allowed].flatMap(([name, field]) => (field.expression === undefined ? [] : [[name, field.type]]))),
        ordering(query) {
            const text = query.order_by;
            if (typeof text !== 'string')
                return defaultOrdering;
            const known = parsedTexts.get(text);
            if (known !== undefined)
                return known;
            const parsed = parseOrdering(text, allowed, primaryKey);
            if (isProblem(parsed))
                throw new ViewsetErrors.UnsupportedOrdering(describe(parsed), allowedList);
            parsedTexts.set(text, parsed);
            return parsed;
        },
    };
}
/** Checks `orderingFields`: the fields `order_by` may name, each once. */
function allowedFields(orderingFields, fields, related) {
    const allowed = new Map();
    if (orderingFields === undefined)
        return allowed;
    // Relation paths sort on one related value per row: many-to-one only, NULL (no related row) sorting as nulls do.
    const sortable = (name) => {
        if (!name.includes('.') || related === undefined)
            return fields.get(name);
        const path = resolvePath('orderingFields', name, related, true);
        return { ...path.field, name, nullable: true, expression: relatedValue(path, related.table) };
    };
    if (!isList(orderingFields) || orderingFields.length === 0) {
        invalidOption('orderingFields', `expected a non-empty array of fields (${nameList(fields.keys())})`);
    }
    for (const name of orderingFields) {
        const field = typeof name === 'string' ? sortable(name) : undefined;
        if (field === undefined) {
            invalidOption('orderingFields', `${JSON.stringify(name)} is not a sortable column of the schema; scalar columns: ${nameList(fields.keys())}`);
        }
        if (allowed.has(field.name))
            invalidOption('orderingFields', `"${field.name}" is listed twice`);
        allowed.set(field.name, field);
    }
    return allowed;
}
/** Checks `defaultOrder` (any scalar column, and the relation paths of `orderingFields`); else the primary key. */
function plannedDefaultOrder(defaultOrder, fields, allowed, primaryKey) {
    if (defaultOrder === undefined) {
        return { shape: primaryKey, keys: [{ field: primaryKey, descending: false, nullable: false }] };
    }
    if (typeof defaultOrder !== 'string' || defaultOrder === '') {
        invalidOption('defaultOrder', 'expected a string such as "-created_at" or "name,-id"');
    }
    const parsed = parseOrdering(defaultOrder, new Map([...fields, ...allowed]), primaryKey);
    if (isProblem(parsed)) {
        invalidOption('defaultOrder', `${describe(parsed)} is not a sortable column of the schema; scalar columns: ${nameList(fields.keys())}`);
    }
    return parsed;
}
/** The `order_by` parameter, when `orderingFields` allows any field. */
function orderByProperties(allowed, defaultOrder, primaryKey) {
    if (allowed.size === 0)
        return {};
    return {
        order_by: {
            type: 'string',
            minLength: 1,
            // Only the allowed fields, each once: the document allows no value the server refuses.
            pattern: sortKeysPattern([...allowed.keys()]),
            description: `Comma-separated sort keys; a leading \`-\` sorts descending. Allowed fields: ${nameList(allowed.keys())}. ` +
                `Default: ${defaultOrder === undefined ? primaryKey : String(defaultOrder)}. Ties are broken by ${primaryKey}.`,
            examples: [[...allowed.keys()].map((name, index) => (index === 0 ? `-${name}` : name)).join(',')],
        },
    };
}
//# sourceMappingURL=ordering.js.map