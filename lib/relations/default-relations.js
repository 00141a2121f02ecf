import { invalidOption } from '../errors.js';
import { isList } from '../schema/object-schema.js';
import { nameList } from '../query/field-types.js';
/**
 * Checks the `defaultRelations` option: the relation fields loaded when a request names no `?fields=` (on
 * LIST, GET and the responses of POST, PUT and PATCH). `undefined` (the default) loads every relation; `[]`
 * none. A relation left out is absent from the object, so the schema must not require it.
 *
 * @example
 * ```ts
 * // Set { 'author' }: tags load only with ?fields=...,tags
 * checkDefaultRelations(['author'], new Set(['author', 'tags']), entity)
 * ```
 */
export function checkDefaultRelations(option, relations, entity) {
    if (option === undefined)
        return undefined;
    if (!isList(option)) {
        invalidOption('defaultRelations', `expected an array of relation fields (${nameList(relations)}), [] for none`);
    }
    const chosen = new Set();
    for (const name of option) {
        if (typeof name !== 'string' || !relations.has(name)) {
            invalidOption('defaultRelations', `${JSON.stringify(name)} is not a relation field of relatedConfig; relations: ${nameList(relations)}`);
        }
        if (chosen.has(name))
            invalidOption('defaultRelations', `"${name}" is listed twice`);
        chosen.add(name);
    }
    const required = isList(entity.required) ? entity.required : [];
    for (const name of relations) {
        if (!chosen.has(name) && required.includes(name)) {
            invalidOption('defaultRelations', `"${name}" is left out, so it is absent from responses, but the schema requires it: make it Type.Optional`);
        }
    }
    return chosen;
}
//# sourceMappingURL=default-relations.js.map