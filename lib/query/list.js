import { ViewsetErrors } from '../errors.js';
import { propertiesOf } from '../schema/derive.js';
import { scalarFields } from './field-types.js';
import { planFields } from './fields.js';
import { planFilters } from './filters.js';
import { planOrdering } from './ordering.js';
import { planSearch } from './search.js';
/** The pagination parameters, with their bounds and defaults. */
function paginationSchema({ maxLimit, defaultLimit, maxOffset, pagination, }) {
    const limit = {
        type: 'integer',
        minimum: 1,
        maximum: maxLimit,
        default: defaultLimit,
        description: `Rows per page (1 to ${maxLimit})`,
    };
    if (pagination === 'cursor') {
        return {
            limit,
            // Checked by decodeCursor, not by a pattern: every bad cursor is the one FST_VIEWSET_INVALID_CURSOR.
            cursor: {
                type: 'string',
                minLength: 1,
                description: 'An opaque position, from the `next` or `prev` link of the `Link` header; absent for the first page',
            },
        };
    }
    return {
        limit,
        // The document states the bound; the 400 past it is parsePagination's, which points to cursor pagination
        // (the validator leaves `offset`'s `maximum` to it: schema/validator.ts).
        offset: {
            type: 'integer',
            minimum: 0,
            maximum: maxOffset,
            default: 0,
            description: `Rows to skip (0 to ${maxOffset}; page further with a cursor)`,
        },
    };
}
/**
 * Plans LIST from the checked options: the query string (pagination, `count`, `fields`, and `search`,
 * `order_by` and filters as the options allow) and the plan `parseListQuery` reads. Bad options throw
 * `FST_VIEWSET_INVALID_OPTION` here, at registration. No SQL and no HTTP here: the data layer
 * (resource/resource.ts) runs a parsed query, the routes (routes.ts) set the headers.
 */
export function createListPlan(context) {
    const { dialect, resolved, options, entity, columns } = context;
    const selected = context.selected ?? columns;
    const fields = scalarFields(propertiesOf(entity), columns);
    if (options.alwaysCount !== undefined && typeof options.alwaysCount !== 'boolean') {
        throw new ViewsetErrors.InvalidOption('alwaysCount', 'expected a boolean');
    }
    const alwaysCount = options.alwaysCount === true;
    const search = planSearch(options.searchFields, fields, dialect, resolved.maxSearchLength, context.related);
    const ordering = planOrdering(options.orderingFields, options.defaultOrder, fields, resolved.primaryKey, context.related);
    const selection = context.fieldsPlan ?? planFields(entity, columns, selected);
    const general = {
        ...paginationSchema(resolved),
        count: countSchema(alwaysCount),
        ...selection.properties,
        ...search.properties,
        ...ordering.properties,
    };
    const filters = planFilters(options.filterFields, fields, dialect, Object.keys(general), resolved.maxSearchLength, context.related);
    return {
        querystring: { type: 'object', properties: { ...general, ...filters.properties }, additionalProperties: false },
        headers: listHeaders(resolved.pagination, alwaysCount),
        query: {
            search,
            ordering,
            filters,
            fields: selection,
            alwaysCount,
            maxOffset: resolved.maxOffset,
            pagination: resolved.pagination,
            types: new Map([
                ...[...fields].map(([name, field]) => [name, field.type]),
                ...ordering.relatedTypes,
            ]),
        },
    };
}
/** The `count` parameter: asks for `X-Total-Count`, unless it is always sent. */
function countSchema(alwaysCount) {
    return {
        type: 'boolean',
        description: alwaysCount
            ? 'The `X-Total-Count` header is always sent.'
            : 'When true, the `X-Total-Count` header carries the number of matching rows (one more query).',
    };
}
/** The response headers LIST documents: `Link` to the neighbouring pages and `X-Total-Count`. */
function listHeaders(pagination, alwaysCount) {
    return {
        link: {
            type: 'string',
            description: 'RFC 8288 links to the `next` and `prev` pages, when there are such pages' +
                (pagination === 'cursor' ? ' (with `cursor=`)' : ''),
        },
        'x-total-count': {
            type: 'integer',
            description: alwaysCount ? 'The number of matching rows' : 'The number of matching rows, with `count=true`',
        },
    };
}
//# sourceMappingURL=list.js.map