/**
 * The fields of `values` in sorted order with their values.
 *
 * @example
 * ```ts
 * // { fields: ['name', 'price'], shape: '["name","price"]', parameters: ['Bread', 2] }
 * sentFields({ price: 2, name: 'Bread' })
 * ```
 */
export function sentFields(values) {
    const fields = Object.keys(values).sort();
    return { fields, shape: JSON.stringify(fields), parameters: fields.map((field) => values[field]) };
}
/** `values` with its keys in the order of `fields`: the columns of the compiled statement, in that order. */
export function inFieldOrder(fields, values) {
    const ordered = {};
    for (const field of fields)
        ordered[field] = values[field];
    return ordered;
}
/** A scope's part of a statement's shape, and the values it binds after the key's. */
export function scopeShape(scope) {
    return scope === undefined ? '' : scope.shape;
}
/** The key, then the scope's values: the order in which `WHERE key = ? AND scope` binds them. */
export function keyAndScope(id, scope) {
    return scope === undefined ? [id] : [id, ...scope.parameters];
}
//# sourceMappingURL=write-shapes.js.map