import { isList, isRecord } from '../schema/object-schema.js';
const scalarTypes = new Set(['string', 'number', 'integer', 'boolean']);
function isScalarType(type) {
    return scalarTypes.has(type);
}
// Annotations say nothing about which values are valid; a query parameter documents itself.
const annotations = new Set([
    '$id',
    'title',
    'description',
    'default',
    'examples',
    'example',
    'readOnly',
    'writeOnly',
    'deprecated',
]);
function withoutAnnotations(schema) {
    return Object.fromEntries(Object.entries(schema).filter(([key]) => !annotations.has(key)));
}
function typeOf(schema) {
    if (typeof schema.type === 'string')
        return schema.type;
    if (typeof schema.const === 'string')
        return 'string';
    if (typeof schema.const === 'number')
        return 'number';
    if (typeof schema.const === 'boolean')
        return 'boolean';
    return undefined;
}
/**
 * Reads a schema field as one scalar type: `T`, `T | null` (as `anyOf`, `oneOf` or a type array) and unions
 * of literals of one type (TypeBox enums). Anything else (objects, arrays, mixed unions) is `undefined`.
 */
export function scalarField(name, property) {
    const { type } = property;
    if (isList(type)) {
        const types = type.filter((entry) => entry !== 'null');
        const [only] = types;
        if (types.length !== 1 || !isScalarType(only))
            return undefined;
        return {
            name,
            type: only,
            schema: { ...withoutAnnotations(property), type: only },
            nullable: types.length !== type.length,
        };
    }
    const union = property.anyOf ?? property.oneOf;
    if (isList(union)) {
        const branches = union.filter(isRecord).filter((branch) => branch.type !== 'null');
        const types = new Set(branches.map(typeOf));
        const [only] = types;
        if (branches.length === 0 ||
            branches.length + union.filter((branch) => isRecord(branch) && branch.type === 'null').length !== union.length ||
            types.size !== 1 ||
            !isScalarType(only)) {
            return undefined;
        }
        const [single] = branches;
        const constants = branches.map((branch) => branch.const);
        // A union of literals (a TypeBox enum) reads best, in OpenAPI and in errors, as one `enum`.
        const schema = branches.length === 1 && single !== undefined
            ? withoutAnnotations(single)
            : branches.every((branch) => 'const' in branch)
                ? { type: only, enum: constants }
                : { anyOf: branches.map(withoutAnnotations) };
        return { name, type: only, schema, nullable: branches.length !== union.length };
    }
    const only = typeOf(property);
    if (!isScalarType(only))
        return undefined;
    return { name, type: only, schema: withoutAnnotations(property), nullable: false };
}
/** The scalar fields among the columns of an entity, by name. */
export function scalarFields(properties, columns) {
    const fields = new Map();
    for (const name of columns) {
        const property = properties[name];
        const field = property === undefined ? undefined : scalarField(name, property);
        if (field !== undefined)
            fields.set(name, field);
    }
    return fields;
}
/** A list of names for messages: `a, b, c` (or `none`). */
export function nameList(names) {
    const list = [...names];
    return list.length === 0 ? 'none' : list.join(', ');
}
//# sourceMappingURL=field-types.js.map