// What a LIST statement's cache key and parameters are made of: its WHERE terms' shapes and values, in order.
// Plain loops, not `flatMap` and `map().join()`: they run on every filtered LIST, and the array methods'
// intermediate arrays were a measurable part of its CPU per request next to a short SQLite read.
/** The shape of WHERE terms: their shapes joined by `&`. */
export function shapeOf(conditions) {
    let shape = '';
    let first = true;
    for (const condition of conditions) {
        shape = first ? condition.shape : `${shape}&${condition.shape}`;
        first = false;
    }
    return shape;
}
/** The values the conditions bind, in order. */
export function parametersOf(conditions) {
    const parameters = [];
    for (const condition of conditions)
        for (const value of condition.parameters)
            parameters.push(value);
    return parameters;
}
//# sourceMappingURL=condition-shape.js.map