import { faultProblem } from '../errors.js';
/**
 * What an error thrown by a viewset's handler answers: its own code when it is one of ours or a 4xx with a code,
 * the problem of the database fault it is, else `FST_VIEWSET_INTERNAL`. Errors of validation and of the body's
 * parsing come before the handler, never here.
 *
 * @example
 * ```ts
 * answeredProblem(uniqueViolation, dialect.classify, 'POST') // { code: 'FST_VIEWSET_CONFLICT', status: 409, ... }
 * ```
 */
export function answeredProblem(error, classify, method) {
    // Fastify's errors and the drivers' carry a code and a status; anything else is a programming error.
    const { code, statusCode } = (typeof error === 'object' && error !== null ? error : {});
    const status = typeof statusCode === 'number' ? statusCode : 500;
    if (typeof code === 'string' && code.startsWith('FST_VIEWSET_'))
        return { code, status, fault: undefined };
    const fault = classify(error);
    if (fault !== undefined) {
        const answered = faultProblem(fault, method);
        return { code: answered.code, status: answered.statusCode ?? 500, fault: fault.kind };
    }
    if (typeof code === 'string' && status >= 400 && status < 500)
        return { code, status, fault: undefined };
    return { code: 'FST_VIEWSET_INTERNAL', status: 500, fault: undefined };
}
//# sourceMappingURL=problem-code.js.map