import { invalidOption } from '../errors.js';
import { isList, isObjectSchema, isRecord } from '../schema/object-schema.js';
function name(path, value) {
    if (typeof value !== 'string' || value === '') {
        invalidOption(path, `expected a table or column name, got ${JSON.stringify(value)}`);
    }
    return value;
}
function optionalName(path, value) {
    return value === undefined ? undefined : name(path, value);
}
/** The object schema of a many-to-one field: `Author`, or `Type.Union([Author, Type.Null()])`. */
function singleTarget(path, field, property) {
    if (isObjectSchema(property))
        return property;
    const members = isList(property.anyOf) ? property.anyOf : [];
    const [object, ...others] = members.filter(isObjectSchema);
    const rest = members.filter((member) => !isObjectSchema(member) && !(isRecord(member) && member.type === 'null'));
    if (object !== undefined && others.length === 0 && rest.length === 0)
        return object;
    return invalidOption(path, `schema field "${field}" must be an object, or a union of an object and null ` +
        '(Type.Union([Author, Type.Null()])), to hold a many-to-one relation');
}
/** The item schema of a to-many field: `Type.Array(Tag)`. */
function manyTarget(path, field, property) {
    if (property.type === 'array' && isObjectSchema(property.items))
        return property.items;
    return invalidOption(path, `schema field "${field}" must be an array of objects (Type.Array(Tag)) to hold a to-many relation`);
}
/** A `rulesFrom`: a viewset's full prefix, or an object with a `scope` method (a viewset, or a declared rule). */
function rulesFromOf(path, value) {
    if (value === undefined)
        return undefined;
    if (typeof value === 'string' && value !== '')
        return value;
    if (typeof value === 'object' && value !== null && 'scope' in value && typeof value.scope === 'function') {
        // checked just above: an object whose scope is a function, called as a RelationRule's
        return value;
    }
    return invalidOption(path, 'expected a viewset, its prefix (such as "/projects"), or { scope: (eb, context) => … }');
}
/** Children per parent when a to-many relation sets no `limit`. */
export const defaultRelationLimit = 100;
/** A to-many relation's `limit`: a positive integer, `false` for no limit (`undefined`), 100 by default. */
function childLimit(path, value) {
    if (value === undefined)
        return defaultRelationLimit;
    if (value === false)
        return undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
        invalidOption(path, `expected a positive integer, or false for no limit, got ${JSON.stringify(value)}`);
    }
    return value;
}
/** Reads `'-created_at'`, `'name,-id'` or `['name', '-id']` as trimmed sort keys. */
function orderKeys(path, value) {
    if (value === undefined)
        return undefined;
    const parts = typeof value === 'string'
        ? value.split(',')
        : Array.isArray(value) ? value : invalidOption(path, 'expected a string such as "-created_at" or an array of them');
    const keys = parts.map((part) => {
        const text = typeof part === 'string'
            ? part.trim()
            : invalidOption(path, `expected field names, got ${JSON.stringify(part)}`);
        name(path, text.startsWith('-') ? text.slice(1) : text);
        return text;
    });
    if (keys.length === 0)
        invalidOption(path, 'expected at least one field');
    return keys;
}
function relationsOf(path, value) {
    if (value === undefined)
        return [];
    if (!isRecord(value))
        invalidOption(path, 'expected an object keyed by schema field');
    return Object.entries(value).map(([field, spec]) => {
        if (!isRecord(spec))
            invalidOption(`${path}.${field}`, 'expected an object such as { table, foreignKey }');
        return [field, spec];
    });
}
/**
 * A relatedConfig value as the declaration reads it: an object is taken as a config, and its shape is then
 * checked key by key (declaredRelations); anything else is refused there, as `relatedConfig` of its path.
 */
function isRelatedConfig(value) {
    return isRecord(value);
}
function relatedConfigOf(value) {
    return isRelatedConfig(value) ? value : undefined;
}
/** The relatedConfig attached to a schema (`Type.Object({...}, { relatedConfig })`), if any. */
export function attachedConfig(schema) {
    return 'relatedConfig' in schema ? relatedConfigOf(schema.relatedConfig) : undefined;
}
/**
 * Checks the shape of a relation config against the schema it loads into: every field is a relation-shaped
 * field of the schema, declared once, with the options its kind needs. The catalog is checked later, and
 * unknown keys earlier (at construction, by `resolveOptions`).
 */
export function declaredRelations(config, schema, path = 'relatedConfig') {
    if (!isRecord(config))
        invalidOption(path, 'expected an object with selectRelated and/or prefetchRelated');
    const properties = schema.properties;
    const fieldSchema = (where, field) => {
        const property = Object.hasOwn(properties, field) ? properties[field] : undefined;
        if (property === undefined) {
            invalidOption(where, `"${field}" is not a field of the schema (fields: ${Object.keys(properties).join(', ')}); ` +
                'add it to the schema');
        }
        return property;
    };
    const declared = [];
    const selectPath = `${path}.selectRelated`;
    for (const [field, spec] of relationsOf(selectPath, config.selectRelated)) {
        const where = `${selectPath}.${field}`;
        const target = singleTarget(where, field, fieldSchema(where, field));
        declared.push({
            path: where,
            field,
            kind: 'many-to-one',
            table: name(`${where}.table`, spec.table),
            foreignKey: name(`${where}.foreignKey`, spec.foreignKey),
            through: undefined,
            references: optionalName(`${where}.references`, spec.references),
            orderBy: undefined,
            limit: undefined,
            target,
            relatedConfig: relatedConfigOf(spec.relatedConfig) ?? attachedConfig(target),
            rulesFrom: rulesFromOf(`${where}.rulesFrom`, spec.rulesFrom),
        });
    }
    const prefetchPath = `${path}.prefetchRelated`;
    for (const [field, spec] of relationsOf(prefetchPath, config.prefetchRelated)) {
        const where = `${prefetchPath}.${field}`;
        if (declared.some((relation) => relation.field === field)) {
            invalidOption(where, `"${field}" is declared in both selectRelated and prefetchRelated; declare it once`);
        }
        const target = manyTarget(where, field, fieldSchema(where, field));
        if ((spec.foreignKey === undefined) === (spec.through === undefined)) {
            invalidOption(where, 'give either foreignKey (one-to-many) or through (many-to-many), not both and not neither');
        }
        let through;
        if (spec.through !== undefined) {
            const value = spec.through;
            if (!isRecord(value))
                invalidOption(`${where}.through`, 'expected { table, sourceKey, targetKey }');
            through = {
                table: name(`${where}.through.table`, value.table),
                sourceKey: name(`${where}.through.sourceKey`, value.sourceKey),
                targetKey: name(`${where}.through.targetKey`, value.targetKey),
            };
        }
        declared.push({
            path: where,
            field,
            kind: through === undefined ? 'one-to-many' : 'many-to-many',
            table: name(`${where}.table`, spec.table),
            foreignKey: optionalName(`${where}.foreignKey`, spec.foreignKey),
            through,
            references: optionalName(`${where}.references`, spec.references),
            orderBy: orderKeys(`${where}.orderBy`, spec.orderBy),
            limit: childLimit(`${where}.limit`, spec.limit),
            target,
            relatedConfig: relatedConfigOf(spec.relatedConfig) ?? attachedConfig(target),
            rulesFrom: rulesFromOf(`${where}.rulesFrom`, spec.rulesFrom),
        });
    }
    return declared;
}
//# sourceMappingURL=declaration.js.map