import { ViewsetErrors } from '../errors.js';
/** An expression over an operation node that is already built. */
export function expressionOf(node) {
    return {
        get expressionType() { return undefined; },
        toOperationNode: () => node,
    };
}
/**
 * A 400 about one query parameter, in the same shape as a schema validation failure: the problem
 * handler lists it under `errors` with the parameter's name.
 */
export function queryParameterError(parameter, message) {
    return Object.assign(new ViewsetErrors.Validation(`The request is not valid: ${parameter} ${message}`), {
        validation: [{ instancePath: `/${parameter}`, keyword: 'query', message, params: {} }],
        validationContext: 'querystring',
    });
}
/**
 * A substring to match. SQLite's LIKE stops at a NUL character (so `\0` would match every row) and
 * PostgreSQL refuses it: it is a 400 on every dialect.
 */
export function checkedTerm(parameter, term) {
    if (term.includes('\u0000'))
        throw queryParameterError(parameter, 'must not contain the NUL character');
    return term;
}
//# sourceMappingURL=condition.js.map