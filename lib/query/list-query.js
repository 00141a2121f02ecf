import { queryParameterError } from './condition.js';
import { decodeCursor } from './cursor.js';
/** The 400 of an offset past `maxOffset`, which says how to read further. */
function offsetError(maxOffset) {
    return queryParameterError('offset', `must be at most ${maxOffset} (maxOffset): a deeper offset makes the database skip every row before it. ` +
        'To read further, use cursor pagination: order by a unique field and filter past the last row seen ' +
        '(such as ?order_by=id&id__gt=<last id>).');
}
/** The 400 of an `offset` sent to a list that pages by cursor. */
export function offsetWithCursor() {
    return queryParameterError('offset', 'is not accepted: this list pages with cursor. Follow the next and prev links of the Link header (?cursor=...)');
}
/**
 * `limit` and `offset` of a validated query string, with `maxOffset` enforced. Every LIST goes through
 * it, an overridden `list` too. The schema validator has filled in both defaults already.
 */
export function parsePagination(query, maxOffset, pagination = 'offset') {
    const { limit, offset } = query;
    if (typeof limit !== 'number')
        throw queryParameterError('limit', 'must be a number');
    if (pagination === 'cursor') {
        if (offset !== undefined)
            throw offsetWithCursor();
        return { limit, offset: 0 };
    }
    if (typeof offset !== 'number')
        throw queryParameterError('offset', 'must be a number');
    if (offset > maxOffset)
        throw offsetError(maxOffset);
    return { limit, offset };
}
/** Query parameters whose presence leaves the request on the precompiled page statement. */
const pageParameters = new Set(['limit', 'offset']);
/**
 * Parses a validated LIST query string into a {@link ListQuery}. Pure: it reads nothing but its
 * arguments. Everything a client can get wrong (an unknown field, sort key or operator, an offset past
 * `maxOffset`) throws its 400 here, before any SQL.
 *
 * @example
 * ```ts
 * const query = parseListQuery({ limit: 20, offset: 0, name__contains: 'ab' }, plan)
 * // { limit: 20, offset: 0, conditions: [<name LIKE ?>], ordering: <id>, fields: undefined, count: false,
 * //   pageOnly: false }
 * ```
 */
export function parseListQuery(query, plan) {
    const { limit, offset } = parsePagination(query, plan.maxOffset, plan.pagination);
    const count = plan.alwaysCount || query.count === true;
    const { pagination } = plan;
    let pageOnly = plan.ordering.byPrimaryKey && !count && pagination === 'offset';
    if (pageOnly) {
        for (const key in query) {
            if (!pageParameters.has(key)) {
                pageOnly = false;
                break;
            }
        }
    }
    if (pageOnly) {
        return {
            limit,
            offset,
            conditions: [],
            ordering: plan.ordering.defaultOrdering,
            fields: undefined,
            count,
            pageOnly,
            pagination,
            cursor: undefined,
        };
    }
    const conditions = plan.filters.conditions(query);
    const searched = plan.search.condition(query);
    if (searched !== undefined)
        conditions.unshift(searched);
    const ordering = plan.ordering.ordering(query);
    const cursor = pagination === 'cursor' && typeof query.cursor === 'string'
        ? decodeCursor(query.cursor, ordering, plan.types)
        : undefined;
    return {
        limit,
        offset,
        conditions,
        ordering,
        fields: plan.fields.selection(query),
        count,
        pageOnly,
        pagination,
        cursor,
    };
}
//# sourceMappingURL=list-query.js.map