/** The overridable handlers of a viewset, by name. */
const overridableHandlers = [
    'list',
    'getElement',
    'createElement',
    'createElements',
    'updateElement',
    'deleteElement',
];
/**
 * The handlers and hooks `viewset` overrides (its members that are not `base`'s); `scope` and `beforeWrite`
 * also when given as options.
 *
 * @example
 * ```ts
 * overriddenMembers(this, Viewset.prototype, this.options) // Set { 'list', 'scope' }
 * ```
 */
export function overriddenMembers(viewset, base, options) {
    const overridden = new Set(overridableHandlers.filter((name) => viewset[name] !== base[name]));
    if (viewset.scope !== base.scope || options.scope !== undefined)
        overridden.add('scope');
    if (viewset.beforeWrite !== base.beforeWrite || options.beforeWrite !== undefined)
        overridden.add('beforeWrite');
    return overridden;
}
/**
 * What the routes call: the default handler of each method, or the viewset's override of it. An override
 * is awaited (it may answer at once, or nothing): the route then always gets a promise from it.
 */
export function overrideHandlers(defaults, viewset) {
    const { overridden, handlers } = viewset;
    const own = (name) => overridden.has(name);
    return {
        list: own('list')
            ? async (request, reply, token) => ({ rows: await handlers.list(request, reply, token) })
            : (request, _reply, token) => defaults.list(request, token),
        getElement: own('getElement')
            ? async (request, reply, token) => await handlers.getElement(request, reply, token)
            : (request, _reply, token, selection) => defaults.getElement(request, token, selection),
        createElement: own('createElement')
            ? async (request, reply, token) => await handlers.createElement(request, reply, token)
            : (request, reply, token) => defaults.createElement(request, reply, token),
        createElements: own('createElements')
            ? async (request, reply, token) => await handlers.createElements(request, reply, token)
            : async (request, reply, token) => await defaults.createElements(request, reply, token),
        updateElement: own('updateElement')
            ? async (request, reply, token, partial) => await handlers.updateElement(request, reply, token, partial)
            : (request, _reply, token, partial, precondition) => defaults.updateElement(request, token, partial, precondition),
        deleteElement: own('deleteElement')
            ? async (request, reply, token) => await handlers.deleteElement(request, reply, token)
            : (request, _reply, token, precondition) => defaults.deleteElement(request, token, precondition),
    };
}
//# sourceMappingURL=override-handlers.js.map