import { LruCache } from '../execution/lru-cache.js';
import { propertiesOf } from '../schema/derive.js';
import { namesPattern } from '../schema/list-patterns.js';
import { compileSerializer } from '../schema/serializer.js';
import { queryParameterError } from './condition.js';
import { nameList } from './field-types.js';
/** How many field sets keep a compiled serializer; the least recently used one goes first. */
export const maxFieldSets = 64;
/**
 * Plans `?fields=a,b`. The response still goes through a schema serializer (a column outside the schema
 * can never leak): one fast-json-stringify function per field set, without `required`, so that fields left
 * out are simply absent. `relationKeys` maps each relation field to the column its loader reads from the
 * parent rows: a selection reads its chosen columns plus the keys of its chosen relations, nothing else.
 * Without it, `selected` (every column the rows may need) is read whenever the entity has relations.
 */
export function planFields(entity, columns, selected, relationKeys, defaultRelations) {
    const properties = propertiesOf(entity);
    const names = Object.keys(properties);
    const hasRelations = names.some((name) => !columns.includes(name));
    const serializers = new LruCache(maxFieldSets);
    const source = {
        properties,
        columns,
        // Without relation keys, every column the rows may need is read whenever the entity has relations.
        fallback: hasRelations && relationKeys === undefined ? selected : undefined,
        relationKeys,
    };
    return {
        defaultRelations,
        properties: {
            fields: {
                type: 'string',
                minLength: 1,
                // Only the known names: the document allows no value the server refuses.
                pattern: namesPattern(names),
                description: fieldsDescription(names, columns, defaultRelations),
                examples: [names.slice(0, 2).join(',')],
            },
        },
        selection(query) {
            const text = query.fields;
            if (typeof text !== 'string')
                return undefined;
            const asked = new Set(text.split(','));
            for (const name of asked) {
                // Own names only: `constructor` or `__proto__` are not fields, whatever the prototype chain says.
                if (!Object.hasOwn(properties, name)) {
                    throw queryParameterError('fields', `names an unknown field ${JSON.stringify(name)}; allowed: ${nameList(names)}`);
                }
            }
            // Schema order, so that `name,id` and `id,name` share one serializer and one statement.
            const fields = names.filter((name) => asked.has(name));
            const shape = fields.join(',');
            let selection = serializers.get(shape);
            if (selection === undefined) {
                selection = buildSelection(source, fields, shape);
                serializers.set(shape, selection);
            }
            return selection;
        },
    };
}
/** The serializers and columns of one field set, in schema order (`shape` is its cache key). */
function buildSelection(source, fields, shape) {
    const { properties, columns, relationKeys } = source;
    const picked = Object.fromEntries(fields.map((name) => [name, properties[name] ?? {}]));
    const stringify = compileSerializer({ type: 'array', items: { type: 'object', properties: picked } });
    const stringifyRow = compileSerializer({ type: 'object', properties: picked });
    const relations = new Set(fields.filter((name) => !columns.includes(name)));
    const read = fields.filter((name) => columns.includes(name));
    for (const relation of relations) {
        const key = relationKeys?.get(relation);
        if (key !== undefined && !read.includes(key))
            read.push(key);
    }
    return {
        shape,
        columns: source.fallback ?? read,
        relations,
        // An error thrown after the handler (by a relation loader, say) is sent through the same reply.
        serialize: (payload) => (Array.isArray(payload) ? stringify(payload) : JSON.stringify(payload)),
        serializeRow: (payload) => typeof payload === 'object' && payload !== null && !Array.isArray(payload)
            ? stringifyRow(payload)
            : JSON.stringify(payload),
    };
}
/** The `fields` parameter's description: the allowed names and which relations load by default. */
function fieldsDescription(names, columns, defaultRelations) {
    const relationNames = names.filter((name) => !columns.includes(name));
    const loaded = defaultRelations === undefined
        ? 'all of them'
        : defaultRelations.size === 0
            ? 'none'
            : [...defaultRelations].join(', ');
    return `Comma-separated fields to return (default: all). Allowed: ${names.join(', ')}.` +
        (relationNames.length === 0
            ? ''
            : ` Relations: ${relationNames.join(', ')}; only those named are loaded (without \`fields\`: ${loaded}), ` +
                'and one not loaded is absent from the object.');
}
//# sourceMappingURL=fields.js.map