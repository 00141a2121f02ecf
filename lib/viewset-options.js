/** The logical methods of a viewset, in the order their routes are added. `BULK` is `POST {prefix}/bulk`. */
export const viewsetMethods = ['LIST', 'GET', 'POST', 'BULK', 'PUT', 'PATCH', 'DELETE'];
/** The methods registered when `methods` is not given: all but `BULK`, which writes many rows per request. */
export const defaultMethods = viewsetMethods.filter((method) => method !== 'BULK');
/** Filter operators of `filterFields`. `eq` is also the bare `?field=value`. */
export const filterOperators = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'contains', 'isnull'];
/**
 * The base of every derived method: a derived method is protected whenever its base is (`protectedMethods`),
 * `authorize` sees the derived name, and its row rule is its own AND its base's. Today only BULK exists; the
 * others are the names later methods take.
 *
 * @example
 * ```ts
 * baseMethods.BULK // 'POST'
 * ```
 */
export const baseMethods = Object.freeze({
    BULK: 'POST',
    PATCH_MANY: 'PATCH',
    BULK_PATCH: 'PATCH',
    DELETE_MANY: 'DELETE',
    PURGE: 'DELETE',
    RESTORE: 'PATCH',
    HISTORY: 'GET',
    AGGREGATE: 'LIST',
});
//# sourceMappingURL=viewset-options.js.map